"""What hyper-parameter tuning costs: the ε of releasing the best of K training runs.

A model owner who tried K candidate runs and kept the best releases more than one run does.
``tuned_guarantee(base, runs, delta)`` reports the single-run ε, every bound that applies to
the law of K, the tuned ε (the smallest *certified* bound) and the overhead. Bounds:

- **fixed k** — the k-fold composition of the base PLD (releasing the best of k runs is a
  post-processing of all k; no cheaper certified bound exists for a fixed k).
- **Papernot–Steinke RDP** (TNB(η, γ), and Poisson(λ) with λ ≥ 1 as their theorem needs):
  TNB: ε'(α) = ε(α) + (1 + η) min_α̂ [(1 − 1/α̂) ε(α̂) + ln(1/γ)/α̂] + ln E[K]/(α − 1);
  Poisson: ε'(α) = ε(α) + λ δ̂ + ln λ/(α − 1) with δ̂ = δ(ln(1 + 1/(α − 1))); then the
  monotonicity of RDP in α, and ``dp_accounting``'s RDP → (ε, δ) conversion. A pure ε base
  also gives the α̂ → ∞ limit (2 + η) ε at every δ.
- **privacy profile** (seed 001's approach; derived here, see below): for every ε̂ ≥ 0,
  δ_tuned(ε) ≤ E[K] δ(ε − ln R(ε̂)), i.e. ε_tuned(δ) ≤ ε(δ / E[K]) + min_ε̂ ln R(ε̂).
- **GDP-reduced estimate** (seed 000, *not certified*): the exact tuned ε of the Gaussian
  pair N(0, 1), N(μ, 1) with a monotone score, μ the base's GDP μ. A score that is not a
  monotone function of one Gaussian statistic can leak more; it is shown labelled as such.

Derivation of the profile bound. Break ties in the runs' scores with an independent uniform
variable (a post-processing argument), so the score law is atomless with CDF F under X and
G under X'. The tuned output has density φ'(F(y)) under X and φ'(G(y)) under X' relative to
the base's. Let u = 1 − F(y) = P_X[score > y] and u' = 1 − G(y); (ε̂, δ̂ = δ(ε̂))-DP applied to
{score > y} and to its complement gives u' ≤ 1 − f_{ε̂,δ̂}(u) =: v(u), a piecewise-linear
function with corners at u = 0, the knee (1 − δ̂)/(e^ε̂ + 1) and 1 − δ̂. Then
φ'(F)/φ'(G) ≤ R(ε̂) := sup_u φ'(1 − u)/φ'(1 − v(u)), so
(p φ'(F) − e^ε q φ'(G))₊ ≤ φ'(F) (p − e^(ε − ln R) q)₊ ≤ E[K] (p − e^(ε − ln R) q)₊ since φ'
is non-decreasing with φ'(1) = E[K]. For TNB and binomial laws the ratio is a power of a
linear-fractional function of u on each linear piece of v, for Poisson the exponential of a
linear one, so the supremum is at one of the three corners. These bounds are at most the forms
printed in seed 001 (TNB: (η + 1) ln(e^ε̂ + (1 − γ) δ̂/γ); Poisson: λ (e^ε̂ − 1 + δ̂); binomial:
(n − 1) ln(1 + p (e^ε̂ − 1 + δ̂))), which the tests check, together with the exact harness.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import numpy.typing as npt
from scipy.optimize import brentq

from panoramia.accounting.claims import Claim, DpSgdClaim, EpsDeltaClaim
from panoramia.accounting.dpsgd import RDP_ORDERS
from panoramia.accounting.run_count import (
    PoissonRuns,
    RunCount,
    TruncatedNegativeBinomial,
    fixed_count,
    run_count_to_dict,
)
from panoramia.accounting.tradeoff import gdp_delta
from panoramia.accounting.tuned_exact import gaussian_tuned_epsilon
from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

PROFILE_EPSILONS = np.r_[0.0, np.geomspace(1e-3, 40.0, 400)]
"""The ε̂ over which the privacy-profile bound is minimised (every ε̂ gives a valid bound)."""


class RunPrivacy(ABC):
    """The privacy of one training run, in the forms the tuning bounds need.

    Attributes: ``label``; ``rdp`` — the RDP curve at ``RDP_ORDERS`` (None when unknown);
    ``pure_epsilon`` — ε when the run is pure ε-DP; ``gdp_mu`` — the run's GDP μ for the
    (uncertified) GDP-reduced estimate, for Gaussian-like runs only (DP-SGD, Gaussian): the μ
    of a pure ε-DP run describes its curve at one point only and would mislead.
    ``delta(ε)`` is the symmetric privacy profile (vectorised) and ``epsilon(δ)`` its
    inverse; ``composed(k)`` is k runs."""

    label: str
    rdp: np.ndarray | None = None
    pure_epsilon: float | None = None
    gdp_mu: float | None = None

    @abstractmethod
    def delta(self, epsilon: float | np.ndarray) -> np.ndarray:
        """See the class docstring."""

    @abstractmethod
    def epsilon(self, delta: float) -> float:
        """See the class docstring."""

    @abstractmethod
    def composed(self, runs: int) -> RunPrivacy:
        """See the class docstring."""


class GaussianRunPrivacy(RunPrivacy):
    """A μ-GDP run (the Gaussian mechanism with sensitivity 1 and noise 1/μ), in closed form."""

    rdp: np.ndarray
    gdp_mu: float

    def __init__(self, mu: float) -> None:
        if not (math.isfinite(mu) and mu > 0):
            raise InputError(f"tuning: the base μ must be > 0, got {mu}")
        self.label = f"{mu:g}-GDP run"
        self.gdp_mu = mu
        self.rdp = np.asarray(RDP_ORDERS) * mu**2 / 2

    def delta(self, epsilon: float | np.ndarray) -> np.ndarray:
        return np.maximum(gdp_delta(epsilon, self.gdp_mu), 0.0)

    def epsilon(self, delta: float) -> float:
        if self.delta(0.0) <= delta:
            return 0.0
        high = self.gdp_mu**2 / 2 + self.gdp_mu * 40
        return float(brentq(lambda eps: self.delta(eps) - delta, 0.0, high, xtol=1e-10))

    def composed(self, runs: int) -> RunPrivacy:
        return GaussianRunPrivacy(self.gdp_mu * math.sqrt(runs))


class PldRunPrivacy(RunPrivacy):
    """A run described by a ``dp_accounting`` privacy-loss distribution (pessimistic)."""

    def __init__(
        self,
        pld: PrivacyLossDistribution,
        label: str,
        *,
        rdp: np.ndarray | None = None,
        pure_epsilon: float | None = None,
        gdp_mu: float | None = None,
    ) -> None:
        self.pld, self.label = pld, label
        self.rdp, self.pure_epsilon, self.gdp_mu = rdp, pure_epsilon, gdp_mu

    def delta(self, epsilon: float | np.ndarray) -> np.ndarray:
        values = np.atleast_1d(np.asarray(epsilon, dtype=float))
        order = np.argsort(values)  # dp_accounting wants ascending ε
        deltas = np.empty_like(values)
        deltas[order] = self.pld.get_delta_for_epsilon(values[order].tolist())
        return deltas

    def epsilon(self, delta: float) -> float:
        return float(self.pld.get_epsilon_for_delta(delta))

    def composed(self, runs: int) -> RunPrivacy:
        return PldRunPrivacy(
            self.pld.self_compose(runs), f"{runs} × {self.label}",
            rdp=None if self.rdp is None else runs * self.rdp,
            pure_epsilon=None if self.pure_epsilon is None else runs * self.pure_epsilon,
            gdp_mu=None if self.gdp_mu is None else self.gdp_mu * math.sqrt(runs),
        )  # fmt: skip


def pure_dp_rdp(epsilon: float, orders: np.ndarray) -> npt.NDArray[np.float64]:
    """The largest RDP of order α an ε-DP mechanism can have (randomized response's):
    ln((e^(αε) + e^((1 − α)ε))/(e^ε + 1))/(α − 1)."""
    orders = np.asarray(orders, dtype=float)
    log_sum = np.logaddexp(orders * epsilon, (1 - orders) * epsilon)
    rdp: npt.NDArray[np.float64] = (log_sum - np.log1p(np.exp(epsilon))) / (orders - 1)
    return rdp


def run_privacy_from_claim(
    claim: Claim, *, pld: PrivacyLossDistribution | None = None, mu: float | None = None
) -> RunPrivacy:
    """The privacy of one run as declared: a DP-SGD run (``pld``, ``mu``: its PLD and μ* when
    already computed), or a bare (ε, δ) (pure when δ = 0)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    if isinstance(claim, DpSgdClaim):
        from panoramia.accounting.dpsgd import dpsgd_pld, rdp_curve
        from panoramia.accounting.tradeoff import symmetric_curve_from_pld

        pld = dpsgd_pld(claim) if pld is None else pld
        mu = symmetric_curve_from_pld(pld).mu_star() if mu is None else mu
        return PldRunPrivacy(pld, "one DP-SGD run", rdp=rdp_curve(claim), gdp_mu=mu)
    if isinstance(claim, EpsDeltaClaim):
        from dp_accounting.pld.common import DifferentialPrivacyParameters

        pld = pld_lib.from_privacy_parameters(
            DifferentialPrivacyParameters(claim.epsilon, claim.delta)
        )
        if claim.delta > 0:
            return PldRunPrivacy(pld, f"one ({claim.epsilon:g}, {claim.delta:g})-DP run")
        return PldRunPrivacy(
            pld, f"one {claim.epsilon:g}-DP run",
            rdp=pure_dp_rdp(claim.epsilon, np.asarray(RDP_ORDERS)),
            pure_epsilon=claim.epsilon,
        )  # fmt: skip
    raise InputError("tuning: a tuning-aware claim needs a declared DP-SGD run or (ε, δ)")


@dataclass(frozen=True)
class TuningBound:
    """One upper bound on the tuned ε (``certified`` False: an estimate, not a guarantee)."""

    name: str
    epsilon: float
    certified: bool
    note: str = ""


def _rdp_to_epsilon(rdp: np.ndarray, delta: float) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    monotone = np.minimum.accumulate(rdp[::-1])[::-1]  # RDP is non-decreasing in α
    return float(compute_epsilon(list(RDP_ORDERS), monotone.tolist(), delta)[0])


def papernot_steinke_tnb(base: RunPrivacy, runs: TruncatedNegativeBinomial, delta: float) -> float:
    """Papernot–Steinke Thm 2 (TNB), minimised over both orders, converted to ε(δ)."""
    assert base.rdp is not None  # the caller's condition
    orders = np.asarray(RDP_ORDERS)
    hat = (1 + runs.eta) * np.min((1 - 1 / orders) * base.rdp + math.log(1 / runs.gamma) / orders)
    return _rdp_to_epsilon(base.rdp + hat + math.log(runs.mean) / (orders - 1), delta)


def papernot_steinke_poisson(base: RunPrivacy, runs: PoissonRuns, delta: float) -> float:
    """Papernot–Steinke Thm 6 (Poisson), with δ̂ = δ(ε̂) at e^ε̂ = 1 + 1/(α − 1)."""
    assert base.rdp is not None  # the caller's condition
    orders = np.asarray(RDP_ORDERS)
    delta_hat = base.delta(np.log1p(1 / (orders - 1)))
    tuned = base.rdp + runs.rate * delta_hat + math.log(runs.rate) / (orders - 1)
    return _rdp_to_epsilon(tuned, delta)


def profile_log_ratio(
    runs: RunCount, epsilon_hat: np.ndarray, delta_hat: np.ndarray
) -> npt.NDArray[np.float64]:
    """ln R(ε̂) of the privacy-profile bound (module docstring), vectorised over ε̂: the largest
    φ'(1 − u)/φ'(1 − u') over the (ε̂, δ̂) region, attained at u ∈ {0, knee, 1 − δ̂}."""
    if fixed_count(runs) is not None:
        raise TypeError("a fixed number of runs has no privacy-profile bound (φ'(0) = 0)")
    scale = np.exp(epsilon_hat)
    knee = (1 - delta_hat) / (scale + 1)
    corners = [(np.zeros_like(knee), delta_hat), (knee, scale * knee + delta_hat),
               (1 - delta_hat, np.ones_like(knee))]  # fmt: skip
    log_ratio: npt.NDArray[np.float64] = np.max(
        [np.log(runs.pgf_derivative(1 - u)) - np.log(runs.pgf_derivative(1 - np.minimum(v, 1)))
         for u, v in corners],
        axis=0,
    )  # fmt: skip
    return log_ratio


def privacy_profile_bound(base: RunPrivacy, runs: RunCount, delta: float) -> float:
    """ε_tuned(δ) ≤ ε(δ / E[K]) + min_ε̂ ln R(ε̂)."""
    log_ratio = profile_log_ratio(runs, PROFILE_EPSILONS, base.delta(PROFILE_EPSILONS))
    return base.epsilon(delta / runs.mean) + float(np.min(log_ratio))


def tuned_profile(base: RunPrivacy, runs: RunCount, epsilons: np.ndarray) -> np.ndarray:
    """A certified privacy profile δ_tuned(ε) of the released model, vectorised over ε: the
    composed run's for a fixed count, else min(1, E[K] δ(ε − min_ε̂ ln R(ε̂)))."""
    count = fixed_count(runs)
    if count is not None:
        return base.composed(count).delta(epsilons)
    shift = float(np.min(profile_log_ratio(runs, PROFILE_EPSILONS, base.delta(PROFILE_EPSILONS))))
    return np.minimum(1.0, runs.mean * base.delta(np.asarray(epsilons) - shift))


class TunedGuaranteeDict(TypedDict):
    """:meth:`TunedGuarantee.to_dict`: the JSON object a report holds per δ."""

    runs: JSONDict
    description: str
    mean_runs: float
    delta: float
    single_run_epsilon: float
    tuned_epsilon: float
    overhead: float
    bounds: list[JSONDict]


@dataclass
class TunedGuarantee:
    """The single-run ε, every bound on the tuned ε, and the certified tuned ε, at ``delta``."""

    runs: JSONDict
    description: str
    mean_runs: float
    delta: float
    single_run_epsilon: float
    bounds: list[TuningBound] = field(default_factory=list)

    @property
    def epsilon(self) -> float:
        """The tuned ε: the smallest certified bound."""
        return min(bound.epsilon for bound in self.bounds if bound.certified)

    def to_dict(self) -> TunedGuaranteeDict:
        return {
            "runs": self.runs,
            "description": self.description,
            "mean_runs": self.mean_runs,
            "delta": self.delta,
            "single_run_epsilon": self.single_run_epsilon,
            "tuned_epsilon": self.epsilon,
            "overhead": self.epsilon - self.single_run_epsilon,
            "bounds": [asdict(bound) for bound in self.bounds],
        }


def tuned_guarantee(base: RunPrivacy, runs: RunCount, delta: float) -> TunedGuarantee:
    """Every bound on the ε(δ) of releasing the best of K runs of ``base``."""
    if not 0 < delta < 1:
        raise InputError(f"tuning: δ must be in (0, 1), got {delta}")
    bounds: list[TuningBound] = []
    count = fixed_count(runs)
    if count is not None:
        bounds.append(TuningBound(
            "composition", base.composed(count).epsilon(delta), True,
            f"{count}-fold composition: the only certified bound for a fixed number of runs",
        ))  # fmt: skip
    else:
        _random_count_bounds(base, runs, delta, bounds)
    if base.gdp_mu is not None:
        bounds.append(TuningBound(
            "gdp_reduced_estimate", gaussian_tuned_epsilon(base.gdp_mu, runs, delta), False,
            "seed 000's GDP reduction: exact for a score monotone in one Gaussian statistic; "
            "not certified (other scores can leak more)",
        ))  # fmt: skip
    return TunedGuarantee(
        runs=run_count_to_dict(runs),
        description=runs.describe(),
        mean_runs=runs.mean,
        delta=delta,
        single_run_epsilon=base.epsilon(delta),
        bounds=bounds,
    )


def _random_count_bounds(
    base: RunPrivacy, runs: RunCount, delta: float, bounds: list[TuningBound]
) -> None:
    if isinstance(runs, TruncatedNegativeBinomial):
        if base.rdp is not None:
            bounds.append(TuningBound(
                "papernot_steinke_rdp", papernot_steinke_tnb(base, runs, delta), True,
                "Papernot–Steinke TNB bound on the RDP curve",
            ))  # fmt: skip
        if base.pure_epsilon is not None:
            bounds.append(TuningBound(
                "papernot_steinke_pure", (2 + runs.eta) * base.pure_epsilon, True,
                "(2 + η) ε for a pure ε-DP run, at every δ",
            ))  # fmt: skip
    if isinstance(runs, PoissonRuns) and runs.rate >= 1 and base.rdp is not None:
        bounds.append(TuningBound(
            "papernot_steinke_rdp", papernot_steinke_poisson(base, runs, delta), True,
            "Papernot–Steinke Poisson bound on the RDP curve",
        ))  # fmt: skip
    bounds.append(TuningBound(
        "privacy_profile", privacy_profile_bound(base, runs, delta), True,
        "E[K] δ(ε − ln R(ε̂)) bound on the run's privacy profile",
    ))  # fmt: skip
