"""Groups of members tested against chance (docs/SPEC.md §3, ``exposure``; pre-registered
2026-11-27).

A group *stands out* when the attack flags its audited members more than the baseline (the
same distinguisher without the model: what the data alone gives away) flags the same members,
each side at its own threshold of the same false-positive rate on the generated non-members,
by more than the draws of the in-audit null allow for any of the groups tested. The draws
resample, as :func:`panoramia.measure.null.null_test` does, the audit slots with replacement
and the ensemble's k members with replacement, attack and baseline together, and recompute
both thresholds and every group's difference; the family-wise error over the groups is held
by the single-step max-T adjustment (Westfall and Young 1993; Romano and Wolf 2005).

Two statistics are tested, each in its own max-T family, and ``statistic`` says which one sets
``p`` and ``stands_out``: ``share``, the difference of the shares flagged at one false-positive
rate, and ``rank``, the difference of the group's AUC against the non-members (the mean over
its members of the weighted share of non-members scored below them, ties counted half): the
share flagged averaged over every false-positive rate, which uses every member–non-member pair
where a small group holds few flags at one low rate (docs/SPEC.md §3, ``exposure``).

Scores are probabilities of "member" (1 = member, the positive class), one row per member of
the ensemble: shape (k, m). Shares are fractions of a group's audited members in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from panoramia.errors import InputError
from panoramia.measure.null import paired_members

STATISTICS = ("share", "rank")
"""The group statistics, in the order :class:`GroupTest`'s ``tests`` holds them."""


@dataclass(frozen=True)
class StatisticTest:
    """One statistic's family-wise adjusted reading of a group."""

    p: float | None
    """Max-T adjusted p-value of "no more than the baseline"; None for an untested group."""
    stands_out: bool
    """p ≤ α."""
    detectable: float | None
    """The smallest attack − baseline difference (the statistic's unit: a share of the
    group's members, or AUC) that would have stood out at this size; None when untested."""


@dataclass(frozen=True)
class GroupTest:
    """One group's shares, interval and family-wise adjusted p-value."""

    share: float
    """The attack's share of the group's members flagged (at its own threshold)."""
    baseline_share: float
    """The baseline's share of the same members flagged (at its own threshold)."""
    interval: tuple[float, float]
    """The 1 − 2α percentile interval of ``share`` over the draws."""
    p: float | None
    """Max-T adjusted p-value of "no more than the baseline"; None for an untested group."""
    stands_out: bool
    """p ≤ α."""
    detectable: float | None = None
    """The smallest share − baseline_share (a fraction of the group's members) that would
    have stood out at this size: the max-T's (1 − α) quantile times the group's spread of
    the draws; None for an untested group. Descriptive: it says what this audit could see."""
    auc: float = float("nan")
    """The attack's AUC of the group's members against all non-members (0.5: no better than a
    coin; the ``rank`` statistic's reading)."""
    baseline_auc: float = float("nan")
    """The baseline's AUC of the same members against the same non-members."""
    tests: dict[str, StatisticTest] | None = None
    """Each statistic's reading by name (``share``, ``rank``); ``p``, ``stands_out`` and
    ``detectable`` repeat the chosen one's."""


def flag_threshold(scores: np.ndarray, weights: np.ndarray, fpr: float) -> float:
    """The score above which at most ``fpr`` of the weighted non-members' weight falls: the
    smallest sorted score whose cumulative weight reaches (1 − fpr) of the total (+∞ when no
    weight). ``scores`` (n,), ``weights`` (n,) non-negative counts."""
    return _threshold(*_sorted_with_weight(scores, weights), fpr)


def _sorted_with_weight(
    scores: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, npt.NDArray[np.float64]]:
    """``scores`` sorted (stable) and the cumulative weight before each, from 0: shapes (n,)
    and (n + 1,); the last entry is the total weight."""
    order = np.argsort(scores, kind="stable")
    cumulative = np.concatenate([[0.0], np.cumsum(weights[order], dtype=np.float64)])
    return scores[order], cumulative


