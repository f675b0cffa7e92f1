"""The per-model leakage report of a shared model (docs/SPEC.md §3.3, pre-registered
2026-12-03): one verdict for "does this version leak any of its contributors' data?" from
each contributor's latest unit of service-run audits, the spread of their figures, the claim
check, and what each viewer may see of it.

Inputs are :class:`ContributorUnit` records the store gathers (each run's stored *digest*,
:mod:`panoramia.report.digest`, never a document's own verdict: a digest reads the verdict
anew from the figures). Nothing here reads the database or a file.

**Who sees what** is a property of each field, declared beside it (``audience`` in its
``json_schema_extra``): ``everyone`` (any contributor of the model's audience), ``aggregate``
(the owner and admins always; a contributor of the audience only where at least
:data:`MIN_AGGREGATE` contributors are counted, and then counts only: never the smallest p,
which is one contributor's), ``owner`` (the owner and admins: every per-
contributor figure, the spreads whose ends are each one contributor's, the times) and
``self`` (the viewer's own row). :func:`view_for` builds a viewer's report by walking those
declarations; a field without one cannot be built (``tests/service/test_shared_models.py``
walks every field).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from panoramia.report.pooled import pooled_verdict, run_reading
from panoramia.report.verdict import p_text, percent
from panoramia.report.verdict_rule import DETECTED, finite_number

RATE = 0.05
"""The model-level test's family-wise false-alarm rate α (over all its contributors)."""
MIN_AGGREGATE = 3
"""The fewest counted contributors whose aggregates a contributor (not the owner) may see."""
CLAIM_CONFIDENCE = 0.95
"""The confidence each run's claim check holds at (§4; the page's union bound uses it)."""
Audience = Literal["everyone", "aggregate", "owner", "self"]
Viewer = Literal["owner", "contributor"]
LEVEL_WORDS = {
    "leaks": "Leaks: at least one contributor's data is found",
    "borderline": "Borderline: some contributors' audits point to a leak the model-level "
    "test does not call",
    "no_leak_detected": "No leak detected for any contributor",
    "not_audited": "Not audited yet",
}
"""Each model-level level as a person reads it."""


def _seen_by(audience: Audience, description: str) -> Any:
    """A field's declaration: who may see it (see the module docstring) and what it holds."""
    return Field(None, description=description, json_schema_extra={"audience": audience})


@dataclass(frozen=True)
class RunRecord:
    """One run of a contributor's unit: its ``status`` and, where it succeeded, its report's
    stored ``digest`` (None: no report, or a failed run)."""

    status: str
    digest: dict[str, Any] | None
    finished_at: datetime | None


@dataclass(frozen=True)
class ContributorUnit:
    """A counted contributor's latest unit of one version (docs/SPEC.md §3.3): ``key`` (an
    internal id, never shown), ``label`` (her pseudonym, or her name where she chose to be
    named), ``named``, and the unit's ``runs`` (one, or a group of repeats)."""

    key: int
    label: str
    named: bool
    runs: list[RunRecord] = field(default_factory=list)


class Figure(BaseModel):
    """One contributor's figure with its interval (nats), as a spread's end shows it."""

    value: float
    interval: list[float] | None = None


class Spread(BaseModel):
    """A figure over the counted contributors: lowest, median (the lower median for even
    n) and highest, each with that contributor's own interval; ``n`` contributors."""

    n: int
    lowest: Figure
    median: Figure
    highest: Figure


class ContributorRow(BaseModel):
    """One counted contributor's unit, as the owner (or she herself) reads it."""

    who: str = Field(description="Her pseudonym, or her name where she chose to be named.")
    named: bool
    runs: int
    audited_at: datetime | None
    level: str | None = Field(description="Her unit's level (a run's, or the pooled one).")
    p_value: float = Field(description="Her unit's decision p (a failed or unread run: 1).")
    found: bool | None = Field(
        description="Named by the model-level test (Holm at α = 5 %); None where a "
        "contributor reads her own row with fewer than three counted (it would tell how many)."
    )
    eps_tilde: Figure | None = Field(description="Her quoted ε̃ (a group's mean), nats.")
    game: str | None
    o1_eps_lb: float | None = Field(description="O(1)'s ε_lb on her held-out rows (mean).")
    beyond_claim: bool = Field(description="A run of hers finds a point the claim forbids.")


