"""Relaxed tests of docs/SPEC.md §2.3: (c, γ)-closeness of the generator and (ε, δ)-DP of
the target.

The p-value gains the Steinke et al. (2023) term for approximate DP:

    p(r, v, θ) = P[Bin(r, q) ≥ v] + A(r, v, q) · 2m · slack,          q = sigmoid(θ)
    A(r, v, q) = max_{i = 1..v} (1/i) · P[v − i ≤ Bin(r, q) < v]

with ``slack = γ`` for the baseline test and ``γ + δ − γδ`` for the attack test, and ``m`` the
number of examples in the audited set. The bound is the largest θ ≥ 0 with p ≤ alpha, found by
root finding; it never exceeds the exact bound of docs/SPEC.md §2.1 and equals it when slack = 0.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from panoramia.measure.bounds import theta_lb


def attack_slack(*, gamma: float, delta: float) -> float:
    """Slack of the attack test: γ + δ − γδ (union of the generator's and the target's slack)."""
    return gamma + delta - gamma * delta


def relaxed_p_value(r: int, v: int, theta: float, *, m: int, slack: float) -> float:
    """p(r, v, θ) above for one threshold: r guesses, v correct, audited set of size m."""
    from scipy.stats import binom  # slow to import; only the relaxed tests need it

    if v == 0:
        return 1.0
    q = float(expit(theta))
    pmf_below_v = binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[Bin = v-1], P[Bin = v-2], ...
    a_term = float(np.max(np.cumsum(pmf_below_v) / np.arange(1, v + 1)))
    return float(binom.sf(v - 1, r, q)) + a_term * 2.0 * m * slack


def relaxed_theta_lb(r: int, v: int, alpha: float, *, m: int, slack: float) -> float:
    """Largest θ ≥ 0 with relaxed p-value ≤ alpha (0 when even θ = 0 is not rejected)."""
    from scipy.optimize import brentq  # slow to import; only the relaxed tests need it

    if v == 0 or relaxed_p_value(r, v, 0.0, m=m, slack=slack) > alpha:
        return 0.0
    # The relaxed p-value is at least the exact tail, which exceeds alpha past the exact bound.
    upper = float(theta_lb(r, v, alpha)) + 1.0
    return float(
        brentq(
            lambda t: relaxed_p_value(r, v, t, m=m, slack=slack) - alpha,
            0.0,
            upper,
            xtol=1e-12,
            rtol=1e-14,
        )
    )
