"""Request and response bodies of the HTTP API (pydantic): what FastAPI validates and documents.

Malformed bodies are answered 422 with the offending field in ``detail[].loc``.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from panoramia.plugins import MODALITIES, data_sources
from panoramia.report.page_parts import MAX_CHARTS, ChartPart, PageParts
from panoramia.report.schema import ReportDocument
from panoramia.service.claim_schema import check_claim_numbers, claim_schema
from panoramia.service.rfc3339 import DateTimeText
from panoramia.service.upload_formats import DATA_SUFFIXES, MODEL_SUFFIXES

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


def _json_number(value: object) -> object:
    """A JSON number as it came (pydantic alone reads the text ``"5"`` and ``true`` as
    numbers, which the document's ``number`` and ``integer`` are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a JSON number")
    return value


Whole = Annotated[int, BeforeValidator(_json_number)]
"""An integer given as a JSON number (``5`` or ``5.0``)."""
Real = Annotated[float, BeforeValidator(_json_number)]
"""A number given as a JSON number."""


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
    declared: dict = Field(
        default_factory=dict,
        description=f"Free-form metadata: at most {MAX_DECLARED_CHARS} characters as JSON.",
    )
    claim: Annotated[
        dict | None, WithJsonSchema({"anyOf": [claim_schema(audited=False), {"type": "null"}]})
    ] = None

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

        check_claim_numbers(claim)
        from panoramia.errors import InputError

        try:
            return claim_from_dict(claim).to_dict()
        except InputError as error:
            raise ValueError(str(error)) from None


class AuditedModelRef(ModelRef):
    """The audited model of ``POST /v1/audits``: its claim is accounted for before the audit
    is queued (one DP-SGD phase, σ and the steps within what is accounted)."""

    claim: Annotated[
        dict | None, WithJsonSchema({"anyOf": [claim_schema(audited=True), {"type": "null"}]})
    ] = None


PATH_TARGETS = frozenset(entry.path_target for entry in MODALITIES.values())
"""The target configs for a model directory (``TargetRef.path``), one per modality."""


def _demo_configs(schema: dict) -> None:
    """``TargetRef.config``'s text: one of the demo target configs (listed when the schema is
    made: they are files of a plug-in's ``conf/target/``)."""
    from panoramia.service.target_configs import target_configs

    schema["enum"] = sorted({name for entry in MODALITIES for name in target_configs(entry)})


TargetConfig = Annotated[
    str,
    Field(pattern=NAME_PATTERN, min_length=1, max_length=MAX_NAME_CHARS,
          json_schema_extra=_demo_configs),
]  # fmt: skip


class TargetRef(BaseModel):
    """How the worker reaches the model: a demo target config, or a directory with target.json.

    ``path`` is relative to the service's models folder (``$PANORAMIA_HOME/models``).
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [  # what _exactly_one checks: one of the two is text, the other not
                {"required": ["config"], "properties": {"config": {"type": "string"}}},
                {"required": ["path"], "properties": {"path": {"type": "string"}}},
            ]
        },
    )
    config: TargetConfig | None = Field(
        None,
        description="A demo target config of a plug-in's conf/target (e.g. mlp_overfit), of "
        "the same audit as the data (request's anyOf). Give exactly one of config and path.",
    )
    path: RelativePath | None = Field(
        None,
        description="A model upload of yours (its name or id), or a model folder the operator "
        "placed under the service's models folder; 404 where it names none of them.",
    )

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
COLUMNS = ("label", "categorical", "continuous", "slices")
"""The fields of :class:`DataRef` that name a table's columns (source ``csv`` only)."""


def _data_rules() -> dict:
    """What :meth:`DataRef._files_match_the_source` checks, as JSON Schema: a source read
    from her files needs ``members`` (``csv`` also ``label``); an embedded one takes no files;
    only ``csv`` names columns. An absent ``source`` is ``adult`` (embedded)."""
    none = {"type": "null"}
    no_columns = {"label": none, "categorical": {"maxItems": 0}, "continuous": {"maxItems": 0},
                  "slices": {"maxItems": 0}}  # fmt: skip
    text = {"type": "string"}
    embedded = [source for source in DATA_MODALITY if source not in FILE_SOURCES]
    files = [source for source in FILE_SOURCES if source != "csv"]
    return {"anyOf": [
        {"properties": {"source": {"enum": embedded}, "members": none, "nonmembers": none,
                        **no_columns}},
        {"required": ["source", "members"],
         "properties": {"source": {"enum": files}, "members": text, **no_columns}},
        {"required": ["source", "members", "label"],
         "properties": {"source": {"const": "csv"}, "members": text, "label": text}},
    ]}  # fmt: skip


class DataRef(BaseModel):
    """The contributor's known members: embedded data or its own files; the source picks the
    audit: ``adult``/``csv`` tabular, ``mnist``/``digits``/``images`` image,
    ``python_docs``/``text_files`` text.

    File names are relative to the contributor's data folder (``$PANORAMIA_HOME/data/<name>``):
    a CSV/Parquet table (``csv``, with ``label``); an ``.npz``, a folder of class folders or a
    CIFAR-10 batch directory (``images``); a ``.txt``/``.jsonl`` file or a folder of them
    (``text_files``).
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_data_rules())
    source: DataSource = "adult"  # type: ignore[valid-type]
    members: RelativePath | None = Field(
        default=None,
        description="A data upload of yours (its name, id or file name), or a file the "
        "operator placed in your data folder; 404 where it names none of them.",
    )
    nonmembers: RelativePath | None = Field(
        default=None, description="Held-out rows of the same population, named as members are."
    )
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


OVERRIDE_FORMAT = "panoramia-override"
"""The format of an audit request's override: a Hydra ``key=value`` the door composes."""
OVERRIDE_KEY = (
    r"(seed|data\.(max_members|pool_size|pool_chunks)|generator|helper|distinguisher|audit"
    r"|(data\.split|generator|helper|distinguisher|audit|target)\.[A-Za-z0-9_.]+)"
)
"""The keys a contributor may set, as a regular expression: ``KEYS``, ``GROUPS`` and
``KEY_PREFIXES`` of :mod:`panoramia.service.submission.command` (which imports this module;
``tests/service/test_api_contract.py`` checks that the two agree)."""
Override = Annotated[
    str,
    Field(
        max_length=500,
        json_schema_extra={
            "format": OVERRIDE_FORMAT,
            "pattern": f"^(?![\\s\\S]*\\$\\{{){OVERRIDE_KEY}=[^\\x00]*$",
        },
    ),
]
"""One override: its key is one a contributor may set (the rest is the door's to check)."""
CONTROL_SUFFIX = "-control"
"""What a control's version adds to the target's: its runs are kept as a model of their own."""


def _audit_rules(schema: dict) -> None:
    """What the door checks across a request's fields, as JSON Schema: a demo target config
    (the target's and the control's) of the data source's audit, and a control only with
    ``repeats`` of 2 or more and a version that leaves room for :data:`CONTROL_SUFFIX`."""
    from panoramia.service.target_configs import target_configs

    by_audit = []
    for name in MODALITIES:
        sources = [source for source, audit in DATA_MODALITY.items() if audit == name]
        configs = {"properties": {"config": {"enum": [*target_configs(name), None]}}}
        data: dict = {"properties": {"source": {"enum": sources}}}
        if "adult" not in sources:  # an absent data or source is adult's
            data["required"] = ["source"]
        branch: dict = {"properties": {"data": data, "target": configs, "control": configs}}
        if "adult" not in sources:
            branch["required"] = ["data"]
        by_audit.append(branch)
    longest = MAX_NAME_CHARS - len(CONTROL_SUFFIX)
    control = [
        {"properties": {"control": {"type": "null"}}},
        {"required": ["control", "repeats"],
         "properties": {"control": {"not": {"type": "null"}}, "repeats": {"minimum": 2},
                        "model": {"properties": {"version": {"maxLength": longest}}}}},
    ]  # fmt: skip
    absent = {"type": "null"}
    shared = [
        {"required": ["model", "target"],
         "properties": {"shared": absent, "model": {"not": absent},
                        "target": {"not": absent}}},
        {"required": ["shared"],
         "properties": {"model": absent, "target": absent, "control": absent,
                        "shared": {"not": absent}}},
    ]  # fmt: skip
    schema["allOf"] = [{"anyOf": by_audit}, {"anyOf": control}, {"anyOf": shared}]


OWNER_PATTERN = r"^(?![\s\S]*\$\{)[^/\\\x00-\x1f\x7f]+$"


def is_name(value: str) -> bool:
    """Whether ``value`` is a model name or version (:data:`Name`'s rule)."""
    return len(value) <= MAX_NAME_CHARS and re.fullmatch(NAME_PATTERN, value) is not None


def is_owner_name(value: str) -> bool:
    """Whether ``value`` is a contributor's name as another names her (:data:`OwnerName`'s
    rule, :data:`OWNER_PATTERN`: 1 to 120 characters, no ``/``, ``\\``, control character or
    ``${``; pydantic's engine has no look-ahead, so the rule is this function)."""
    return (
        1 <= len(value) <= 120
        and re.fullmatch(r"[^/\\\x00-\x1f\x7f]+", value) is not None
        and INTERPOLATION not in value
    )


def _plain_owner(name: str) -> str:
    """:func:`is_owner_name`, as a validator."""
    if not is_owner_name(name):
        raise ValueError("a contributor's name: no '/', '\\', control character or '${'")
    return name


OwnerName = Annotated[
    str,
    Field(min_length=1, max_length=120, json_schema_extra={"pattern": OWNER_PATTERN}),
    AfterValidator(_plain_owner),
]
"""A contributor's name as another names her (an owner, an audience member): no ``/``."""


class SharedKey(BaseModel):
    """A shared model version by its owner's name, its name and version (docs/SPEC.md §3.3)."""

    model_config = ConfigDict(extra="forbid")
    owner: OwnerName
    name: Name
    version: Name


class SharedPublication(CleanBody, AuditedModelRef):
    """``POST /v1/shared-models``: publish one of your model uploads (``upload``; an admin:
    a folder the operator placed, ``path``) as version ``version`` of shared model ``name``,
    with the guarantee you declare (``claim``, checked as an audit's) and who may audit it
    (``audience``: contributors by name, or ``"all"``). A new version is a new publication."""

    _no_interpolation: ClassVar[bool] = True

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["upload"],
                    "properties": {"upload": {"type": "string"}, "path": {"type": "null"}},
                },
                {
                    "required": ["path"],
                    "properties": {"path": {"type": "string"}, "upload": {"type": "null"}},
                },
            ]
        },
    )
    upload: Name | None = Field(None, description="Your model upload, by name or id.")
    path: RelativePath | None = Field(
        None, description="A model folder under the service's models folder (admins only)."
    )
    audience: Literal["all"] | Annotated[list[OwnerName], Field(max_length=1000)] = Field(
        description='Who may audit it: contributors by name, or "all" (every contributor).'
    )

    @model_validator(mode="after")
    def _one_file(self) -> SharedPublication:
        if (self.upload is None) == (self.path is None):
            raise ValueError("give exactly one of upload or path")
        return self


