"""Exact privacy of tuned mechanisms whose base output law is known (the validity harness).

The tuner releases the best of K runs; with the runs' score laws F (dataset X) and G (X'),
P[Y ≤ y] = φ_K(F(y)) under X, φ_K(G(y)) under X' (φ_K the PGF of K, ⊥ with mass φ_K(0) when
K can be 0). Two bases are exact here:

- a discrete base with ordered outputs (worst first), e.g. seed 000's Example 1: the tuned
  law is P[Y = y] = φ_K(F(≤ y)) − φ_K(F(< y));
- a one-dimensional Gaussian base N(0, 1) (X) vs N(μ, 1) (X') whose score is the output itself
  (monotone): tuned densities φ_K'(Φ(y)) ϕ(y) and φ_K'(Φ(y − μ)) ϕ(y − μ), integrated on a
  fine grid. This is also seed 000's "GDP-reduced" estimate of a μ-GDP base, which is not a
  certified bound: a score that is not monotone in one Gaussian statistic can leak more.

ε(δ) is the symmetric one: the larger of the two directions (X vs X', X' vs X).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from panoramia.accounting.run_count import RunCount

GAUSSIAN_GRID_STEP = 2e-4
"""Spacing of the output grid for the Gaussian base (the integrand is smooth)."""
GAUSSIAN_GRID_TAIL = 12.0
"""The grid covers [−tail, μ + tail]; Φ(−12) ≈ 2e-33 leaves nothing outside."""
EPSILON_SEARCH_MAX = 60.0


def tuned_output_law(probabilities: np.ndarray, runs: RunCount) -> npt.NDArray[np.float64]:
    """The law of the tuned release for a base with outputs ordered worst → best.

    ``probabilities``: shape (n,), the base law. Returns shape (n + 1,): P[⊥] (K = 0) first,
    then P[Y = y_i]."""
    cumulative = np.r_[0.0, np.cumsum(np.asarray(probabilities, dtype=float))]
    cumulative[-1] = 1.0
    tuned = np.asarray(runs.pgf(cumulative), dtype=float)
    law: npt.NDArray[np.float64] = np.r_[tuned[0], np.diff(tuned)]
    return law


def epsilon_for_delta(delta_of: Callable[[float], float], delta: float) -> float:
    """The smallest ε ≥ 0 with δ(ε) ≤ ``delta`` for a non-increasing profile ``delta_of``, by
    bisection to 1e-9 (``delta`` = 0 gives the pure ε; inf when above ``EPSILON_SEARCH_MAX``)."""
    if delta_of(0.0) <= delta:
        return 0.0
    low, high = 0.0, EPSILON_SEARCH_MAX
    if delta_of(high) > delta:
        return float("inf")
    while high - low > 1e-9:
        middle = (low + high) / 2
        low, high = (low, middle) if delta_of(middle) <= delta else (middle, high)
    return high


def discrete_delta(first: np.ndarray, second: np.ndarray, epsilon: float) -> float:
    """Symmetric privacy profile of two laws on the same finite outputs:
    max over directions of Σ (P − e^ε Q)₊."""
    scale = np.exp(epsilon)
    return float(max(np.maximum(first - scale * second, 0).sum(),
                     np.maximum(second - scale * first, 0).sum()))  # fmt: skip


def discrete_tuned_epsilon(
    first: np.ndarray, second: np.ndarray, runs: RunCount, delta: float
) -> float:
    """Exact ε(δ) of the best of K runs of a discrete base (outputs ordered worst → best)."""
    tuned_first = tuned_output_law(first, runs)
    tuned_second = tuned_output_law(second, runs)
    return epsilon_for_delta(lambda eps: discrete_delta(tuned_first, tuned_second, eps), delta)


def gaussian_tuned_densities(mu: float, runs: RunCount) -> tuple[np.ndarray, np.ndarray, float]:
    """Tuned output densities of the Gaussian base on the grid: (p under X, q under X', step)."""
    grid = np.arange(-GAUSSIAN_GRID_TAIL, mu + GAUSSIAN_GRID_TAIL, GAUSSIAN_GRID_STEP)
    first = runs.pgf_derivative(norm.cdf(grid)) * norm.pdf(grid)
    second = runs.pgf_derivative(norm.cdf(grid - mu)) * norm.pdf(grid - mu)
    return first, second, GAUSSIAN_GRID_STEP


def gaussian_tuned_epsilon(mu: float, runs: RunCount, delta: float) -> float:
    """Exact ε(δ) of the best of K runs of N(0, 1) vs N(μ, 1) with a monotone score."""
    first, second, step = gaussian_tuned_densities(mu, runs)

    def delta_of(eps: float) -> float:
        scale = np.exp(eps)
        return step * float(max(np.maximum(first - scale * second, 0).sum(),
                                np.maximum(second - scale * first, 0).sum()))  # fmt: skip

    return epsilon_for_delta(delta_of, delta)
