"""Model selection by the validation lower bound (never by the audit set).

A candidate distinguisher is scored on the validation split (members vs non-members) and rated
by the best θ_lb of its precision sweep there; the candidate with the largest bound wins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.measure import ThresholdStrategy, sweep

LOSS_FLOOR = 1e-8
"""Losses are floored here before their log (a side feature of the network distinguishers)."""


@dataclass
class CandidateRecord:
    """One candidate of a model selection: its settings and its validation θ_lb."""

    params: dict
    validation_theta_lb: float


def validation_lower_bound(
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    thresholds: str = "grid:100",
    confidence: float = 0.95,
) -> float:
    """max_τ θ_lb of ``scores`` (probabilities, higher = member) on a validation split."""
    strategy = ThresholdStrategy.parse(thresholds)
    alpha = (1.0 - confidence) / strategy.n_tests(membership.size)
    result = sweep(
        np.asarray(scores, np.float64), np.asarray(membership, np.int8),
        strategy=strategy, alpha=alpha,
    )  # fmt: skip
    return result.best.theta_lb
