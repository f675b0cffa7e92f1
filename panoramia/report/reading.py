"""The report's reading side: one parse of a stored ``report.json`` (schema 1.0 to the current
:data:`~panoramia.report.SCHEMA_VERSION`) into typed sections, for the readers outside the
report's writer (the multirun summary, the job's closing lines, the CLI and the service).

:func:`parse_report` is the only entry. It asks of a document only what its readers use (the
writer's and the service's upload check hold the whole document to
:class:`~panoramia.report.schema.ReportDocument`), reads each section that a reader needs into
its model, and fills what an older schema lacks the way the writer would have: a document
before 1.1 has no ``verdict``, so its verdict is read anew from its own figures
(:func:`panoramia.report.verdict.verdict`); sections added later (``two_sided``, ``gdp``, the
reference attacks) are absent (None, or a model with every field None). A section's keys that
its model does not name are kept (``extra="allow"``), so nothing written is lost on reading.

Figures are in nats (ε, c) or are probabilities (p-values, rates, AUC); ``tpr_at_fpr`` maps the
asked false-positive rate, as the text the writer keyed it by (``"0.01"``), to the rate of
members caught there (None where too few rows score to read it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from panoramia.errors import InputError


class Section(BaseModel):
    """A section of the document: the fields a reader asks for, typed; the rest kept. A
    field written as null reads as its default (``claim.violation: null`` is no violation),
    as the readers before this one took it."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _nulls_read_as_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            key: value
            for key, value in data.items()
            if value is not None or key not in fields or fields[key].default is None
        }


class NullReading(Section):
    """The in-audit null's reading of the quoted game (schema 1.4 on): its p-value, draws,
    threshold and the false-alarm rate held; ``skipped`` says why there is none."""

    p_value: float | None = None
    draws: int | None = None
    threshold: float | None = None
    false_alarm_rate: float | None = None
    skipped: str | None = None


class Quote(Section):
    """The verdict's quoted figure: ``value`` (nats) of ``figure`` from ``game``, with this
    run's ``interval`` where the null gives one."""

    figure: str = "ε̃"
    value: float | None = None
    game: str | None = None
    confidence: float | None = None
    interval: list[float | None] | None = None
    saturated: bool = False


class Decision(Section):
    """The combined test (schema 1.6 on): its p-value, the tests it combined and those that
    found the leak."""

    p_value: float | None = None
    tests: list[str] = Field(default_factory=list)
    found_by: list[str] = Field(default_factory=list)


class Verdict(Section):
    """The graded verdict (docs/SPEC.md §3.1): ``level`` (None where a hand-made document's
    figures give none), its words and what to do next."""

    level: str | None = None
    headline: str = ""
    detected: bool = False
    false_alarm_rate: float | None = None
    sentence: str = ""
    quote: Quote = Field(default_factory=Quote)
    null: NullReading | None = None
    decision: Decision | None = None
    caveats: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)


class ReferenceAudit(Section):
    """One audit on the data's real held-out rows (O(1), RM;RN; schema 1.0 on, p-values 1.6
    on): its ε lower bound (nats) and p-value."""

    eps_lb: float | None = None
    p_value: float | None = None


class ReferenceAttack(ReferenceAudit):
    """A reference-model attack on real rows (RMIA, LiRA, the plain loss attack; schema 1.9
    on): ε lower bound and p-value of its calls, AUC, and the share of members caught at each
    asked false-positive rate (``tpr_at_fpr``) with the rate realised there."""

    attack: str | None = None
    auc: float | None = None
    auc_interval: list[float | None] | None = None
    tpr_at_fpr: dict[str, float | None] = Field(default_factory=dict)
    realised_fpr: dict[str, float | None] = Field(default_factory=dict)
    tpr_at_fpr_interval: dict[str, list[float | None] | None] = Field(default_factory=dict)
    members: int | None = None
    nonmembers: int | None = None
    decides: bool = False


class ReferenceAudits(Section):
    """The audits on real held-out rows, each None where the run has none."""

    o1: ReferenceAudit | None = None
    rmrn: ReferenceAudit | None = None
    rmia: ReferenceAttack | None = None
    lira: ReferenceAttack | None = None
    loss: ReferenceAttack | None = None


class TwoSided(Section):
    """The two-sided game (docs/SPEC.md §2.6; absent before it was written: every figure
    None); ``unreliable``: its baseline's bound collapsed to 0."""

    c_lb: float | None = None
    c_plus_eps_lb: float | None = None
    eps_tilde: float | None = None
    unreliable: bool = False
    rmrn: ReferenceAudit | None = None


class GdpReading(Section):
    """μ-GDP figures (schema 1.3 on): the quoted game's μ̃, the claim's μ, RM;RN's bound."""

    mu_tilde: float | None = None
    claimed_mu: float | None = None
    rmrn: dict[str, Any] | None = None


class ClaimReading(Section):
    """The model's declared guarantee as the audit read it: ``violation`` (an audited figure
    beyond it) and its ``summary`` (``epsilons`` by δ as text)."""

    violation: bool = False
    summary: dict[str, Any] | None = None
    statements: list[str] = Field(default_factory=list)


class Report(Section):
    """A stored report, read: the top level's figures and the sections readers ask for
    (typed), every other key kept as written (``model_extra``)."""

    schema_version: str | None = None
    modality: str | None = None
    seed: int
    c_lb: float
    c_plus_eps_lb: float
    eps_tilde: float
    confidence: float | None = None
    m: int | None = None
    unreliable: list[str] | bool = Field(default_factory=list)
    """Why the paper's one-sided ε̃ is not a gap over the generator (empty or false: it is;
    hand-made documents may say ``true``)."""
    verdict: Verdict
    reference_audits: ReferenceAudits
    two_sided: TwoSided
    gdp: GdpReading
    claim: ClaimReading
    target: dict[str, Any]
    config: dict[str, Any]

    @property
    def generation_seed(self) -> int:
        """The seed of D_G, the generator, the synthetic pool and h: ``generation_seed`` where
        the job set one, else the run's seed."""
        configured = self.config.get("generation_seed")
        return self.seed if configured is None else int(configured)


NO_VERDICT = Verdict(level=None, detected=False, quote=Quote())
"""What a document whose figures give no verdict (a hand-made or truncated one) reads as."""


def parse_report(document: Mapping[str, Any]) -> Report:
    """``document`` (a parsed ``report.json`` of any schema this version reads) as a
    :class:`Report`; InputError naming the first field that does not hold."""
    try:
        sections = {key: document.get(key) or empty for key, empty in _SECTIONS.items()}
        return Report.model_validate({**document, **sections, "verdict": _verdict_of(document)})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "report"
        raise InputError(f"report: {where}: {first['msg']}") from None


_SECTIONS: dict[str, Any] = {
    "reference_audits": {}, "two_sided": {}, "gdp": {}, "claim": {}, "unreliable": [],
    "target": {}, "config": {},
}  # fmt: skip
"""Sections an older schema (or a hand-made document) may lack or hold as null: read as
empty."""


def _verdict_of(document: Mapping[str, Any]) -> Verdict | dict[str, Any]:
    """The document's own verdict, or one read anew from its figures (schema 1.0), or
    :data:`NO_VERDICT` where its figures give none."""
    from panoramia.report.verdict import verdict
    from panoramia.report.verdict_rule import DETECTED

    found = document.get("verdict")
    if isinstance(found, dict):  # 1.1 to 1.3 wrote no ``detected``: its level says it
        return {"detected": found.get("level") in DETECTED, **found}
    try:
        return verdict(dict(document))
    except (KeyError, TypeError, ValueError):
        return NO_VERDICT