class ModelVerdict(BaseModel):
    """The model-level verdict (docs/SPEC.md §3.3)."""

    level: Literal["leaks", "borderline", "no_leak_detected", "not_audited"]
    headline: str
    leaks: bool
    found: int = Field(description="Contributors whose data the test finds.")
    contributors: int
    smallest_p: float | None
    threshold: float | None = Field(description="α / K: what the smallest p is held to.")
    false_alarm_rate: float
    sentence: str


class ClaimCheck(BaseModel):
    """Whether the contributors' figures lie beyond the declared guarantee."""

    declared: bool = Field(description="Whether the version declares a guarantee.")
    met: bool | None = Field(description="False where a figure lies beyond it; None: none.")
    beyond: int = Field(description="Counted contributors with a run beyond it.")
    runs: int = Field(description="Counted runs that read the claim.")
    chance_bound: float | None = Field(
        description="The union bound on flagging a true claim by chance: runs × 5 %, at most 1."
    )
    sentence: str


class VersionLeakage(BaseModel):
    """The leakage report of one published version, every field declared with who sees it
    (the module docstring); a viewer's copy (:func:`view_for`) holds None where hers may not."""

    owner: str | None = _seen_by("everyone", "The model's owner.")
    name: str | None = _seen_by("everyone", "The model's name.")
    version: str | None = _seen_by("everyone", "The version.")
    published_at: datetime | None = _seen_by("everyone", "When it was published.")
    withdrawn: bool | None = _seen_by("everyone", "Whether its owner withdrew it.")
    claim: dict[str, Any] | None = _seen_by("everyone", "The declared guarantee (claims JSON).")
    withheld: str | None = _seen_by(
        "everyone", "Why the aggregates are not shown to this viewer (None: they are)."
    )
    contributors: int | None = _seen_by("aggregate", "Contributors counted.")
    runs: int | None = _seen_by("aggregate", "Their runs counted.")
    first_audit_at: datetime | None = _seen_by("owner", "The earliest counted run's end.")
    last_audit_at: datetime | None = _seen_by("owner", "The latest counted run's end.")
    verdict: ModelVerdict | None = _seen_by("aggregate", "The model-level verdict.")
    eps_tilde: Spread | None = _seen_by(
        "owner", "The quoted ε̃ over contributors (each end is one contributor's figure)."
    )
    o1_eps_lb: Spread | None = _seen_by("owner", "O(1)'s ε_lb over those with held-out rows.")
    claim_check: ClaimCheck | None = _seen_by("aggregate", "The claim check.")
    rows: list[ContributorRow] | None = _seen_by("owner", "One row per counted contributor.")
    yours: ContributorRow | None = _seen_by("self", "The viewer's own row, where she is counted.")


class ModelLeakage(BaseModel):
    """Every published version of one shared model side by side, oldest first."""

    owner: str
    name: str
    versions: list[VersionLeakage]


@dataclass(frozen=True)
class Published:
    """What the publication itself says: owner, name, version, when, withdrawn, claim."""

    owner: str
    name: str
    version: str
    published_at: datetime
    withdrawn: bool
    claim: dict[str, Any] | None


def holm(p_values: list[float], rate: float = RATE) -> list[bool]:
    """Holm's step-down (1979) at family-wise rate ``rate``: which hypotheses are rejected,
    in input order. Valid under any dependence between the p-values."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    found = [False] * len(p_values)
    for rank, index in enumerate(order):
        if p_values[index] > rate / (len(p_values) - rank):
            break
        found[index] = True
    return found


def _unit_reading(unit: ContributorUnit) -> dict[str, Any]:
    """Her unit's level, p, quoted figure, O(1) and claim reading (docs/SPEC.md §3.3)."""
    readings = [
        run_reading((run.digest or {}).get("verdict") if run.status == "succeeded" else None)
        for run in unit.runs
    ]
    digests = [run.digest or {} for run in unit.runs if run.status == "succeeded"]
    o1s = [v for d in digests if (v := finite_number(d.get("o1_eps_lb"))) is not None]
    beyond = any(_beyond_claim(d) for d in digests)
    reads_claim = sum(1 for d in digests if d.get("declared_claim"))
    if len(unit.runs) == 1:
        verdict = (digests[0].get("verdict") if digests else None) or {}
        quote = verdict.get("quote") or {}
        value = finite_number(quote.get("value"))
        interval = quote.get("interval")
        figure = Figure(value=value, interval=interval) if value is not None else None
        p = readings[0]["p"]
        level, game = readings[0]["level"], readings[0]["game"]
        p = 1.0 if p is None else p
    else:
        pooled = pooled_verdict(readings)
        quoted = pooled["quote"]
        figure = Figure(value=quoted["mean"], interval=quoted["interval"]) if quoted else None
        p, level = pooled["p_value"], pooled["level"]
        game = quoted["game"] if quoted else None
    ended = [run.finished_at for run in unit.runs if run.finished_at is not None]
    return {
        "p": p, "level": level, "figure": figure, "game": game, "beyond": beyond,
        "o1": statistics.fmean(o1s) if o1s else None, "reads_claim": reads_claim,
        "ended": max(ended) if ended else None, "first": min(ended) if ended else None,
    }  # fmt: skip


