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
