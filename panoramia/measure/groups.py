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

Scores are probabilities of "member" (1 = member, the positive class), one row per member of
the ensemble: shape (k, m). Shares are fractions of a group's audited members in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.errors import InputError
from panoramia.measure.null import paired_members


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


def flag_threshold(scores: np.ndarray, weights: np.ndarray, fpr: float) -> float:
    """The score above which at most ``fpr`` of the weighted non-members' weight falls: the
    smallest sorted score whose cumulative weight reaches (1 − fpr) of the total (+∞ when no
    weight). ``scores`` (n,), ``weights`` (n,) non-negative counts."""
    total = float(weights.sum())
    if total <= 0:
        return float("inf")
    order = np.argsort(scores, kind="stable")
    cumulative = np.cumsum(weights[order])
    index = int(np.searchsorted(cumulative, (1.0 - fpr) * total - 1e-9, side="left"))
    return float(scores[order][min(index, scores.size - 1)])


def _shares(
    codes: np.ndarray, n_groups: int, flagged: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Per group code: the weighted share of its slots flagged (NaN where it has no weight)."""
    keep = codes >= 0
    counted = np.bincount(codes[keep], weights=weights[keep], minlength=n_groups)
    hit = np.bincount(codes[keep], weights=(weights * flagged)[keep], minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return hit / counted


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
) -> list[GroupTest]:
    """Test each group of member slots against the baseline's reading.

    ``membership``: (m,) 0/1 (1 = member); ``attack_members``, ``baseline_members``: (k, m)
    scores of the ensembles' members in seed order; ``groups``: per group, the indices of its
    member slots (groups of one column may not overlap; columns may); ``tested``: which groups
    enter the family (the others get p None); ``fpr``: the share of generated non-members each
    side's threshold flags. Deterministic in ``seed``."""
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
    # One code array per set of disjoint groups (a column's values), so that one bincount
    # per set gives every share of a draw.
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
    nonmembers = ~labels

    def shares(members: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for side in (attack, baseline):
            scores = side[members].mean(axis=0)
            threshold = flag_threshold(scores[nonmembers], weights[nonmembers], fpr)
            flagged = (scores > threshold).astype(np.float64)
            found = np.empty(n_groups)
            for codes, ids in layers:
                found[ids] = _shares(codes, len(ids), flagged, weights.astype(np.float64))
            out.append(found)
        return out[0], out[1]

    share, base = shares(np.arange(k), np.ones(m, np.int64))
    observed = share - base
    rng = np.random.default_rng(seed)
    drawn_share = np.empty((draws, n_groups))
    drawn_diff = np.empty((draws, n_groups))
    for b in range(draws):
        weights = np.bincount(rng.integers(0, m, m), minlength=m)
        members = rng.integers(0, k, k)
        a, s = shares(members, weights)
        drawn_share[b] = np.where(np.isnan(a), share, a)
        drawn_diff[b] = np.where(np.isnan(a - s), observed, a - s)
    sizes = np.array([max(len(slots), 1) for slots in groups], dtype=np.float64)
    spread = np.maximum(drawn_diff.std(axis=0), 1.0 / (2.0 * sizes))
    statistic = observed / spread
    centred = (drawn_diff - observed) / spread
    family = np.asarray(tested, dtype=bool)
    maxima = centred[:, family].max(axis=1) if family.any() else np.zeros(draws)
    low_q, high_q = np.quantile(drawn_share, [false_alarm_rate, 1 - false_alarm_rate], axis=0)
    critical = float(np.quantile(maxima, 1 - false_alarm_rate))
    results = []
    for g in range(n_groups):
        p = float((1 + np.sum(maxima >= statistic[g])) / (draws + 1)) if family[g] else None
        results.append(
            GroupTest(
                share=float(share[g]),
                baseline_share=float(base[g]),
                interval=(float(low_q[g]), float(high_q[g])),
                p=p,
                stands_out=p is not None and p <= false_alarm_rate,
                detectable=float(min(1.0, critical * spread[g])) if family[g] else None,
            )
        )
    return results
