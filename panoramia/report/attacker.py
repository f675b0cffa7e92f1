"""What an attacker gains, in plain terms: the report's ``attacker`` section.

For the attack (the model's losses) and the baseline (the same distinguisher without the
model: what one learns from the data alone), on the audit set of real members (the positive
class) and generated non-members: the ROC's AUC, TPR at 0.1 % and 1 % FPR where the counts
resolve them (None elsewhere), the membership advantage max(TPR − FPR), and the precision of
the records each is surest about. The "surest" fraction is the share of the audit set the
attack's best operating point in the paper's game flags, at most 10 %; both sides are read at
that same fraction, so the sentence compares like with like.
"""

from __future__ import annotations

import math

import numpy as np

from panoramia.measure import Measurement, SweepResult
from panoramia.measure.jsonable import JSONDict, number
from panoramia.measure.roc import resolvable_tpr, roc_intervals

MOST_FLAGGED = 0.1
"""The share of the audit set the sentence reads at most: an attack whose best point flags
more is read at its surest 10 % (at least ``MIN_FLAGGED`` records), where "surest" means
something."""
MIN_FLAGGED = 10
LOW_FPRS = ("0.001", "0.01")
"""The FPRs whose TPR the section reports (keys as ``RocSummary.to_dict`` writes them)."""


def top_precision(scores: np.ndarray, membership: np.ndarray, count: int) -> float:
    """The share of members among the ``count`` highest ``scores`` (ties broken by order)."""
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")[: max(count, 1)]
    return float(np.asarray(membership)[order].mean())


def _pair(found: tuple[float, float] | None) -> list[float | int | bool | None] | None:
    return None if found is None else [number(found[0]), number(found[1])]


def _side(
    result: SweepResult, scores: np.ndarray, membership: np.ndarray, count: int, *, draws: int,
    level: float, seed: int, pool: np.ndarray | None = None,
) -> JSONDict:  # fmt: skip
    """One side's terms, each with its percentile bootstrap interval over the audit slots
    (:func:`panoramia.measure.roc.roc_intervals`); TPR at an FPR wherever at least one
    generated non-member could be wrongly flagged at it (its interval says how sure), the
    false positives read on the audit's generated non-members and the ``pool``'s scores."""
    roc = result.roc.to_dict()
    rates = tuple(float(fpr) for fpr in LOW_FPRS)
    auc = roc_intervals(scores, membership, fprs=(), draws=draws, level=level, seed=seed)
    fp_scores, fp_membership = np.asarray(scores, dtype=float), np.asarray(membership)
    if pool is not None and pool.size:  # the pool feeds the false positives, nothing else
        fp_scores = np.r_[fp_scores, np.asarray(pool, dtype=float)]
        fp_membership = np.r_[fp_membership, np.zeros(pool.size, np.int64)]
    intervals = roc_intervals(
        fp_scores, fp_membership, fprs=rates, draws=draws, level=level, seed=seed
    )
    return {
        "auc": roc["auc"],
        "auc_interval": [number(auc.auc[0]), number(auc.auc[1])],
        "fpr_negatives": int((fp_membership == 0).sum()),
        "tpr_at_fpr": {
            key: number(resolvable_tpr(fp_scores, fp_membership, rate))
            for key, rate in zip(LOW_FPRS, rates, strict=True)
        },
        "tpr_at_fpr_interval": {
            key: _pair(intervals.tpr_at_fpr[rate])
            for key, rate in zip(LOW_FPRS, rates, strict=True)
        },
        "advantage": roc.get("advantage"),
        "top_precision": number(top_precision(scores, membership, count)),
    }


def attacker_section(
    measurement: Measurement,
    membership: np.ndarray,
    attack_scores: np.ndarray,
    baseline_scores: np.ndarray,
    two_sided: JSONDict | None = None,
    *,
    draws: int = 999,
    level: float = 0.9,
    seed: int = 0,
    pool: tuple[np.ndarray, np.ndarray] | None = None,
) -> JSONDict:
    """The ``attacker`` section: both sides' terms with their ``level`` intervals (``draws``
    bootstrap draws, seeded), the flagged fraction, the member-side sentence first and the
    sentence; with the two-sided game's section (where it is played), its guesses in words
    too. ``pool``: the attack's and the baseline's scores of the extra generated non-members
    (the synthetic stage's pool), read on the false-positive side of TPR at FPR only."""
    m = max(int(membership.size), 1)
    most = max(math.ceil(MOST_FLAGGED * m), min(MIN_FLAGGED, m))
    count = min(max(int(measurement.attack.best.r), 1), most)
    fraction = count / m
    attack_pool, baseline_pool = pool if pool is not None else (None, None)
    attack = _side(measurement.attack, attack_scores, membership, count, draws=draws,
                   level=level, seed=seed, pool=attack_pool)  # fmt: skip
    baseline = _side(measurement.baseline, baseline_scores, membership, count, draws=draws,
                     level=level, seed=seed, pool=baseline_pool)  # fmt: skip
    words = sentence(fraction, attack["top_precision"], baseline["top_precision"])
    section = {
        "positive_class": "member",
        "interval_level": level,
        "flagged_fraction": number(fraction),
        "flagged": count,
        "attack": attack,
        "baseline": baseline,
        "member_side": member_side_sentence(
            attack, baseline, measurement.eps_tilde, level, int(membership.sum())
        ),
    }
    if two_sided and "eps_tilde" in two_sided:
        guesses = {side: _guesses(two_sided[side]) for side in ("attack", "baseline")}
        section["two_sided"] = guesses
        words += " " + two_sided_sentence(guesses["attack"], guesses["baseline"], m)
    section["sentence"] = words
    return section


