"""ROC summaries of a membership score (docs/SPEC.md §3): AUC and TPR at small FPRs where
resolvable.

The curve is read off the counts the sweep already has (scores sorted once): at every distinct
score τ, TPR = v/P and FPR = (r − v)/N for the rule score >= τ. AUC is the trapezoid over
those points, i.e. the Mann–Whitney statistic with ties counted one half (as scikit-learn).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.measure.jsonable import number
from panoramia.measure.thresholds import SortedScores

DEFAULT_FPRS = (1e-3, 1e-2, 1e-1)
MIN_NEGATIVES_PER_FPR = 10
"""An FPR α is resolvable when α · (number of negatives) ≥ 10, i.e. α ≥ 10 / n_negative."""


@dataclass(frozen=True)
class RocSummary:
    """AUC and TPR at fixed FPRs of scores against membership (member = positive class)."""

    auc: float
    tpr_at_fpr: dict[float, float | None]
    """TPR at each FPR (largest TPR with FPR ≤ α); None where α < 10 / n_negative."""
    n_positive: int
    n_negative: int
    advantage: float = 0.0
    """Membership advantage: the largest TPR − FPR over thresholds (0: no better than a
    coin; 1: every member told from every non-member)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "auc": number(self.auc),
            "advantage": number(self.advantage),
            "tpr_at_fpr": {f"{fpr:g}": number(tpr) for fpr, tpr in self.tpr_at_fpr.items()},
            "n_positive": self.n_positive,
            "n_negative": self.n_negative,
        }


def roc_from_sorted(
    sorted_scores: SortedScores, *, fprs: tuple[float, ...] = DEFAULT_FPRS
) -> RocSummary:
    """ROC summary from scores already sorted with their membership prefix sums."""
    _, r, v = sorted_scores.distinct
    n_positive = sorted_scores.n_positive
    n_negative = sorted_scores.m - n_positive
    # Distinct thresholds ascend, so guesses shrink: reverse, and start at the empty guess (0, 0).
    tpr = np.concatenate(([0.0], v[::-1] / n_positive))
    fpr = np.concatenate(([0.0], (r - v)[::-1] / n_negative))
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    tpr_at: dict[float, float | None] = {}
    for alpha in fprs:
        resolvable = alpha * n_negative >= MIN_NEGATIVES_PER_FPR
        tpr_at[alpha] = float(tpr[fpr <= alpha].max()) if resolvable else None
    return RocSummary(
        auc=auc,
        tpr_at_fpr=tpr_at,
        n_positive=n_positive,
        n_negative=n_negative,
        advantage=float(np.max(tpr - fpr)),
    )


def roc_summary(
    scores: np.ndarray, membership: np.ndarray, *, fprs: tuple[float, ...] = DEFAULT_FPRS
) -> RocSummary:
    """Summarise the ROC curve of ``scores`` (higher = member) for 0/1 ``membership``."""
    return roc_from_sorted(SortedScores.build(scores, membership), fprs=fprs)


@dataclass(frozen=True)
class RocIntervals:
    """Percentile bootstrap intervals of an ROC summary's figures (the audit slots resampled
    with replacement; members the positive class)."""

    auc: tuple[float, float]
    tpr_at_fpr: dict[float, tuple[float, float] | None]
    """Per FPR: [low, high] of the TPR at FPR ≤ that rate; None where unresolvable."""
    level: float
    """The intervals' coverage, e.g. 0.9."""


def _weighted_curve(
    order: np.ndarray, ends: np.ndarray, labels: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(TPR, FPR) at every distinct score, descending, from (0, 0), under slot weights."""
    w = weights[order].astype(np.float64)
    positive = np.cumsum(w * labels[order])[ends]
    negative = np.cumsum(w * (1 - labels[order]))[ends]
    tpr = np.concatenate(([0.0], positive / max(positive[-1], 1e-12)))
    fpr = np.concatenate(([0.0], negative / max(negative[-1], 1e-12)))
    return tpr, fpr


def resolvable_tpr(
    scores: np.ndarray, membership: np.ndarray, fpr_at: float, *, min_false_positives: int = 1
) -> float | None:
    """TPR at FPR ≤ ``fpr_at`` (the largest such), or None when fewer than
    ``min_false_positives`` non-members could be wrongly flagged at that rate."""
    labels = np.asarray(membership).astype(np.int64)
    if fpr_at * int((labels == 0).sum()) < min_false_positives or not labels.any():
        return None
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    values = np.asarray(scores, dtype=float)[order]
    ends = np.r_[np.flatnonzero(np.diff(values) != 0), values.size - 1]
    tpr, fpr = _weighted_curve(order, ends, labels, np.ones(labels.size))
    return float(tpr[fpr <= fpr_at + 1e-12].max())


def roc_intervals(
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    fprs: tuple[float, ...],
    draws: int = 999,
    level: float = 0.9,
    seed: int = 0,
    min_false_positives: int = 1,
) -> RocIntervals:
    """Percentile bootstrap intervals (``level`` coverage) of the AUC and of TPR at each of
    ``fprs`` (None where fewer than ``min_false_positives`` non-members could be flagged),
    resampling the slots with replacement. Deterministic in ``seed``."""
    values = np.asarray(scores, dtype=float)
    labels = np.asarray(membership).astype(np.int64)
    m = values.size
    order = np.argsort(-values, kind="stable")
    ranked = values[order]
    ends = np.r_[np.flatnonzero(np.diff(ranked) != 0), m - 1]
    n_negative = int((labels == 0).sum())
    rng = np.random.default_rng(seed)
    aucs = np.empty(draws)
    tprs = np.empty((draws, len(fprs)))
    for b in range(draws):
        weights = np.bincount(rng.integers(0, m, m), minlength=m)
        tpr, fpr = _weighted_curve(order, ends, labels, weights)
        aucs[b] = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
        for j, rate in enumerate(fprs):
            tprs[b, j] = tpr[fpr <= rate + 1e-12].max()
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(aucs, [tail, 1 - tail])
    intervals: dict[float, tuple[float, float] | None] = {}
    for j, rate in enumerate(fprs):
        if rate * n_negative < min_false_positives:
            intervals[rate] = None
            continue
        lo, hi = np.quantile(tprs[:, j], [tail, 1 - tail])
        intervals[rate] = (float(lo), float(hi))
    return RocIntervals(auc=(float(low), float(high)), tpr_at_fpr=intervals, level=level)
