"""How many training runs a model owner tried: the law of K in hyper-parameter tuning.

A random-stopping tuner draws K, trains K independently sampled candidates and releases the
best (seeds 000, 001). What the tuning costs in privacy depends on K only through its
probability generating function φ(z) = E[z^K] on [0, 1]: the released output Y has
P[Y ≤ y] = φ(P[one run ≤ y]). Every law here gives φ, φ' (both vectorised over z) and
E[K] = φ'(1). Laws that allow K = 0 (Poisson, binomial) release nothing (⊥) with probability
φ(0), the same under both neighbouring datasets.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict

MAX_RUNS = 10_000
"""Most training runs a tuning law may count (fixed k, binomial n). The bounds grow with k
(10⁴ runs of a 1-DP training already give a tuned ε in the thousands) while their cost grows
too (measured figures: docs/RESULTS.md §8)."""


@dataclass(frozen=True)
class FixedRuns:
    """Exactly ``runs`` candidates were trained (K = k)."""

    runs: int
    kind: Literal["fixed"] = "fixed"

    def __post_init__(self) -> None:
        if isinstance(self.runs, bool) or int(self.runs) != self.runs or self.runs < 1:
            raise InputError(
                f"tuning: the number of runs must be a positive integer, got {self.runs}"
            )
        if self.runs > MAX_RUNS:
            raise InputError(f"tuning: at most {MAX_RUNS} runs are accounted, got {self.runs}")

    @property
    def mean(self) -> float:
        return float(self.runs)

    def pgf(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return np.asarray(z, dtype=float) ** self.runs

    def pgf_derivative(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return self.runs * np.asarray(z, dtype=float) ** (self.runs - 1)

    def describe(self) -> str:
        return f"{self.runs} runs (fixed)"


@dataclass(frozen=True)
class TruncatedNegativeBinomial:
    """K ~ TNB(η, γ) on k ≥ 1 (Papernot & Steinke): P[K = k] ∝ C(k + η − 1, k) (1 − γ)^k.
    η = 0 is the logarithmic law, η = 1 the geometric law with mean 1/γ."""

    eta: float
    gamma: float
    kind: Literal["tnb"] = "tnb"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.eta) and self.eta > -1):
            raise InputError(f"tuning: TNB η must be > −1, got {self.eta}")
        if not 0 < self.gamma < 1:
            raise InputError(f"tuning: TNB γ must be in (0, 1), got {self.gamma}")

    @classmethod
    def geometric(cls, mean: float) -> TruncatedNegativeBinomial:
        """The geometric law on k ≥ 1 with the given mean (γ = 1/mean)."""
        if not mean > 1:
            raise InputError(f"tuning: a geometric mean number of runs must be > 1, got {mean}")
        return cls(1.0, 1.0 / mean)

    def _base(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        """1 − (1 − γ) z, which stays ≥ γ on [0, 1]."""
        return 1.0 - (1.0 - self.gamma) * np.asarray(z, dtype=float)

    @property
    def mean(self) -> float:
        return float(self.pgf_derivative(1.0))

    def pgf(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        if self.eta == 0:
            return np.log(self._base(z)) / math.log(self.gamma)
        scale: float = self.gamma**-self.eta - 1.0  # typeshed: float ** float is Any
        return (self._base(z) ** -self.eta - 1.0) / scale

    def pgf_derivative(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        if self.eta == 0:
            return (1.0 - self.gamma) / (self._base(z) * math.log(1.0 / self.gamma))
        scale: float = self.gamma**-self.eta - 1.0  # typeshed: float ** float is Any
        return self.eta * (1.0 - self.gamma) * self._base(z) ** (-self.eta - 1.0) / scale

    def describe(self) -> str:
        return f"TNB(η = {self.eta:g}, γ = {self.gamma:g}) runs, mean {self.mean:.4g}"


@dataclass(frozen=True)
class PoissonRuns:
    """K ~ Poisson(λ) (K = 0 releases nothing)."""

    rate: float
    kind: Literal["poisson"] = "poisson"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise InputError(f"tuning: the Poisson rate λ must be > 0, got {self.rate}")

    @property
    def mean(self) -> float:
        return self.rate

    def pgf(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return np.exp(self.rate * (np.asarray(z, dtype=float) - 1.0))

    def pgf_derivative(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return self.rate * self.pgf(z)

    def describe(self) -> str:
        return f"Poisson(λ = {self.rate:g}) runs"


@dataclass(frozen=True)
class BinomialRuns:
    """K ~ binomial(n, p): n candidates, each trained with probability p (K = 0: nothing)."""

    trials: int
    probability: float
    kind: Literal["binomial"] = "binomial"

    def __post_init__(self) -> None:
        if isinstance(self.trials, bool) or int(self.trials) != self.trials or self.trials < 1:
            raise InputError(f"tuning: binomial n must be a positive integer, got {self.trials}")
        if self.trials > MAX_RUNS:
            raise InputError(f"tuning: at most {MAX_RUNS} runs are accounted, got {self.trials}")
        if not 0 < self.probability <= 1:
            raise InputError(f"tuning: binomial p must be in (0, 1], got {self.probability}")

    @property
    def mean(self) -> float:
        return self.trials * self.probability

    def _base(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return 1.0 - self.probability + self.probability * np.asarray(z, dtype=float)

    def pgf(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return self._base(z) ** self.trials

    def pgf_derivative(self, z: np.ndarray | float) -> npt.NDArray[np.float64]:
        return self.trials * self.probability * self._base(z) ** (self.trials - 1)

    def describe(self) -> str:
        return f"binomial(n = {self.trials}, p = {self.probability:g}) runs"


RunCount = FixedRuns | TruncatedNegativeBinomial | PoissonRuns | BinomialRuns
_KINDS: dict[str, type[RunCount]] = {
    "fixed": FixedRuns,
    "tnb": TruncatedNegativeBinomial,
    "poisson": PoissonRuns,
    "binomial": BinomialRuns,
}


def fixed_count(runs: RunCount) -> int | None:
    """K when it is not random (fixed runs, or binomial with p = 1), else None."""
    if isinstance(runs, FixedRuns):
        return runs.runs
    if isinstance(runs, BinomialRuns) and runs.probability == 1:
        return runs.trials
    return None


def run_count_to_dict(runs: RunCount) -> JSONDict:
    return asdict(runs)


def run_count_from_dict(body: JSONDict) -> RunCount:
    """The stored JSON form (``{"kind": "tnb", "eta": 1, "gamma": 0.01}``); a malformed one
    raises :class:`InputError` naming the field."""
    if not isinstance(body, dict) or body.get("kind") not in _KINDS:
        kinds = ", ".join(_KINDS)
        raise InputError(f"tuning: 'kind' must be one of {kinds}, got {body!r}")
    fields = {k: v for k, v in body.items() if k != "kind"}
    try:
        return _KINDS[body["kind"]](**fields)
    except TypeError as error:
        raise InputError(f"tuning: malformed {body['kind']!r} run count ({error})") from None
