"""μ̃: the measurement on a Gaussian-DP claim's scale (docs/SPEC.md §2.8).

The hypothesis H(c, μ): the generator is (one-sided) c-close and the target is μ-GDP. Under it
the game's observation, as a function of one coin S_i (all else fixed), is f-DP with the
trade-off of one-sided c-closeness composed with G_μ, whose *blow-up inverse* (the least
probability under "non-member" of an event whose probability under "member" is y) is

    B⁻¹(y) = e^(−c) · Φ(Φ⁻¹(y) − μ)

(a member's pair (x, f) against a generated one's: x's likelihood ratio is at most e^c, then
f's is that of a μ-GDP mechanism; SPEC §2.8 has the derivation). The one-run f-DP audit of
Mahloujifar, Melis and Chaudhuri (2024, "Auditing f-Differential Privacy in One Run",
Algorithm ``audit_rh_with_cap``) turns a count of correct "member" guesses among k guesses on
m slots into a test of any f-DP hypothesis: :func:`rejects` runs its recursion, vectorised
over thresholds. μ_lb at a threshold is the largest μ whose H(c, μ) that threshold rejects at
level α; μ̃ is the largest over the thresholds, at c = the baseline's c_lb (as ε̃ is: "if c_lb
is tight"). With real non-members (RM;RN) c = 0 and μ_lb is a lower bound on the μ of a GDP
claim, under the caveat of SPEC §2.4.

Only member guesses are counted (the paper's one-sided game); the two-sided game has no μ̃.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from panoramia.measure.jsonable import number

MU_MAX = 20.0
"""The largest μ tried: a GDP claim above it protects nothing a count could show."""
_BISECTIONS = 20


def blow_up_inverse(y: np.ndarray, *, c: float, mu: np.ndarray) -> npt.NDArray[np.float64]:
    """B⁻¹(y) = e^(−c) Φ(Φ⁻¹(y) − μ) elementwise; y in [0, 1], c ≥ 0 (nats), μ ≥ 0."""
    from scipy.special import ndtr, ndtri

    with np.errstate(invalid="ignore"):
        inverse: npt.NDArray[np.float64] = np.exp(-c) * ndtr(ndtri(np.clip(y, 0.0, 1.0)) - mu)
        return inverse


def rejects(
    k: np.ndarray, v: np.ndarray, *, m: int, alpha: float, c: float, mu: np.ndarray
) -> npt.NDArray[np.bool_]:
    """Whether v correct "member" guesses among k guesses on m slots reject H(c, μ) at level
    ``alpha``, elementwise over thresholds (arrays of one shape; 0 ≤ v ≤ k ≤ m).

    The recursion of Mahloujifar et al. (2024): r and h start at α·v/m and α·(k−v)/m (the
    mass of right and wrong guesses an f-DP mechanism would need for a tail of α); walking
    the correct guesses down from v − 1 to 0, h rises to B⁻¹(r) and r by i/(k−i) of that
    rise; the hypothesis is rejected when r + h exceeds k/m (the guesses' whole mass)."""
    k = np.asarray(k, dtype=float)
    v = np.asarray(v, dtype=float)
    mu = np.broadcast_to(np.asarray(mu, dtype=float), k.shape)
    r = alpha * v / m
    h = alpha * (k - v) / m
    for step in range(int(v.max(initial=0))):
        i = v - 1 - step
        active = i >= 0
        h_new = np.where(active, np.maximum(h, blow_up_inverse(r, c=c, mu=mu)), h)
        if not np.any(h_new > h):
            break  # neither h nor r can move again
        gap = np.where(active, k - i, 1.0)
        r = np.where(active, np.minimum(r + i / gap * (h_new - h), 1.0), r)
        h = h_new
    rejected: npt.NDArray[np.bool_] = (k > 0) & (r + h > k / m)
    return rejected


def mu_lb(k: np.ndarray, v: np.ndarray, *, m: int, alpha: float, c: float) -> np.ndarray:
    """The largest μ in [0, :data:`MU_MAX`] whose H(c, μ) each threshold rejects (0 where
    even μ = 0 stands), by bisection to about 2e-5, vectorised over thresholds."""
    k = np.asarray(k, dtype=float)
    v = np.asarray(v, dtype=float)
    out = np.zeros(k.shape)
    live = rejects(k, v, m=m, alpha=alpha, c=c, mu=np.zeros(k.shape))
    if not live.any():
        return out
    k_live, v_live = k[live], v[live]
    low = np.zeros(k_live.shape)
    high = np.full(k_live.shape, MU_MAX)
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        rejected = rejects(k_live, v_live, m=m, alpha=alpha, c=c, mu=middle)
        low = np.where(rejected, middle, low)
        high = np.where(rejected, high, middle)
    out[live] = low
    return out


@dataclass(frozen=True)
class GdpBound:
    """The largest μ one classifier's thresholds reject at closeness ``c``."""

    mu_lb: float
    """max over thresholds of μ_lb (0 when no threshold rejects H(c, 0))."""
    c: float
    """The closeness assumed, nats (the baseline's c_lb; 0 against real non-members)."""
    alpha: float
    """Level of each threshold's test (the sweep's)."""
    m: int
    """Slots in the tested set."""
    tau: float | None
    """The maximising threshold (None when μ_lb is 0)."""
    r: int
    """Member guesses at ``tau``."""
    v: int
    """Correct ones among them."""

    def to_dict(self) -> dict[str, object]:
        return {
            "mu_lb": number(self.mu_lb),
            "c": number(self.c),
            "alpha": number(self.alpha),
            "m": self.m,
            "tau": None if self.tau is None else number(self.tau),
            "r": self.r,
            "v": self.v,
        }


def gdp_bound(
    tau: np.ndarray, r: np.ndarray, v: np.ndarray, *, m: int, alpha: float, c: float
) -> GdpBound:
    """μ_lb of a classifier from its threshold table (τ, member guesses r, correct v; shape
    (K,)) on m slots, each threshold tested at level ``alpha``; ties go to the smallest τ."""
    bounds = mu_lb(r, v, m=m, alpha=alpha, c=c)
    best = int(np.argmax(bounds)) if bounds.size else 0
    if not bounds.size or bounds[best] <= 0:
        return GdpBound(0.0, c, alpha, m, None, 0, 0)
    return GdpBound(float(bounds[best]), c, alpha, m, float(tau[best]), int(r[best]), int(v[best]))
