"""Exact one-sided binomial bounds of docs/SPEC.md §2.1.

Under H(θ) the number ``v`` of correct guesses among ``r`` guesses is stochastically dominated
by ``Bin(r, sigmoid(θ))``. The largest θ ≥ 0 that the test rejects at level ``alpha`` is

    θ_lb(r, v, alpha) = max(0, logit(BetaInv(alpha; v, r − v + 1)))   (0 when v = 0),

the logit of the one-sided Clopper–Pearson lower bound on precision. All functions take and
return numpy arrays (broadcast); θ is in nats.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betainc, betaincinv, expit, gammaln, logit

_LOG_MASS_MARGIN = 1e-6
"""Relative margin on the point-mass shortcut of :func:`rejects`, far above rounding error."""


def _as_counts(r: object, v: object) -> tuple[np.ndarray, np.ndarray]:
    r_arr, v_arr = np.broadcast_arrays(np.asarray(r, dtype=np.int64), np.asarray(v, dtype=np.int64))
    if (v_arr < 0).any() or (v_arr > r_arr).any():
        raise ValueError("counts must satisfy 0 <= v <= r")
    return r_arr, v_arr


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha}")


def theta_lb(r: object, v: object, alpha: float) -> np.ndarray:
    """Largest θ ≥ 0 with P[Bin(r, sigmoid(θ)) ≥ v] ≤ alpha (closed form, exact).

    Args:
        r: number of guesses ("member" predictions), int array-like.
        v: number of correct guesses, 0 ≤ v ≤ r, broadcast against ``r``.
        alpha: level of this one test (already divided for multiple testing), in (0, 0.5).

    Returns:
        float64 array of the broadcast shape; 0 where v = 0 or where θ = 0 cannot be rejected.
    """
    _check_alpha(alpha)
    r_arr, v_arr = _as_counts(r, v)
    out = np.zeros(r_arr.shape, dtype=np.float64)
    hit = v_arr > 0
    if hit.any():
        q = betaincinv(v_arr[hit], r_arr[hit] - v_arr[hit] + 1, alpha)
        out[hit] = np.maximum(0.0, logit(q))
    return out


def rejects(r: object, v: object, *, theta: float, alpha: float) -> np.ndarray:
    """Whether the test at level ``alpha`` rejects H(θ), i.e. θ_lb(r, v, alpha) > θ.

    Exact: rejected iff P[Bin(r, q) ≥ v] = I_q(v, r − v + 1) < alpha with q = sigmoid(θ).
    Thresholds whose point mass P[Bin(r, q) = v] alone reaches alpha are settled without the
    incomplete beta (tail ≥ point mass), which is slow near the Beta mean; the rest take one
    vectorised ``betainc`` call.
    """
    _check_alpha(alpha)
    r_arr, v_arr = _as_counts(r, v)
    q = float(expit(theta))
    out = np.zeros(r_arr.shape, dtype=bool)
    hit = v_arr > 0
    rh, vh = r_arr[hit], v_arr[hit]
    log_mass = (
        gammaln(rh + 1.0)
        - gammaln(vh + 1.0)
        - gammaln(rh - vh + 1.0)
        + vh * np.log(q)
        + (rh - vh) * np.log1p(-q)
    )
    unsettled = log_mass < np.log(alpha) + _LOG_MASS_MARGIN
    verdict = np.zeros(rh.shape, dtype=bool)
    ru, vu = rh[unsettled], vh[unsettled]
    verdict[unsettled] = betainc(vu, ru - vu + 1, q) < alpha
    out[hit] = verdict
    return out


def saturation_ceiling(r: object, alpha: float) -> np.ndarray:
    """θ_lb when every one of ``r`` guesses is correct: logit(alpha^(1/r)) ≈ ln(r / ln(1/alpha)).

    No bound from ``r`` guesses can exceed it; 0 where r = 0 or where it would be negative.
    """
    _check_alpha(alpha)
    r_arr = np.asarray(r, dtype=np.float64)
    out = np.zeros(r_arr.shape, dtype=np.float64)
    pos = r_arr > 0
    log_q = np.log(alpha) / r_arr[pos]
    out[pos] = np.maximum(0.0, log_q - np.log(-np.expm1(log_q)))
    return out


def max_precision_allowed(r: object, *, theta: float, alpha: float) -> np.ndarray:
    """Largest precision v/r that the level-``alpha`` test does not reject under H(θ).

    ``BinomInvSF(alpha, r, sigmoid(θ)) / r`` (docs/SPEC.md §3): the curve of maximal precision
    allowed by θ, drawn beside a precision–recall curve. NaN where r = 0.
    """
    from scipy.stats import binom  # slow to import (~0.4 s); only the report's plots need it

    _check_alpha(alpha)
    r_arr = np.asarray(r, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r_arr > 0, binom.isf(alpha, r_arr, expit(theta)) / r_arr, np.nan)


def p_at_zero(r: object, v: object, n_tests: int) -> float:
    """The p-value of "ε = 0" (guesses right with probability at most ½) for a family of
    ``n_tests`` tests, read at the tests whose counts are ``r`` (guesses) and ``v`` (right
    ones): min(1, n_tests · min P[Bin(r, ½) ≥ v]) (Bonferroni). Given the family's best test
    (the one its bound comes from), it is at most β exactly when that bound at level
    β / n_tests is above 0, and at least the family's exact p-value, so a valid one
    (docs/SPEC.md §3.1, level 8). A family that made no guess has p = 1."""
    from scipy.stats import binom

    r_arr, v_arr = _as_counts(r, v)
    if not r_arr.size:
        return 1.0
    tails = binom.sf(v_arr - 1, r_arr, 0.5)
    return float(min(1.0, max(int(n_tests), 1) * float(np.min(tails))))