def _beyond_claim(digest: dict[str, Any]) -> bool:
    """Whether one run's figures lie beyond its declared guarantee: its verdict found a point
    the claim forbids, or its μ̃ is above the claim's μ (docs/SPEC.md §2.8)."""
    level = (digest.get("verdict") or {}).get("level")
    mu, claimed = (
        finite_number(digest.get("mu_tilde")),
        finite_number(digest.get("claimed_mu_replace_one")),
    )
    return level == "leak_beyond_claim" or (mu is not None and claimed is not None and mu > claimed)


def _spread(figures: list[Figure]) -> Spread | None:
    if not figures:
        return None
    ordered = sorted(figures, key=lambda f: f.value)
    return Spread(
        n=len(ordered),
        lowest=ordered[0],
        median=ordered[(len(ordered) - 1) // 2],
        highest=ordered[-1],
    )


def _model_verdict(readings: list[dict[str, Any]], found: list[bool]) -> ModelVerdict:
    count = len(readings)
    if count == 0:
        return ModelVerdict(
            level="not_audited", headline=LEVEL_WORDS["not_audited"], leaks=False, found=0,
            contributors=0, smallest_p=None, threshold=None, false_alarm_rate=RATE,
            sentence="No contributor's audit of this version has ended yet.",
        )  # fmt: skip
    smallest = min(r["p"] for r in readings)
    threshold = RATE / count
    hits = sum(found)
    pointing = any(r["level"] in (*DETECTED, "borderline") for r in readings)
    level: Literal["leaks", "borderline", "no_leak_detected"]
    if hits:
        level = "leaks"
    elif smallest <= 2 * threshold or pointing:
        level = "borderline"
    else:
        level = "no_leak_detected"
    sentence = verdict_sentence(level, count, hits, smallest, threshold)
    return ModelVerdict(
        level=level, headline=LEVEL_WORDS[level], leaks=bool(hits), found=hits,
        contributors=count, smallest_p=smallest, threshold=threshold, false_alarm_rate=RATE,
        sentence=sentence,
    )  # fmt: skip


def verdict_sentence(
    level: str, count: int, hits: int, smallest: float | None, threshold: float | None
) -> str:
    """The model-level verdict in words; with ``smallest`` and ``threshold`` (the owner's
    view) the test's figures, without them (a contributor's) the counts alone."""
    test = (
        f"Holm's test over the {count} contributors (valid however their audits depend on "
        f"each other, held to a {percent(RATE)} false-alarm rate over all of them)"
    )
    if smallest is not None and threshold is not None:
        test += f" holds the smallest p, {p_text(smallest)}, to {threshold:.4f}"
    if level == "leaks":
        return (
            f"This model leaks its contributors' data: {test}, and finds {hits} of "
            f"{count} contributors' data."
        )
    if level == "borderline":
        return (
            f"No leak is called for the model, but not every contributor's audit was quiet: "
            f"{test}. More repeats by those contributors would settle it."
        )
    return f"No leak detected for any of the {count} contributors: {test}."


def _claim_check(claim: dict[str, Any] | None, readings: list[dict[str, Any]]) -> ClaimCheck:
    if not claim:
        return ClaimCheck(
            declared=False, met=None, beyond=0, runs=0, chance_bound=None,
            sentence="The owner declares no guarantee for this version.",
        )  # fmt: skip
    runs = sum(r["reads_claim"] for r in readings)
    beyond = sum(1 for r in readings if r["beyond"])
    bound = min(1.0, runs * (1 - CLAIM_CONFIDENCE)) if runs else None
    chance = (
        f" Each run's check holds at {percent(CLAIM_CONFIDENCE)} confidence; over {runs} runs "
        f"a true claim is flagged by chance at most {percent(round(bound, 4))} of the time."
        if bound is not None
        else ""
    )
    if not runs:
        return ClaimCheck(
            declared=True, met=None, beyond=0, runs=0, chance_bound=None,
            sentence="No counted run has read the declared guarantee yet.",
        )  # fmt: skip
    if beyond:
        sentence = (
            f"The model does not meet its declared guarantee: {beyond} contributor(s)' "
            f"figures lie beyond it.{chance}"
        )
    else:
        sentence = f"No contributor's figure lies beyond the declared guarantee.{chance}"
    return ClaimCheck(
        declared=True, met=not beyond, beyond=beyond, runs=runs, chance_bound=bound,
        sentence=sentence,
    )  # fmt: skip


def version_leakage(published: Published, units: list[ContributorUnit]) -> VersionLeakage:
    """The full report of one version (every field; what a viewer gets is
    :func:`view_for`'s): the model-level verdict, spreads, claim check and owner's rows."""
    readings = [_unit_reading(unit) for unit in units]
    found = holm([r["p"] for r in readings])
    rows = [
        ContributorRow(
            who=unit.label, named=unit.named, runs=len(unit.runs), audited_at=r["ended"],
            level=r["level"], p_value=r["p"], found=hit, eps_tilde=r["figure"],
            game=r["game"], o1_eps_lb=r["o1"], beyond_claim=r["beyond"],
        )
        for unit, r, hit in zip(units, readings, found, strict=True)
    ]  # fmt: skip
    ends = [r["ended"] for r in readings if r["ended"] is not None]
    firsts = [r["first"] for r in readings if r["first"] is not None]
    return VersionLeakage(
        owner=published.owner,
        name=published.name,
        version=published.version,
        published_at=published.published_at,
        withdrawn=published.withdrawn,
        claim=published.claim,
        contributors=len(units),
        runs=sum(len(unit.runs) for unit in units),
        first_audit_at=min(firsts) if firsts else None,
        last_audit_at=max(ends) if ends else None,
        verdict=_model_verdict(readings, found),
        eps_tilde=_spread([r["figure"] for r in readings if r["figure"] is not None]),
        o1_eps_lb=_spread([Figure(value=r["o1"]) for r in readings if r["o1"] is not None]),
        claim_check=_claim_check(published.claim, readings),
        rows=rows,
    )


def audience_of(name: str) -> Audience:
    """Who may see :class:`VersionLeakage`'s field ``name`` (KeyError: undeclared)."""
    extra = VersionLeakage.model_fields[name].json_schema_extra
    if not isinstance(extra, dict) or extra.get("audience") not in (
        "everyone", "aggregate", "owner", "self"
    ):  # fmt: skip
        raise KeyError(f"VersionLeakage.{name} declares no audience")
    return extra["audience"]  # type: ignore[return-value]


def view_for(
    full: VersionLeakage, viewer: Viewer, own: int | None, units: list[ContributorUnit]
) -> VersionLeakage:
    """``full`` as ``viewer`` may read it: the owner (and admins) every field; a contributor
    ``everyone`` fields, ``aggregate`` ones only where at least :data:`MIN_AGGREGATE`
    contributors are counted (the verdict without its smallest p: counts only), and
    ``self``: her own row (``own``: her unit's ``key`` in
    ``units``, None where she is not counted). Built field by field from the declarations:
    a field is copied only where its audience admits the viewer."""
    counted = full.contributors or 0
    rows = full.rows or []
    mine = next(
        (row for unit, row in zip(units, rows, strict=True) if own is not None and unit.key == own),
        None,
    )
    open_to_her = viewer == "owner" or counted >= MIN_AGGREGATE
    shown: dict[str, Any] = {}
    for name in VersionLeakage.model_fields:
        audience = audience_of(name)
        if (
            audience == "everyone"
            or (audience == "aggregate" and open_to_her)
            or (audience == "owner" and viewer == "owner")
        ):
            shown[name] = getattr(full, name)
        elif audience == "self":
            shown[name] = mine
    if viewer != "owner" and open_to_her and full.verdict is not None:
        found = full.verdict  # her copy: the counts, never one contributor's p
        shown["verdict"] = found.model_copy(update={
            "smallest_p": None, "threshold": None,
            "sentence": verdict_sentence(found.level, found.contributors, found.found,
                                         None, None),
        })  # fmt: skip
    if viewer != "owner" and not open_to_her:
        if mine is not None:
            shown["yours"] = mine.model_copy(update={"found": None})
        shown["withheld"] = (
            f"Fewer than {MIN_AGGREGATE} contributors have audited this version: its "
            f"model-level verdict is shown once {MIN_AGGREGATE} have, so that no one "
            "contributor's result can be read from it."
        )
    return VersionLeakage(**shown)