def _threshold(sorted_scores: np.ndarray, cumulative: np.ndarray, fpr: float) -> float:
    """:func:`flag_threshold` of scores already sorted with their cumulative weight."""
    total = float(cumulative[-1])
    if total <= 0:
        return float("inf")
    index = int(np.searchsorted(cumulative[1:], (1.0 - fpr) * total - 1e-9, side="left"))
    return float(sorted_scores[min(index, sorted_scores.size - 1)])


def _below_levels(
    scores: np.ndarray, sorted_negative: np.ndarray, cumulative: np.ndarray
) -> npt.NDArray[np.float64]:
    """Per slot: the weighted share of the non-member slots scored below it, ties counted half
    (a member's contribution to the AUC). ``scores`` (m,); ``sorted_negative`` and
    ``cumulative``: the non-members' scores sorted with their cumulative weight
    (:func:`_sorted_with_weight`); 0.5 everywhere when the non-members hold no weight. The
    slots are looked up in sorted order, which numpy's search walks in one pass."""
    total = float(cumulative[-1])
    if total <= 0:
        return np.full(scores.size, 0.5)
    order = np.argsort(scores, kind="stable")
    queries = scores[order]
    low = cumulative[np.searchsorted(sorted_negative, queries, side="left")]
    high = cumulative[np.searchsorted(sorted_negative, queries, side="right")]
    levels: npt.NDArray[np.float64] = np.empty(scores.size)
    levels[order] = (low + 0.5 * (high - low)) / total
    return levels


def _layers(groups: list[np.ndarray], m: int) -> list[tuple[np.ndarray, list[int]]]:
    """One code array (m,) per set of disjoint groups (a column's values), with the groups it
    codes in order, so that one bincount per set gives every share of a draw."""
    layers: list[tuple[np.ndarray, list[int]]] = []
    for index, slots in enumerate(groups):
        for codes, in_layer in layers:
            if np.all(codes[slots] < 0):
                codes[slots] = len(in_layer)
                in_layer.append(index)
                break
        else:
            codes = np.full(m, -1, np.int64)
            codes[slots] = 0
            layers.append((codes, [index]))
    return layers


def _readings(
    sides: tuple[np.ndarray, np.ndarray],
    weights: np.ndarray,
    nonmembers: np.ndarray,
    layers: list[tuple[np.ndarray, list[int]]],
    n_groups: int,
    fpr: float,
) -> np.ndarray:
    """(2 sides, 2 statistics, groups): each side's weighted share of a group's slots flagged
    at its own ``fpr`` threshold, and the group's AUC against the non-members (NaN where a
    group has no weight). ``sides``: the attack's and the baseline's scores (m,); ``weights``
    (m,) counts of each slot. A group's weight, the shares' denominator, is counted once per
    layer for both sides and statistics."""
    counts = weights.astype(np.float64)
    per_slot = []  # (side, statistic) → (m,) flag or level of each slot
    for scores in sides:
        sorted_negative, cumulative = _sorted_with_weight(scores[nonmembers], counts[nonmembers])
        threshold = _threshold(sorted_negative, cumulative, fpr)
        per_slot.append(((scores > threshold).astype(np.float64),
                         _below_levels(scores, sorted_negative, cumulative)))  # fmt: skip
    out = np.empty((2, 2, n_groups))
    for codes, ids in layers:
        keep = codes >= 0
        kept, kept_counts = codes[keep], counts[keep]
        counted = np.bincount(kept, weights=kept_counts, minlength=len(ids))
        with np.errstate(invalid="ignore", divide="ignore"):
            for side_index, readings in enumerate(per_slot):
                for statistic_index, values in enumerate(readings):
                    hit = np.bincount(kept, weights=kept_counts * values[keep], minlength=len(ids))
                    out[side_index, statistic_index, ids] = hit / counted
    return out


