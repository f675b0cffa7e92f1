"""What the release gate reads of an audit (docs/AUDIT.md, "The release gate"): the figures of
one ``report.json``, or of repeated runs of one audit pooled into one verdict (a multirun's
target, a service's repeats; docs/SPEC.md §3.2).

Nothing stored is trusted: a report is checked against :class:`~panoramia.report.schema.
ReportDocument` and its verdict read anew from its own figures (:func:`~panoramia.report.
verdict.verdict`), as the pooled verdict's inputs are (:mod:`panoramia.report.pooled`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from panoramia.accounting.report_section import CHECKED_GAMES
from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict
from panoramia.report.attacker import LOW_FPRS
from panoramia.report.pooled import pooled_verdict, run_reading
from panoramia.report.verdict import percent, verdict
from panoramia.report.verdict_rule import GAME_WORDS, finite_number


@dataclass(frozen=True)
class ClaimReading:
    """The declared guarantee as the gate reads it: whether one is declared, whether a game
    with real non-members checked it (:data:`~panoramia.accounting.report_section.
    CHECKED_GAMES`; games against generated non-members never can), and where it was
    contradicted."""

    declared: bool = False
    checked: bool = False
    """Every run that declares it had a game that could contradict it."""
    violated_by: tuple[str, ...] = ()
    """The runs whose audit contradicts it (one run: its own name)."""


@dataclass(frozen=True)
class TprReading:
    """TPR at one false-positive rate (shares of the audited members; None where the report
    cannot resolve that rate), on ``negatives`` generated non-members (the fewest of the runs)."""

    attack: float | None = None
    baseline: float | None = None
    negatives: int | None = None


@dataclass(frozen=True)
class GateFigures:
    """The figures one gate's rules read, of one run or of a pooled group of runs."""

    subject: str
    """What was audited, as the gate's lines name it (``mlp-e100 seed 0``)."""
    runs: int = 1
    pooled: bool = False
    level: str | None = None
    """The verdict's level (a pooled verdict's, for a group); None where none can be read."""
    headline: str = "no verdict"
    game: str | None = None
    """The quoted game (``one_sided``, ``two_sided``)."""
    eps_tilde: float | None = None
    """The quoted ε̃ (nats; a group's mean)."""
    interval: tuple[float, float] | None = None
    """The quoted ε̃'s interval (nats): this run's, or a group's t-interval over its runs."""
    interval_words: str = ""
    """What that interval is, in words (``this run's 90% interval``)."""
    tpr: Mapping[str, TprReading] = field(default_factory=lambda: MappingProxyType({}))
    """Per rate of :data:`~panoramia.report.attacker.LOW_FPRS`."""
    claim: ClaimReading = field(default_factory=ClaimReading)


def checked_report(document: object, *, source: str) -> JSONDict:
    """``document`` when it is a report document (:class:`~panoramia.report.schema.
    ReportDocument`), else :class:`InputError` naming ``source`` and the first field at
    fault."""
    from pydantic import ValidationError

    from panoramia.report.schema import ReportDocument

    if not isinstance(document, dict):
        raise InputError(f"{source}: not a report document (a JSON object)")
    try:
        ReportDocument.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise InputError(f"{source}: not a report document ({where}: {first['msg']})") from None
    return document


def read_verdict(document: JSONDict, *, source: str) -> JSONDict:
    """The verdict of a checked document, read anew from its figures; :class:`InputError`
    where they give none."""
    try:
        return verdict(document)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise InputError(
            f"{source}: its figures give no verdict ({type(error).__name__})"
        ) from None


