"""The audit's measured operating points against the claim: a DP claim with trade-off curve f
forbids any attack from reaching FNR < f(FPR) (seed 002).

An attack's scores on the audit set give, per threshold, an FPR (non-members called members)
and a TPR (members called members). Both are estimates: a violation is declared only when
even the one-sided Clopper–Pearson *upper* bounds on FPR and FNR, Bonferroni-corrected over
the thresholds, fall below the curve: FNR_ub < f(FPR_ub). So a banner is wrong with
probability at most 1 − confidence.

The leakage-equivalent μ is the largest μ whose Gaussian curve passes through a bounded
operating point, max Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub). With PANORAMIA's generated non-members it
is *not* a DP lower bound (non-members are not drawn from the training distribution); it
only places the attack on the same scale as the claim's μ*. The same holds for the empirical
ε at δ, max over points of max{ln((1 − δ − FPR_ub)/FNR_ub), ln((1 − δ − FNR_ub)/FPR_ub)}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import betaincinv
from scipy.stats import norm

from panoramia.accounting.tradeoff import TradeoffCurve
from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict

EMPIRICAL_DELTA = 1e-5
"""δ of the attack's empirical ε in reports."""
OPERATING_POINTS = 100
"""Thresholds tried: the score quantiles at 1/K, …, 1 (and the Bonferroni K)."""


def clopper_pearson_upper(
    successes: np.ndarray, trials: np.ndarray | int, alpha: float
) -> np.ndarray:
    """One-sided upper bound at level ``alpha`` on a binomial rate (1 where all succeed)."""
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    full = successes >= trials
    bound = betaincinv(successes + 1, np.where(full, 1.0, trials - successes), 1 - alpha)
    return np.where(full, 1.0, bound)


def epsilon_from_error_rates(
    fpr: np.ndarray | float, fnr: np.ndarray | float, delta: float
) -> npt.NDArray[np.float64]:
    """The least ε with (ε, δ) allowing a test with these error rates (vectorised):
    max{ln((1 − δ − FPR)/FNR), ln((1 − δ − FNR)/FPR)} (−inf where neither ratio exceeds 0)."""
    fpr, fnr = np.asarray(fpr, dtype=float), np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.log(np.maximum(1 - delta - fpr, 0) / fnr)
        second = np.log(np.maximum(1 - delta - fnr, 0) / fpr)
    epsilon: npt.NDArray[np.float64] = np.fmax(first, second)
    return epsilon


@dataclass(frozen=True)
class ConsistencyCheck:
    """Operating points of one attack (member = positive class) beside the claim's f."""

    fpr: np.ndarray
    tpr: np.ndarray
    fpr_upper: np.ndarray
    fnr_upper: np.ndarray
    claim_fnr: np.ndarray
    """f(FPR_ub): the least FNR the claim allows at each bounded FPR."""
    confidence: float
    leakage_mu: float
    """Leakage-equivalent μ of the attack (not a DP lower bound, see module docstring)."""

    def empirical_epsilon(self, delta: float = EMPIRICAL_DELTA) -> float:
        """The largest ε(δ) the bounded operating points force (0 when none does)."""
        return float(max(0.0, np.max(epsilon_from_error_rates(self.fpr_upper, self.fnr_upper,
                                                              delta))))  # fmt: skip

    @property
    def violations(self) -> np.ndarray:
        """Indices of operating points that contradict the claim."""
        return np.flatnonzero(self.fnr_upper < self.claim_fnr)

    @property
    def consistent(self) -> bool:
        return self.violations.size == 0

    def to_dict(self) -> JSONDict:
        worst = int(np.argmax(self.claim_fnr - self.fnr_upper))
        return {
            "consistent": self.consistent,
            "violations": int(self.violations.size),
            "confidence": self.confidence,
            "worst_point": {
                "fpr": float(self.fpr[worst]), "tpr": float(self.tpr[worst]),
                "fpr_upper": float(self.fpr_upper[worst]),
                "fnr_upper": float(self.fnr_upper[worst]),
                "claim_fnr": float(self.claim_fnr[worst]),
            },
            "leakage_equivalent_mu": self.leakage_mu,
            "empirical_epsilon": self.empirical_epsilon(),
            "empirical_epsilon_delta": EMPIRICAL_DELTA,
            "leakage_equivalent_mu_note": "not a DP lower bound: PANORAMIA's non-members are "
            "generated, not drawn from the training distribution",
            "points": {
                "fpr": self.fpr.tolist(), "tpr": self.tpr.tolist(),
                "fpr_upper": self.fpr_upper.tolist(), "fnr_upper": self.fnr_upper.tolist(),
            },
        }  # fmt: skip


def check_consistency(
    curve: TradeoffCurve,
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    confidence: float = 0.95,
    points: int = OPERATING_POINTS,
) -> ConsistencyCheck:
    """Compare an attack's operating points (``scores``: higher = member; ``membership``:
    1 = member) with ``curve``, at family-wise ``confidence`` over the ``points`` thresholds."""
    scores = np.asarray(scores, dtype=float)
    membership = np.asarray(membership)
    if scores.ndim != 1 or scores.shape != membership.shape:
        raise InputError(
            f"consistency: scores {scores.shape} and membership {membership.shape} must be "
            "1-D of one length"
        )
    if not np.isfinite(scores).all():
        raise InputError("consistency: scores hold NaN or infinite values")
    if not np.isin(membership, (0, 1)).all():
        raise InputError("consistency: membership must be 0/1 (1 = member)")
    n_members = int(membership.sum())
    n_non_members = membership.size - n_members
    if n_members == 0 or n_non_members == 0:
        raise InputError("consistency: need both members and non-members")
    if not 0.5 < confidence < 1:
        raise InputError(f"consistency: confidence must be in (0.5, 1), got {confidence}")
    thresholds = np.unique(np.quantile(scores, np.arange(1, points + 1) / points))
    called = scores[None, :] >= thresholds[:, None]  # (K, n): guess "member"
    true_positives = (called & (membership == 1)).sum(axis=1)
    false_positives = (called & (membership == 0)).sum(axis=1)
    level = (1 - confidence) / (2 * thresholds.size)  # two bounds per threshold
    fpr_upper = clopper_pearson_upper(false_positives, n_non_members, level)
    fnr_upper = clopper_pearson_upper(n_members - true_positives, n_members, level)
    inner = (fpr_upper < 1) & (fnr_upper < 1)
    mus = norm.isf(fpr_upper[inner]) + norm.isf(fnr_upper[inner])
    return ConsistencyCheck(
        fpr=false_positives / n_non_members,
        tpr=true_positives / n_members,
        fpr_upper=fpr_upper,
        fnr_upper=fnr_upper,
        claim_fnr=curve(fpr_upper),
        confidence=confidence,
        leakage_mu=float(max(0.0, mus.max())) if mus.size else 0.0,
    )
