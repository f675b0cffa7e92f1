"""Trade-off curves: f(α) = the smallest FNR β any test reaches at FPR α (seeds 002, 003).

Conventions: α is the false-positive rate of a membership test (calling a non-member a
member), β = f(α) its false-negative rate; a member is the positive class. A curve is
*symmetric* (f = f⁻¹) and convex; a larger f means more privacy. Every function here is
vectorised over α.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from panoramia.errors import InputError

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

TIER_I_REGRET = 0.01
"""μ* alone describes the curve (Tier I) when its regret Δ is below this (docs/SPEC.md §4)."""
TIER_II_ALPHAS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
"""FPRs of the Tier II table of f; α* (where f(α*) = α*) is added per curve."""
CEILING_ALPHAS = (1e-3, 1e-2, 1e-1)
"""FPRs at which reports state the TPR ceiling 1 − f(α)."""
EDGE = 1e-10
"""Breakpoints with α or β this close to 0 or 1 are left out of μ* (numerical tails)."""


def gdp_tradeoff(alpha: np.ndarray | float, mu: float) -> npt.NDArray[np.float64]:
    """f_μ(α) = Φ(Φ⁻¹(1 − α) − μ), the curve of μ-GDP."""
    beta: npt.NDArray[np.float64] = norm.cdf(norm.isf(np.asarray(alpha, dtype=float)) - mu)
    return beta


def gdp_advantage(mu: float | np.ndarray) -> npt.NDArray[np.float64]:
    """η = max_α (1 − α − f_μ(α)) = 2Φ(μ/2) − 1."""
    advantage: npt.NDArray[np.float64] = 2.0 * norm.cdf(np.asarray(mu, dtype=float) / 2.0) - 1.0
    return advantage


def gdp_delta(epsilon: float | np.ndarray, mu: float) -> npt.NDArray[np.float64]:
    """Privacy profile of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    epsilon = np.asarray(epsilon, dtype=float)
    first: npt.NDArray[np.float64] = norm.cdf(-epsilon / mu + mu / 2)
    second: npt.NDArray[np.float64] = np.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    return first - second


def eps_delta_tradeoff(
    alpha: np.ndarray | float, epsilon: float, delta: float
) -> npt.NDArray[np.float64]:
    """f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^−ε (1 − δ − α)}."""
    alpha = np.asarray(alpha, dtype=float)
    beta: npt.NDArray[np.float64] = np.maximum.reduce(
        [np.zeros_like(alpha), 1 - delta - np.exp(epsilon) * alpha,
         np.exp(-epsilon) * (1 - delta - alpha)]
    )  # fmt: skip
    return beta


def kairouz_advantage(epsilon: float, delta: float) -> float:
    """The largest advantage an (ε, δ)-DP mechanism allows: (e^ε − 1 + 2δ)/(e^ε + 1)."""
    return float((np.expm1(epsilon) + 2 * delta) / (np.exp(epsilon) + 1))


def epsilon_for_advantage(advantage: float, delta: float) -> float:
    """The ε whose (ε, δ) allows exactly advantage η (Kairouz inverted):
    ln((1 + η − 2δ)/(1 − η)) (seed 003's ε* of an advantage target)."""
    return float(np.log((1 + advantage - 2 * delta) / (1 - advantage)))


def advantage_tradeoff(alpha: np.ndarray | float, advantage: float) -> np.ndarray:
    """max{0, 1 − η − α}: the weakest curve with advantage η (all an advantage target says)."""
    return np.maximum(0.0, 1.0 - advantage - np.asarray(alpha, dtype=float))


def mu_from_pure_dp(epsilon: float) -> float:
    """The smallest μ with f_μ ≤ f_{ε,0}: −2Φ⁻¹(1/(e^ε + 1)) (tight at one point only)."""
    return float(-2.0 * norm.ppf(1.0 / (np.exp(epsilon) + 1.0)))


def mu_for_advantage(advantage: float) -> float:
    """μ of the Gaussian mechanism with advantage η: 2Φ⁻¹((1 + η)/2)."""
    return float(2.0 * norm.ppf((1.0 + advantage) / 2.0))


def mu_for_error_rates(alpha: float, beta: float) -> float:
    """μ whose curve passes through (α, β): Φ⁻¹(1 − α) − Φ⁻¹(β)."""
    return float(norm.isf(alpha) + norm.isf(beta))