def _section(document: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    node: object = document
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _tpr(document: JSONDict) -> dict[str, TprReading]:
    attacker = _section(document, "attacker")
    found = {}
    for rate in LOW_FPRS:
        attack, baseline = _section(attacker, "attack"), _section(attacker, "baseline")
        negatives = attack.get("fpr_negatives")
        found[rate] = TprReading(
            attack=finite_number(_section(attack, "tpr_at_fpr").get(rate)),
            baseline=finite_number(_section(baseline, "tpr_at_fpr").get(rate)),
            negatives=negatives if isinstance(negatives, int) else None,
        )
    return found


def _claim(document: JSONDict, name: str) -> ClaimReading:
    section = _section(document, "claim")
    kind = _section(section, "summary", "claim").get("kind", "none")
    declared = kind != "none"
    checks = _section(section, "consistency")
    return ClaimReading(
        declared=declared,
        checked=declared and any(game in checks for game in CHECKED_GAMES),
        violated_by=(name,) if section.get("violation") is True else (),
    )


def _interval(found: Mapping[str, Any]) -> tuple[float, float] | None:
    interval = _section(found, "quote").get("interval")
    if not isinstance(interval, list) or len(interval) != 2:
        return None
    low, high = (finite_number(value) for value in interval)
    return None if low is None or high is None else (low, high)


def run_figures(document: JSONDict, *, subject: str, source: str) -> GateFigures:
    """The figures of one checked report (:func:`checked_report`)."""
    return _read_run(document, subject=subject, source=source)[0]


def _read_run(document: JSONDict, *, subject: str, source: str) -> tuple[GateFigures, JSONDict]:
    """The run's figures and the verdict they came from."""
    found = read_verdict(document, source=source)
    rate = finite_number(found.get("false_alarm_rate"))
    quote = _section(found, "quote")
    figures = GateFigures(
        subject=subject,
        level=found["level"],
        headline=found["headline"],
        game=quote.get("game"),
        eps_tilde=finite_number(quote.get("value")),
        interval=_interval(found),
        interval_words=f"this run's {percent(1 - 2 * rate)} interval" if rate else "",
        tpr=MappingProxyType(_tpr(document)),
        claim=_claim(document, subject),
    )
    return figures, found


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pooled_tpr(runs: list[GateFigures]) -> dict[str, TprReading]:
    """Each rate's mean TPR over the runs that resolve it (an unresolved run is left out; none
    resolving it: unreadable)."""
    found = {}
    for rate in LOW_FPRS:
        readings = [run.tpr[rate] for run in runs if rate in run.tpr]
        both = [r for r in readings if r.attack is not None and r.baseline is not None]
        counts = [r.negatives for r in readings if r.negatives is not None]
        found[rate] = TprReading(
            attack=_mean([r.attack for r in both if r.attack is not None]),
            baseline=_mean([r.baseline for r in both if r.baseline is not None]),
            negatives=min(counts) if counts else None,
        )
    return found


def _pooled_claim(runs: list[GateFigures]) -> ClaimReading:
    declaring = [run.claim for run in runs if run.claim.declared]
    return ClaimReading(
        declared=bool(declaring),
        checked=bool(declaring) and all(claim.checked for claim in declaring),
        violated_by=tuple(name for claim in declaring for name in claim.violated_by),
    )


def pooled_figures(
    runs: Sequence[tuple[str, JSONDict | None]], *, subject: str, source: str
) -> GateFigures:
    """The figures of repeated runs of one audit (``(run name, checked report or None)``; None:
    a run that left no report, read as p = 1): the pooled verdict (:func:`~panoramia.report.
    pooled.pooled_verdict`) of each run's verdict read anew; the quoted ε̃'s mean and 95 %
    t-interval over the runs (one run: that run's own interval); each TPR's mean over the runs
    that resolve it; the claim broken where any run's audit contradicts it."""
    if not runs:
        raise InputError(f"{source}: no run to pool")
    readings, each = [], []
    for name, document in runs:
        if document is None:
            readings.append(run_reading(None))
            continue
        figures, found = _read_run(document, subject=name, source=f"{source}: {name}")
        readings.append(run_reading(found))
        each.append(figures)
    pooled = pooled_verdict(readings)
    quote = pooled["quote"] or {}
    interval, words = None, ""
    if isinstance(quote.get("interval"), list):
        interval = (float(quote["interval"][0]), float(quote["interval"][1]))
        words = f"95% t-interval over {quote['n']} runs"
    elif quote.get("n") == 1:  # one run's own interval
        alone = next((f for f in each if f.game == quote.get("game")), None)
        if alone is not None:
            interval, words = alone.interval, alone.interval_words
    return GateFigures(
        subject=subject,
        runs=len(runs),
        pooled=True,
        level=pooled["level"],
        headline=pooled["headline"],
        game=quote.get("game"),
        eps_tilde=finite_number(quote.get("mean")),
        interval=interval,
        interval_words=words,
        tpr=MappingProxyType(_pooled_tpr(each)),
        claim=_pooled_claim(each),
    )


def game_words(game: str | None) -> str:
    """The quoted game in words (``the two-sided game``), or ``""``."""
    return GAME_WORDS.get(game or "", "")
