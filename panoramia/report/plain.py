"""The plain paragraph a reader sees first on every verdict page: does the model leak, can her
own records be picked out, and how sure the audit is — in words, no symbol and no p-value
(the figures stay behind a disclosure, :mod:`panoramia.report.html` and the console).

It is read off what a page already holds: a ``verdict`` section or a digest's verdict, and an
``attacker`` section (its ``attack`` and ``baseline`` sides, each with ``tpr_at_fpr`` and
``tpr_at_fpr_interval`` keyed ``"0.01"``: the share of audited *members* flagged while 1 in
100 generated non-members is flagged, a fraction in [0, 1]). Nothing here decides anything:
the level, the p-value and the rates are the verdict's and the attacker section's own.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from panoramia.report.pooled import run_reading
from panoramia.report.verdict import PLAIN, plain_line
from panoramia.report.verdict_rule import DETECTED, finite_number

JSONDict = dict[str, Any]
FPR_KEY = "0.01"
"""The false-positive rate the paragraph reads the attacker at (1 false alarm in 100)."""


def _share(value: object) -> float | None:
    """A share in [0, 1], or None for anything else (an uploaded document's section is any
    JSON: nothing in it is trusted to be a number, a pair or in range)."""
    found = finite_number(value)
    return found if found is not None and 0.0 <= found <= 1.0 else None


def _end(pair: object, index: int) -> float | None:
    """One end of an interval ``[low, high]`` of shares; None where it is not one."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return None
    return _share(pair[index])


def _rates(attacker: JSONDict | None) -> tuple[float, float, bool] | None:
    """The attack's and the baseline's member rates at :data:`FPR_KEY` and whether the
    model's gain is shown beyond chance: both intervals kept and the attack's low end above
    the baseline's high end (as :func:`panoramia.report.attacker._gain` reads them; without
    both intervals nothing is shown); None where either rate is missing or not a share."""
    if not isinstance(attacker, dict):
        return None
    sides = [got if isinstance(got := attacker.get(name), dict) else {}
             for name in ("attack", "baseline")]  # fmt: skip
    rates, intervals = [], []
    for side in sides:
        found = got if isinstance(got := side.get("tpr_at_fpr"), dict) else {}
        spread = got if isinstance(got := side.get("tpr_at_fpr_interval"), dict) else {}
        rates.append(_share(found.get(FPR_KEY)))
        intervals.append(spread.get(FPR_KEY))
    attack, baseline = rates
    if attack is None or baseline is None:
        return None
    low, high = _end(intervals[0], 0), _end(intervals[1], 1)
    shown = low is not None and high is not None and attack > baseline and low > high
    return attack, baseline, shown


def in_hundred(share: float) -> str:
    """A share as "N in 100" (whole numbers; "under 1 in 100" for a share above 0 below 0.5 %)."""
    if 0 < share < 0.005:
        return "under 1 in 100"
    return f"{round(share * 100):.0f} in 100"


STRICT = "while wrongly flagging 1 in 100 look-alike records the audit generated"
"""The strict setting the paragraph reads the attacker at, in words."""


def own_records_words(
    attacker: JSONDict | None, detected: bool = False, nonmember_only: bool = False
) -> str:
    """Whether her own audited records can be picked out, from the attacker section: more
    often with the model (its gain beyond chance), more but not beyond what this audit can
    tell from chance, or no more. Where the run found a leak (``detected``) that this does
    not show, or one carried by non-member calls alone (``nonmember_only``: then no gain is
    claimed here), where it shows; where it did not find one, that a gain seen here is not
    enough to call it (empty where the section holds no member rates)."""
    found = _rates(attacker)
    if found is None:
        return ""
    attack, baseline, shown = found
    with_model = (
        f"an attacker with the model flags about {in_hundred(attack)} of your audited records "
        f"{STRICT}"
    )
    if shown and not nonmember_only:
        said = (
            f"Your own records can be picked out more often with the model: {with_model}; "
            f"without the model, {in_hundred(baseline)}."
        )
        if not detected:
            said += " That alone is not enough for the audit's test to call a leak."
        return said
    if attack > baseline:
        said = (
            f"Your own records: {with_model}, against {in_hundred(baseline)} without it, a "
            "difference this audit cannot tell from chance."
        )
    else:
        said = (
            f"Your own records are picked out no more often with the model than without it: "
            f"{with_model}; without the model, {in_hundred(baseline)}."
        )
    if detected and not nonmember_only:
        said += (
            " The leak the audit found shows in its other calls (records the model was not "
            "trained on, or the guesses an attacker is surest of), not at this strict setting."
        )
    return said