def groups_against_chance(
    membership: object,
    attack_members: object,
    baseline_members: object,
    groups: list[np.ndarray],
    *,
    tested: list[bool],
    fpr: float,
    draws: int = 999,
    false_alarm_rate: float = 0.05,
    seed: int = 0,
    statistic: str = "share",
) -> list[GroupTest]:
    """Test each group of member slots against the baseline's reading.

    ``membership``: (m,) 0/1 (1 = member); ``attack_members``, ``baseline_members``: (k, m)
    scores of the ensembles' members in seed order; ``groups``: per group, the indices of its
    member slots (groups of one column may not overlap; columns may); ``tested``: which groups
    enter the family (the others get p None); ``fpr``: the share of generated non-members each
    side's threshold flags; ``statistic``: the one (of :data:`STATISTICS`) that sets ``p``
    and ``stands_out``, both being read. Deterministic in ``seed``."""
    if statistic not in STATISTICS:
        raise InputError(f"group test: statistic must be one of {', '.join(STATISTICS)}")
    labels = np.asarray(membership).astype(bool)
    attack, baseline = paired_members(attack_members, baseline_members, labels.size, "group test")
    if len(tested) != len(groups):
        raise InputError("group test: one 'tested' flag per group")
    k: int
    m: int
    k, m = attack.shape
    n_groups = len(groups)
    if not n_groups:
        return []
    layers = _layers(groups, m)
    nonmembers = ~labels

    def readings(members: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return _readings((attack[members].mean(axis=0), baseline[members].mean(axis=0)),
                         weights, nonmembers, layers, n_groups, fpr)  # fmt: skip

    observed_readings = readings(np.arange(k), np.ones(m, np.int64))
    share, base = observed_readings[0, 0], observed_readings[1, 0]
    observed = observed_readings[0] - observed_readings[1]  # (statistic, group)
    rng = np.random.default_rng(seed)
    drawn_share = np.empty((draws, n_groups))
    drawn_diff = np.empty((draws, 2, n_groups))
    for b in range(draws):
        weights = np.bincount(rng.integers(0, m, m), minlength=m)
        members = rng.integers(0, k, k)
        drawn = readings(members, weights)
        drawn_share[b] = np.where(np.isnan(drawn[0, 0]), share, drawn[0, 0])
        difference = drawn[0] - drawn[1]
        drawn_diff[b] = np.where(np.isnan(difference), observed, difference)
    sizes = np.array([max(len(slots), 1) for slots in groups], dtype=np.float64)
    family = np.asarray(tested, dtype=bool)
    low_q, high_q = np.quantile(drawn_share, [false_alarm_rate, 1 - false_alarm_rate], axis=0)
    by_statistic = [
        _max_t(observed[i], drawn_diff[:, i], 1.0 / (2.0 * sizes), family, false_alarm_rate)
        for i in range(len(STATISTICS))
    ]
    chosen = STATISTICS.index(statistic)
    results = []
    for g in range(n_groups):
        tests = {name: found[g] for name, found in zip(STATISTICS, by_statistic, strict=True)}
        pick = by_statistic[chosen][g]
        results.append(
            GroupTest(
                share=float(share[g]),
                baseline_share=float(base[g]),
                interval=(float(low_q[g]), float(high_q[g])),
                p=pick.p,
                stands_out=pick.stands_out,
                detectable=pick.detectable,
                auc=float(observed_readings[0, 1, g]),
                baseline_auc=float(observed_readings[1, 1, g]),
                tests=tests,
            )
        )
    return results


def _max_t(
    observed: np.ndarray,
    drawn: np.ndarray,
    floor: np.ndarray,
    family: np.ndarray,
    false_alarm_rate: float,
) -> list[StatisticTest]:
    """The single-step max-T reading of one statistic: ``observed`` (groups,) differences,
    ``drawn`` (draws, groups) their draws, ``floor`` (groups,) the least spread a group's
    draws are given, ``family`` which groups are tested."""
    draws = drawn.shape[0]
    spread = np.maximum(drawn.std(axis=0), floor)
    statistic = observed / spread
    centred = (drawn - observed) / spread
    maxima = centred[:, family].max(axis=1) if family.any() else np.zeros(draws)
    critical = float(np.quantile(maxima, 1 - false_alarm_rate))
    out = []
    for g in range(observed.size):
        p = float((1 + np.sum(maxima >= statistic[g])) / (draws + 1)) if family[g] else None
        out.append(
            StatisticTest(
                p=p,
                stands_out=p is not None and p <= false_alarm_rate,
                detectable=float(min(1.0, critical * spread[g])) if family[g] else None,
            )
        )
    return out