@dataclass(frozen=True)
class TradeoffCurve:
    """A piecewise-linear symmetric trade-off curve through breakpoints (α_i, β_i)."""

    alphas: np.ndarray
    """Increasing FPRs in [0, 1], shape (K,)."""
    betas: np.ndarray
    """Non-increasing FNRs f(α_i), shape (K,)."""

    def __call__(self, alpha: np.ndarray | float) -> npt.NDArray[np.float64]:
        beta: npt.NDArray[np.float64] = np.interp(
            np.asarray(alpha, dtype=float), self.alphas, self.betas
        )
        return beta

    def mu_star(self) -> float:
        """The smallest μ with f_μ ≤ f: max_i Φ⁻¹(1 − α_i) − Φ⁻¹(β_i) over inner breakpoints."""
        inner = (
            (self.alphas > EDGE) & (self.alphas < 1 - EDGE)
            & (self.betas > EDGE) & (self.betas < 1 - EDGE)
            & (self.betas <= 1 - self.alphas - EDGE)
        )  # fmt: skip
        if not inner.any():
            return 0.0
        return float(np.max(norm.isf(self.alphas[inner]) + norm.isf(self.betas[inner])))

    def regret(self, mu: float, *, tolerance: float = 1e-10) -> float:
        """Δ = inf{κ ≥ 0 : f(α + κ) − κ ≤ f_μ(α) for all α}, by bisection (lower end), on the
        breakpoints and a uniform grid of 10⁴ FPRs (between breakpoints f_μ is not linear)."""
        alphas = np.union1d(self.alphas, np.linspace(0.0, 1.0, 10_001))
        bound = gdp_tradeoff(alphas, mu)
        low, high = 0.0, 1.0
        while high - low > tolerance:
            middle = (low + high) / 2
            if np.all(self(np.minimum(alphas + middle, 1.0)) - middle <= bound):
                high = middle
            else:
                low = middle
        return low

    def fixed_point(self) -> float:
        """α* with f(α*) = α* (the symmetric curve's closest point to the chance line)."""
        gap = self.betas - self.alphas
        k = int(np.searchsorted(-gap, 0.0))  # first breakpoint with f(α) ≤ α
        if k == 0:
            return float(self.alphas[0])
        a0, a1, g0, g1 = self.alphas[k - 1], self.alphas[k], gap[k - 1], gap[k]
        return float(a0 + (a1 - a0) * g0 / (g0 - g1)) if g0 != g1 else float(a0)

    def advantage(self) -> float:
        """η = max_α (1 − α − f(α)), attained at a breakpoint."""
        return float(np.max(1.0 - self.alphas - self.betas))

    def tier_table(self) -> dict[str, float]:
        """f at the Tier II FPRs and at α* (keys are the FPRs as printed numbers)."""
        alphas = (*TIER_II_ALPHAS, self.fixed_point())
        return {f"{alpha:.4g}": float(self(alpha)) for alpha in alphas}

    def downsampled(self, points: int = 200) -> TradeoffCurve:
        """The curve on ``points`` FPRs spaced log-uniformly from 1e-6 and linearly above 0.01
        (for plots and JSON; the exact curve stays in memory)."""
        alphas = np.unique(
            np.r_[0.0, np.geomspace(1e-6, 0.01, points // 2), np.linspace(0.01, 1.0, points // 2)]
        )
        return TradeoffCurve(alphas, self(alphas))


def symmetric_curve_from_pld(pld: PrivacyLossDistribution) -> TradeoffCurve:
    """The symmetrised trade-off curve of a ``dp_accounting`` PLD (``gdpnum``'s converter:
    breakpoints (P[X > x_i], P[Y ≤ x_i]) over the loss grid, symmetrised for add/remove)."""
    from gdpnum import PLDConverter

    try:
        converter = PLDConverter(pld)
    except (AssertionError, ValueError):  # gdpnum's own checks (e.g. near-tied breakpoints)
        raise InputError(
            "claim: gdpnum could not turn this run's privacy-loss distribution into a "
            "trade-off curve (its breakpoints fail its monotonicity check); try other values"
        ) from None
    return TradeoffCurve(
        np.asarray(converter.alphas_symm, dtype=float),
        np.asarray(converter.betas_symm, dtype=float),
    )


def curve_from_profile(
    alphas: np.ndarray, epsilons: np.ndarray, deltas: np.ndarray
) -> TradeoffCurve:
    """The curve an (ε, δ(ε))-DP guarantee for every ε of a profile implies:
    max over ε of f_{ε,δ(ε)}, on the FPRs ``alphas``."""
    alphas = np.asarray(alphas, dtype=float)
    betas = np.max(
        [
            eps_delta_tradeoff(alphas, eps, delta)
            for eps, delta in zip(epsilons, deltas, strict=True)
        ],
        axis=0,
    )
    return TradeoffCurve(alphas, betas)


def eps_delta_curve(epsilon: float, delta: float) -> TradeoffCurve:
    """f_{ε,δ} through its breakpoints (it is piecewise linear with two kinks)."""
    knee = (1 - delta) / (np.exp(epsilon) + 1)
    alphas = np.array([0.0, knee, 1 - delta, 1.0])
    return TradeoffCurve(alphas, eps_delta_tradeoff(alphas, epsilon, delta))
