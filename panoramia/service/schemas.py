"""Request and response bodies of the HTTP API (pydantic): what FastAPI validates and documents.

Malformed bodies are answered 422 with the offending field in ``detail[].loc``.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from panoramia.plugins import MODALITIES, data_sources
from panoramia.report.schema import ReportDocument

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
MAX_NAME_CHARS = 100
"""The most characters a model name or version has (the store's columns hold 100)."""
Name = Annotated[str, Field(pattern=NAME_PATTERN, min_length=1, max_length=MAX_NAME_CHARS)]
"""Model names and versions: letters, digits, ``.``, ``_``, ``-`` (safe in paths and configs)."""
RelativePath = Annotated[str, Field(min_length=1, max_length=500)]
Column = Annotated[str, Field(min_length=1, max_length=200)]
IDENTIFIER_PATTERN = r"^[0-9a-fA-F-]{1,36}$"
Identifier = Annotated[str, Field(pattern=IDENTIFIER_PATTERN)]
"""Audit and report ids (UUIDs): anything else cannot name a stored object."""


MAX_DEPTH = 32
"""Deepest nesting of lists and objects accepted in a request body."""
INTERPOLATION = "${"


def check_body(value: object, *, no_interpolation: bool = False) -> None:
    """Reject what a store or a config cannot hold safely, naming where it is (ValueError).

    Walks ``value`` iteratively (no recursion, whatever the depth): no nesting deeper than
    :data:`MAX_DEPTH`; no NUL character (PostgreSQL's text and JSONB cannot store it); no lone
    surrogate (not UTF-8); no NaN or infinity (not JSON); no integer beyond 64 bits (past
    float range it would overflow the claim's arithmetic); and, with ``no_interpolation``, no
    ``${`` (an OmegaConf interpolation: a contributor's text must never be resolved).
    """
    pending: list[tuple[object, str, int]] = [(value, "body", 0)]
    while pending:
        item, where, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            _check_text(item, where, no_interpolation)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{where}: NaN and infinity are not JSON numbers")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2**63:
            raise ValueError(f"{where}: integers are at most 64-bit (|n| < 2^63)")
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_text(str(key), where, no_interpolation)
                pending.append((child, f"{where}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            pending += [(child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item)]


def _check_text(text: str, where: str, no_interpolation: bool) -> None:
    if "\x00" in text:
        raise ValueError(f"{where}: NUL characters are not accepted")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where}: lone surrogates are not text") from None
    if no_interpolation and INTERPOLATION in text:
        raise ValueError(f"{where}: '${{' is not accepted (configs never resolve your text)")


class CleanBody(BaseModel):
    """Base of request bodies: see :func:`check_body`."""

    _no_interpolation: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: object) -> object:
        check_body(data, no_interpolation=cls._no_interpolation)
        return data


MAX_DECLARED_CHARS = 16_384
"""The most a model's free-form ``declared`` metadata may hold, as JSON text (SECURITY.md)."""


class ModelRef(BaseModel):
    """The audited model. ``declared`` (free-form metadata) and ``claim`` (its declared privacy
    guarantee, checked: ``{"kind": "dpsgd" | "eps_delta" | "none", ...}`` as in
    ``panoramia.accounting.claims``) are kept from first mention."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    version: Name = "1"
    declared: dict = Field(default_factory=dict)
    claim: dict | None = None

    @field_validator("declared")
    @classmethod
    def _small_declared(cls, declared: dict) -> dict:
        size = len(json.dumps(declared, ensure_ascii=False))
        if size > MAX_DECLARED_CHARS:
            raise ValueError(f"{size} characters as JSON; at most {MAX_DECLARED_CHARS}")
        return declared

    @field_validator("claim")
    @classmethod
    def _valid_claim(cls, claim: dict | None) -> dict | None:
        if claim is None:
            return None
        from panoramia.accounting.claims import claim_from_dict
        from panoramia.errors import InputError

        try:
            return claim_from_dict(claim).to_dict()
        except InputError as error:
            raise ValueError(str(error)) from None


PATH_TARGETS = frozenset(entry.path_target for entry in MODALITIES.values())
"""The target configs for a model directory (``TargetRef.path``), one per modality."""


class TargetRef(BaseModel):
    """How the worker reaches the model: a demo target config, or a directory with target.json.

    ``path`` is relative to the service's models folder (``$PANORAMIA_HOME/models``).
    """

    model_config = ConfigDict(extra="forbid")
    config: Name | None = Field(None, description="A conf/target config, e.g. mlp_overfit.")
    path: RelativePath | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> TargetRef:
        if (self.config is None) == (self.path is None):
            raise ValueError("give exactly one of config or path")
        if self.config in PATH_TARGETS:
            raise ValueError(f"config {self.config!r} needs a path: give path instead")
        return self


DATA_MODALITY: dict[str, str] = data_sources()
"""Each data source and the audit (modality) it belongs to."""
ModalityName = Literal[tuple(MODALITIES)]  # type: ignore[valid-type]
"""A registered modality's name."""
FILE_SOURCES = tuple(s for entry in MODALITIES.values() for s in entry.file_data_sources)
"""Sources read from the contributor's own files (``members`` required)."""
DataSource = Literal[tuple(DATA_MODALITY)]  # type: ignore[valid-type]
"""A registered ``data`` option (the request's ``data.source``)."""


class DataRef(BaseModel):
    """The contributor's known members: embedded data or its own files; the source picks the
    audit: ``adult``/``csv`` tabular, ``mnist``/``digits``/``images`` image,
    ``python_docs``/``text_files`` text.

    File names are relative to the contributor's data folder (``$PANORAMIA_HOME/data/<name>``):
    a CSV/Parquet table (``csv``, with ``label``); an ``.npz``, a folder of class folders or a
    CIFAR-10 batch directory (``images``); a ``.txt``/``.jsonl`` file or a folder of them
    (``text_files``).
    """

    model_config = ConfigDict(extra="forbid")
    source: DataSource = "adult"  # type: ignore[valid-type]
    members: RelativePath | None = None
    nonmembers: RelativePath | None = None
    label: Column | None = None
    categorical: list[Column] = Field(default_factory=list, max_length=1000)
    continuous: list[Column] = Field(default_factory=list, max_length=1000)
    slices: list[Column] = Field(
        default_factory=list,
        max_length=8,
        description="Columns of source 'csv' whose values are groups tested against chance "
        "(audit.slices).",
    )

    @property
    def modality(self) -> str:
        return DATA_MODALITY[self.source]

    @model_validator(mode="after")
    def _files_match_the_source(self) -> DataRef:
        if self.source in FILE_SOURCES and self.members is None:
            raise ValueError(f"source {self.source!r} needs members")
        if self.source not in FILE_SOURCES and (self.members or self.nonmembers):
            raise ValueError(f"source {self.source!r} takes no files")
        if self.source == "csv" and self.label is None:
            raise ValueError("source 'csv' needs label")
        if self.source != "csv" and (
            self.label or self.categorical or self.continuous or self.slices
        ):
            raise ValueError(
                "label, categorical, continuous and slices are columns of source 'csv'"
            )
        return self


class AuditRequest(CleanBody):
    """``POST /v1/audits``: what to audit, on which data, with which config overrides.

    No string anywhere in it may contain ``${``: its text reaches the audit's config."""

    _no_interpolation: ClassVar[bool] = True

    model_config = ConfigDict(extra="forbid")
    model: ModelRef
    target: TargetRef
    data: DataRef = Field(default_factory=DataRef)
    overrides: list[Annotated[str, Field(max_length=500)]] = Field(
        default_factory=list,
        max_length=100,
        description="Hydra overrides of seed, split, generator, helper, distinguisher, audit, "
        "target (not its path).",
    )
    control: TargetRef | None = Field(
        None,
        description="A model of her own that never saw these members (trained like the "
        "target on other rows), audited at the same seeds: the group then also gives the "
        "paired difference of the quoted ε̃ (target − control). Needs repeats of 2 or more.",
    )
    repeats: int = Field(
        1,
        ge=1,
        le=10,
        description="Audits to run at seeds s, s+1, … (s: the overrides' seed, else 0), pooled "
        "into one verdict (docs/SPEC.md §3.2); more than 1 makes a group: GET /v1/repeats/{id}.",
    )

    @model_validator(mode="after")
    def _control_needs_repeats(self) -> AuditRequest:
        if self.control is not None and self.repeats < 2:
            raise ValueError("a control is compared over repeats: give repeats of 2 or more")
        return self


class AuditView(BaseModel):
    id: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    model: ModelRef
    request: dict
    progress: dict
    error: str | None
    attempts: int
    cancel_requested: bool
    timings: dict
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    report_id: str | None
    repeat_group: str | None = Field(
        None, description="The group of repeats this audit is one of (GET /v1/repeats/{id})."
    )


class RepeatRun(BaseModel):
    """One audit of a group of repeats: its status, seed, report and verdict's level."""

    audit_id: str
    status: str
    role: Literal["target", "control"] = "target"
    seed: int | None
    report_id: str | None
    level: str | None


class RepeatView(BaseModel):
    """A group of repeats (docs/SPEC.md §3.2): its audits and, once all have ended, the pooled
    verdict (``runs``, ``called``, ``p_value``, ``false_alarm_rate``, ``detected``, ``level``,
    ``headline``, ``quote``, ``sentence``)."""

    id: str
    model: ModelRef
    runs: list[RepeatRun]
    ended: int
    pooled: dict | None
    paired: dict | None = Field(
        None,
        description="With a control: the quoted ε̃'s paired difference, target − control, "
        "over the seeds both ended ({game, mean, interval, n}).",
    )


class ModelDeleted(BaseModel):
    """What ``DELETE /v1/models/{name}`` removed."""

    name: str
    versions: list[str]
    reports: int
    audits: int
    message: str


class UploadedReportDocument(ReportDocument):
    """A report posted to the service: :class:`~panoramia.report.schema.ReportDocument` of a
    modality the registry knows."""

    modality: ModalityName  # type: ignore[valid-type]


class ReportUpload(CleanBody):
    """``POST /v1/reports``: a report made by a CLI run (``report.json`` + ``report.html``)."""

    model_config = ConfigDict(extra="forbid")
    model: ModelRef
    report: UploadedReportDocument
    html: str | None = None
    artifact_location: Annotated[str, Field(max_length=2000)] | None = None


class QuotedFigure(BaseModel):
    """The verdict's figure: ε̃ (nats) of one game, with this run's interval where the report
    has an in-audit null (schema 1.4)."""

    value: float
    game: str
    interval: list[float] | None = None


class ReportSummary(BaseModel):
    id: str
    model: str
    version: str
    modality: str
    level: str | None = Field(None, description="The verdict's level (docs/SPEC.md §3.1).")
    headline: str | None = None
    quoted: QuotedFigure | None = None
    p_value: float | None = None
    c_lb: float = Field(description="The paper's one-sided game.")
    c_plus_eps_lb: float = Field(description="The paper's one-sided game.")
    eps_tilde: float = Field(description="The paper's one-sided game.")
    created_at: datetime
    audit_id: str | None


class ReportView(ReportSummary):
    artifact_location: str | None
    """Where the run's files are: an audit's, ``audits/<audit id>`` under the service's home
    (the operator's to open); an uploaded report's, what its uploader wrote."""
    declared: dict
    claim: dict | None
    document: dict


class ModelView(BaseModel):
    name: str
    version: str
    owner: str | None = Field(description="The contributor who named it (admins see all).")
    declared: dict
    claim: dict | None
    reports: int
    latest_report_at: datetime | None


class UsageView(BaseModel):
    database_bytes: int = Field(
        description="Characters of your reports, pages, audits' "
        "requests and errors, and models' declared metadata."
    )
    file_bytes: int = Field(description="Bytes of your audits' run folders and stage store.")
    quota_bytes: int = Field(description="PANORAMIA_MAX_STORAGE_MB: past it, 507.")
    queued_cost: float = Field(
        description="Estimated multiply-adds of your queued and running audits."
    )
    cost_budget: float = Field(description="PANORAMIA_MAX_AUDIT_COST: the most they may add up to.")


class Health(BaseModel):
    status: Literal["ok"]
    database: Literal["ok"]
    queue: str
    schema_revision: str | None


SHA256_PATTERN = r"^[0-9a-fA-F]{64}$"


class UploadCreate(CleanBody):
    """``POST /v1/uploads``: what is about to be sent. ``name`` is what an audit names it by
    (``--members NAME``, ``--target-path NAME``); ``filename``'s suffix tells its format."""

    _no_interpolation: ClassVar[bool] = True

    model_config = ConfigDict(extra="forbid")
    name: Name
    kind: Literal["data", "model"] = "data"
    filename: Annotated[str, Field(min_length=1, max_length=200)]
    size: Annotated[int, Field(ge=1, le=2**50)]
    sha256: Annotated[str, Field(pattern=SHA256_PATTERN)]


class UploadView(BaseModel):
    id: str
    name: str
    kind: str
    filename: str
    size: int
    received: int
    state: Literal["receiving", "checking", "ready", "deleting"]
    sha256: str
    summary: dict
    created_at: datetime
    completed_at: datetime | None