def chance_words(p: float) -> str:
    """A probability as a chance a person reads: "less than a 1 in 1,000 chance", "about a 1 in
    26 chance", "about a 6 in 10 chance", "a near-certain chance"."""
    if p < 0.001:
        return "less than a 1 in 1,000 chance"
    if p < 0.1:  # rounded down: a p just under 1 in 20 never reads "1 in 20" or more
        times = 1.0 / p
        digits = max(0, len(str(int(times))) - 2)
        rounded = math.floor(times / 10**digits) * 10**digits
        return f"about a 1 in {rounded:,} chance"
    if p >= 0.95:
        return "a near-certain chance"
    return f"about a {round(p * 10):.0f} in 10 chance"


def sureness_words(level: str, p: float | None, rate: float | None) -> str:
    """How sure the audit is, on one scale for every page: the chance that a model which
    never saw her records looks at least this leaky (the decision's p-value ``p``) beside the
    line the audit calls a leak at (``rate``, its false-alarm rate); empty where ``p`` is
    unknown."""
    if p is None or level == "inconclusive":
        return ""
    line = f"1 in {round(1 / rate):.0f}" if rate and 0 < rate < 1 else "1 in 20"
    chance = f"{chance_words(p)} that a model which never saw your records would look "
    calls = f"the audit calls a leak only below {line}"
    if level in DETECTED:
        return f"How sure: there is {chance}this leaky; {calls}."
    if level == "borderline":
        return f"How sure: not enough to call it: there is {chance}this leaky, and {calls}."
    return (
        f"How sure: there is {chance}at least this leaky, so nothing here stands out; {calls}. "
        "A small leak can still go unseen."
    )


def plain_paragraph(found: JSONDict | None, attacker: JSONDict | None = None) -> str | None:
    """One run's answer in plain words (:func:`panoramia.report.verdict.plain_line`), then
    whether her own records can be picked out (``attacker``) and how sure (``found``'s
    decision p); None where the verdict's level cannot be read."""
    answer = plain_line(found)
    if answer is None or not isinstance(found, dict):
        return None
    reading = run_reading(found)
    detected = found["level"] in DETECTED
    sure = sureness_words(found["level"], reading["p"], reading["rate"])
    nonmember_only = answer != PLAIN[found["level"]]  # plain_line said it points at no record
    parts = [answer, own_records_words(attacker, detected, nonmember_only), sure]
    return " ".join(part for part in parts if part)


def pooled_own_records(attackers: list[JSONDict | None]) -> str:
    """Whether her own records can be picked out over a group's runs: the median member
    rates with and without the model, and in how many runs the model's gain is beyond chance
    (empty where no run holds them)."""
    found = [rates for attacker in attackers if (rates := _rates(attacker)) is not None]
    if not found:
        return ""
    attack = median(rates[0] for rates in found)
    baseline = median(rates[1] for rates in found)
    shown = sum(1 for rates in found if rates[2])
    runs = f"{len(found)} run{'s' if len(found) != 1 else ''}"
    said = (
        f"over {runs}, an attacker with the model flags a median {in_hundred(attack)} of your "
        f"audited records {STRICT}; without the model, {in_hundred(baseline)}"
    )
    if shown:
        return (
            f"Your own records: {said}; the model's gain at this strict setting goes beyond "
            f"chance in {shown} of the {runs}."
        )
    return f"Your own records: {said}; in no run is the difference beyond what chance alone gives."


def pooled_paragraph(
    pooled: JSONDict | None, attackers: list[JSONDict | None], paired: JSONDict | None = None
) -> str | None:
    """A group of repeats' answer in plain words: the pooled ``plain`` line, her own records
    over the runs (``attackers``, one attacker section per target run), how sure (the pooled
    p-value against its false-alarm rate) and, with her control, :func:`paired_words` of
    ``paired``; None before the pooled verdict."""
    if not isinstance(pooled, dict) or not pooled.get("plain"):
        return None
    level = str(pooled.get("level"))
    p = pooled.get("p_value")
    rate = pooled.get("false_alarm_rate")
    sure = sureness_words(
        level,
        float(p) if isinstance(p, (int, float)) else None,
        float(rate) if isinstance(rate, (int, float)) else None,
    )
    parts = [str(pooled["plain"]), pooled_own_records(attackers), sure, paired_words(paired)]
    return " ".join(part for part in parts if part)


def paired_words(paired: JSONDict | None) -> str:
    """Her control beside her model, in plain words, from the paired difference's interval
    (``mean`` and ``interval`` of target − control over ``n`` seeds): above zero, holding
    zero, below it, or one pair only (empty without a control)."""
    if not isinstance(paired, dict):
        return ""
    control = "your control (trained the same way, never on these records)"
    interval = paired.get("interval")
    if not interval or None in interval:
        return f"Beside {control}: one pair of runs, too few to compare them."
    low, high = interval
    if low > 0:
        return (
            f"Beside {control}, your model reads higher over these seeds (a description, "
            "not a test of its own)."
        )
    if high < 0:
        return f"Beside {control}, your model reads lower than the control."
    return (
        f"Beside {control}, these runs cannot tell your model from one that never saw these "
        "records."
    )