class SharedModelView(BaseModel):
    """A shared model version as the contributors who may audit it see it: never its file,
    path or upload. ``audience`` and ``names`` (who may audit it) are filled for its owner."""

    owner: str
    name: str
    version: str
    modality: str | None
    claim: dict | None
    declared: dict
    published_at: datetime
    withdrawn: bool
    mine: bool = Field(description="Whether you published it.")
    audience: str | None = Field(None, description='"everyone" or "named" (its owner only).')
    names: list[str] | None = Field(None, description="Its named audience (its owner only).")
    audience_size: int | None = Field(
        None,
        description="How many contributors it is published for (None: every contributor), so "
        "that a contributor knows whether its owner could tell her row apart.",
    )


class ParticipationView(BaseModel):
    """Your participation in one shared model version (``PUT
    /v1/shared-models/{owner}/{name}/{version}/participation?named=…&withdrawn=…``)."""

    pseudonym: str = Field(description="What its owner sees you as unless you are named.")
    named: bool
    withdrawn: bool


class AuditRequest(CleanBody):
    """``POST /v1/audits``: what to audit, on which data, with which config overrides.

    No string anywhere in it may contain ``${``: its text reaches the audit's config. Its price
    (multiply-adds, estimated from the composed config, repeats and control included) must be
    within PANORAMIA_MAX_AUDIT_COST: past it alone 422 naming the estimate, past it with her
    queued and running audits 429 (a rule the schema language cannot state)."""

    _no_interpolation: ClassVar[bool] = True

    model_config = ConfigDict(extra="forbid", json_schema_extra=_audit_rules)
    model: AuditedModelRef | None = Field(
        None, description="The model as you name it (required unless shared is given)."
    )
    target: TargetRef | None = Field(
        None, description="How the worker reaches it (required unless shared is given)."
    )
    shared: SharedKey | None = Field(
        None,
        description="A shared model version you are in the audience of (GET "
        "/v1/shared-models), instead of model and target: its file is read by the audit "
        "alone, its claim is its owner's, and your report also enters its leakage report.",
    )
    data: DataRef = Field(default_factory=DataRef)
    overrides: list[Override] = Field(
        default_factory=list,
        max_length=100,
        description="Hydra overrides (key=value) of seed, data.split.*, data.max_members, "
        "data.pool_size, data.pool_chunks, generator, helper, distinguisher, audit and their "
        "keys, and target.* (never a path, kind, device or thread setting): each value within "
        "its setting's range and the settings together within the service's limits "
        "(docs/RANGES.md, SECURITY.md), checked by composing the audit's config (422 naming "
        "the key). The schema language cannot state those ranges: format "
        f"{OVERRIDE_FORMAT!r} names them.",
    )
    control: TargetRef | None = Field(
        None,
        description="A model of her own that never saw these members (trained like the "
        "target on other rows), audited at the same seeds: the group then also gives the "
        "paired difference of the quoted ε̃ (target − control). Needs repeats of 2 or more.",
    )
    repeats: Whole = Field(
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
        if self.shared is not None:
            if self.model is not None or self.target is not None or self.control is not None:
                raise ValueError("shared names the model: give it without model, target or control")
        elif self.model is None or self.target is None:
            raise ValueError("give model and target, or shared")
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


class SizeQuote(BaseModel):
    """One audit size a quote offers (panoramia/service/submission/audit_size.py)."""

    size: Literal["standard", "larger", "largest"]
    words: str
    overrides: list[str] = Field(
        description="Add these to the request's overrides, in place of any data.split.* of "
        "its own, to audit at this size (none for the standard size: the source's own split)."
    )
    audit_share: float = Field(description="The share of her members in the audit part.")
    generator_share: float = Field(description="The share the generator learns from.")
    members_scored: int | None = Field(
        description="About how many of her members the game scores (half the audit part)."
    )
    cost: float | None = Field(
        description="The whole request's estimate at this size, in multiply-adds."
    )
    refused: str | None = Field(
        description="Why this size is not offered for her data or limits; null where it is."
    )


class AuditQuote(BaseModel):
    """``POST /v1/quotes``: the request checked as a submission would be and priced,
    nothing queued."""

    runs: int = Field(description="Audits it would queue (repeats, and her control's).")
    per_run: float = Field(description="One run's estimate, in multiply-adds.")
    cost: float = Field(description="Every run's estimate together, in multiply-adds.")
    budget: float = Field(description="The most her queued and running audits may cost.")
    active: float = Field(description="What her queued and running audits already cost.")
    members: int = Field(description="Members in her data, as the price counts them.")
    split: dict[str, float] = Field(
        description="The data source's own data.split fractions, which the sizes shift."
    )
    sizes: list[SizeQuote]


class ModelDeleted(BaseModel):
    """What ``DELETE /v1/models/{name}`` removed."""

    name: str
    versions: list[str]
    reports: int
    audits: int
    message: str


class UploadedReportDocument(ReportDocument):
    """A report posted to the service: :class:`~panoramia.report.schema.ReportDocument` of a
    modality the registry knows, made when its ``created`` says (RFC 3339)."""

    modality: ModalityName  # type: ignore[valid-type]
    created: DateTimeText
    c_lb: Real
    c_plus_eps_lb: Real
    eps_tilde: Real = Field(
        ge=0,
        description="max(0, c_plus_eps_lb − c_lb), to within 1e-9 (422 otherwise): a relation "
        "between fields the schema language cannot state.",
    )
    confidence: Real = Field(gt=0, lt=1)
    m: Whole = Field(ge=1)
    seed: Whole


class UploadedPageParts(BaseModel):
    """A CLI run's ``page_parts.json`` as uploaded: its charts (the service heads the page
    with the model's name and version itself)."""

    model_config = ConfigDict(extra="forbid")
    charts: Annotated[list[ChartPart], Field(max_length=MAX_CHARTS)]

    def headed(self, heading: str) -> PageParts:
        """The page's parts as the service stores them, headed by ``heading``."""
        return PageParts(charts=list(self.charts), heading=heading)


class ReportUpload(CleanBody):
    """``POST /v1/reports``: a report made by a CLI run: ``report.json`` and its page's charts
    (``page_parts.json``), from which the service renders the page; or, from a run made
    before charts were kept, its finished page (``report.html``)."""

    model_config = ConfigDict(extra="forbid")
    model: ModelRef
    report: UploadedReportDocument
    page_parts: UploadedPageParts | None = Field(
        None,
        description="The run's page_parts.json: the service renders the report's page from "
        "the report and these charts (headed by the model's name and version). Not with html.",
    )
    html: str | None = Field(
        None, description="A finished page (a run made before page_parts.json). Not with "
        "page_parts.",
    )  # fmt: skip
    artifact_location: Annotated[str, Field(max_length=2000)] | None = None

    @model_validator(mode="after")
    def _one_page(self) -> ReportUpload:
        if self.page_parts is not None and self.html is not None:
            raise ValueError("give page_parts or html, not both")
        return self


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


FILENAME_FORMAT = "panoramia-filename"
"""The format of an upload's file name: printable text (Python's ``str.isprintable``), which
a regular expression of the schema language cannot spell."""


def _any_case(suffixes: tuple[str, ...]) -> str:
    """A pattern matching a name that ends with one of ``suffixes``, in any letter case."""
    spelled = (
        "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in suffix)
        for suffix in sorted(suffixes, key=len, reverse=True)
    )
    return f"({'|'.join(spelled)})$"


def _filename_rules(schema: dict) -> None:
    """What :func:`panoramia.service.uploads.checks.check_filename` checks, as JSON Schema:
    a plain file name whose suffix is a format of its ``kind`` (an absent kind is data's)."""
    schema["anyOf"] = [
        {"properties": {"kind": {"const": "data"},
                        "filename": {"pattern": _any_case(DATA_SUFFIXES)}}},
        {"required": ["kind"], "properties": {"kind": {"const": "model"},
                                              "filename": {"pattern": _any_case(MODEL_SUFFIXES)}}},
    ]  # fmt: skip


FILENAME_PATTERN = r"^(?![\s\S]*\$\{)[^/\\\x00-\x1f\x7f-\x9f\ufffd]+$"
"""No folder (``/``, ``\\``), no control character, no ``${``; its suffix is the format."""


class UploadCreate(CleanBody):
    """``POST /v1/uploads``: what is about to be sent. ``name`` is what an audit names it by
    (``--members NAME``, ``--target-path NAME``); ``filename``'s suffix tells its format."""

    _no_interpolation: ClassVar[bool] = True

    model_config = ConfigDict(extra="forbid", json_schema_extra=_filename_rules)
    name: Name
    kind: Literal["data", "model"] = "data"
    filename: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            description="A plain, printable file name; its suffix (any case) is the format: "
            "a data upload's one of the data formats, a model's an archive (anyOf).",
            json_schema_extra={"pattern": FILENAME_PATTERN, "format": FILENAME_FORMAT},
        ),
    ]
    size: Whole = Field(ge=1, le=2**50)
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


class UploadDeleted(BaseModel):
    """What ``DELETE /v1/uploads/{id or name}`` removed (200)."""

    deleted: str = Field(description="The upload's id.")
    name: str
    run_directories_removed: int
    stages_removed: int
    reports_redacted: int
    message: str


class UploadDeletionDeferred(BaseModel):
    """``DELETE /v1/uploads/{id or name}`` asked while the upload is being checked (202): the
    check's end deletes it."""

    deleting: str = Field(description="The upload's id.")
    name: str
    when: str


class WorkerListing(BaseModel):
    """``GET /v1/worker/uploads/{id}``: a running audit's upload's files, each with its
    SHA-256; ``suffix`` is a single file's format (empty for a folder)."""

    suffix: str
    folder: bool
    files: dict[str, str]