def _guesses(point: JSONDict) -> JSONDict:
    """A two-sided best point's calls: member and non-member guesses and how many are right."""
    return {
        "member_guesses": int(point["member_guesses"]),
        "member_correct": int(point["member_correct"]),
        "nonmember_guesses": int(point["nonmember_guesses"]),
        "nonmember_correct": int(point["nonmember_correct"]),
    }


def _calls(guesses: JSONDict) -> tuple[int, int]:
    made = guesses["member_guesses"] + guesses["nonmember_guesses"]
    return made, guesses["member_correct"] + guesses["nonmember_correct"]


def two_sided_sentence(attack: JSONDict, baseline: JSONDict, m: int) -> str:
    """E.g. "Allowed to call records non-members too (the two-sided game), it makes 213 calls
    (6 %) and is right every time; without the model, 333 of 498 (6.7 times in 10)"."""
    made, right = _calls(attack)
    base_made, base_right = _calls(baseline)
    if not made:
        return "Allowed to call records non-members too (the two-sided game), it makes no call."
    kinds = [
        name
        for name, key in (("members", "member_guesses"), ("non-members", "nonmember_guesses"))
        if attack[key]
    ]
    share = made / max(m, 1)
    shown = percent_share(share)
    accuracy = (
        "every time" if right == made else f"{right} of {made} times ({in_ten(right / made)})"
    )
    without = (
        f"{base_right} of {base_made} ({in_ten(base_right / base_made)})"
        if base_made
        else "it makes no call"
    )
    return (
        f"Allowed to call records non-members too (the two-sided game, the figure quoted), it "
        f"calls {made} records ({shown}) {' and '.join(kinds)} and is right {accuracy}; "
        f"without the model, {without}."
    )


def percent_share(share: float) -> str:
    """A share of records as the page shows it: whole percents from 10 %, one decimal below."""
    return f"{share:.0%}" if share >= 0.1 else f"{share:.1%}"


def in_ten(share: float) -> str:
    """A share as "N times in 10" (one decimal where it matters)."""
    tenths = share * 10
    shown = f"{tenths:.0f}" if abs(tenths - round(tenths)) < 0.05 else f"{tenths:.1f}"
    return f"{shown} times in 10"


def sentence(fraction: float, attack: float | None, baseline: float | None) -> str:
    """E.g. "Flagging the 3 % of records it is surest about, an attacker with the model is
    right 9 times in 10; without the model, 6.5 times in 10." (members are half the set)."""
    if attack is None or baseline is None:
        return ""
    share = percent_share(fraction)
    return (
        f"Flagging the {share} of records it is surest about as members, an attacker with the "
        f"model is right {in_ten(attack)}; without the model, {in_ten(baseline)} (half the "
        "audited records are members, so guessing is right 5 times in 10)."
    )


def _rate_with_interval(value: float | None, interval: list[float | None] | None) -> str:
    if value is None:
        return "too few records to say"
    if interval and None not in interval:
        return f"{value:.1%} ({interval[0]:.1%}–{interval[1]:.1%})"
    return f"{value:.1%}"


def _gain(attack: JSONDict, baseline: JSONDict, key: str) -> str:
    """Whether the model adds anything to what the data alone gives an attacker at FPR
    ``key``: a sentence where it does not (its rate at most the baseline's, or their intervals
    overlap), else empty."""
    rate, base = attack["tpr_at_fpr"].get(key), baseline["tpr_at_fpr"].get(key)
    if rate is None or base is None:
        return ""
    if rate <= base:
        return " The model adds nothing here: without it, an attacker does as well."
    spread = attack["tpr_at_fpr_interval"].get(key)
    base_spread = baseline["tpr_at_fpr_interval"].get(key)
    read = bool(spread and base_spread and None not in spread and None not in base_spread)
    if read and spread[0] <= base_spread[1]:
        return (
            " The two intervals overlap: this audit cannot tell the model's gain from what "
            "the data alone gives."
        )
    return ""


def member_side_sentence(
    attack: JSONDict, baseline: JSONDict, eps_member: float, level: float, members: int
) -> str:
    """What a contributor asks first — can someone find *my* rows — from the member-side
    figures: TPR at 1 % FPR with and without the model (``level`` intervals) and the paper's
    member-only ε̃ as odds."""
    key = "0.01"
    with_model = _rate_with_interval(
        attack["tpr_at_fpr"].get(key), attack["tpr_at_fpr_interval"].get(key)
    )
    without = _rate_with_interval(
        baseline["tpr_at_fpr"].get(key), baseline["tpr_at_fpr_interval"].get(key)
    )
    odds = (
        f"In the game of member calls only (the paper's), the model multiplies the odds of a "
        f"right member call by e^{eps_member:.2f} ≈ {math.exp(min(eps_member, 20.0)):.2f}×."
    )
    if attack["tpr_at_fpr"].get(key) is None:
        return (
            "Finding your records: this audit holds too few generated (synthetic) non-members to "
            f"read how many of your records an attacker picks out at 1 false alarm in 100. {odds}"
        )
    return (
        "Finding your records: wrongly flagging 1 in 100 generated (synthetic) non-members, an "
        "attacker with the model "
        f"picks out {with_model} of your {members:,} audited records; without the model, "
        f"{without} "
        f"({level:.0%} intervals).{_gain(attack, baseline, key)} In the game of member calls "
        "only (the paper's), the model "
        f"multiplies the odds of a right member call by e^{eps_member:.2f} ≈ "
        f"{math.exp(min(eps_member, 20.0)):.2f}×."
    )
