"""Aggregation of a quantity over repeated audits (docs/SPEC.md §2.5): mean and t-interval."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.errors import InputError
from panoramia.measure.jsonable import number


@dataclass(frozen=True)
class Aggregate:
    """Mean of n runs with a two-sided Student-t confidence interval (NaN bounds when n = 1)."""

    mean: float
    ci_low: float
    ci_high: float
    std: float
    """Sample standard deviation (ddof = 1); NaN when n = 1."""
    n: int
    confidence: float

    def to_dict(self) -> dict[str, object]:
        return {
            "mean": number(self.mean),
            "ci_low": number(self.ci_low),
            "ci_high": number(self.ci_high),
            "std": number(self.std),
            "n": self.n,
            "confidence": self.confidence,
        }


def aggregate(values: object, *, confidence: float = 0.95) -> Aggregate:
    """Mean ± t_{n−1, (1+confidence)/2} · s / √n over the finite ``values`` of repeated runs."""
    runs = np.asarray(values, dtype=np.float64).ravel()
    if runs.size == 0 or not np.isfinite(runs).all():
        raise InputError("runs: need at least one value, all finite")
    mean = float(runs.mean())
    if runs.size == 1:
        return Aggregate(mean, float("nan"), float("nan"), float("nan"), 1, confidence)
    std = float(runs.std(ddof=1))
    from scipy.special import stdtrit  # Student's t quantile, without scipy.stats' import

    quantile = float(stdtrit(runs.size - 1, (1.0 + confidence) / 2.0))
    half = quantile * std / np.sqrt(runs.size)
    return Aggregate(mean, mean - half, mean + half, std, int(runs.size), confidence)
