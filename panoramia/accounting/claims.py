"""A model's declared privacy guarantee: DP-SGD hyper-parameters, a bare (ε, δ), or none.

A DP-SGD or (ε, δ) claim describes one training run; ``tuning`` says how many runs the owner
tried before releasing the best (:mod:`~panoramia.accounting.run_count`), which costs more ε.

Claims are what a model owner says; they are checked for sense here (σ > 0, q ∈ (0, 1],
steps ≥ 1, ε ≥ 0, δ ∈ [0, 1)) and otherwise taken at their word. ``claim_from_dict`` reads
the JSON form stored with a report (``{"kind": "dpsgd", ...}``); ``claim.to_dict()`` writes it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal, cast

from panoramia.accounting.run_count import RunCount, run_count_from_dict, run_count_to_dict
from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict

Neighbouring = Literal["add_remove", "replace_one"]
NEIGHBOURING: tuple[str, ...] = ("add_remove", "replace_one")


@dataclass(frozen=True)
class DpSgdPhase:
    """``steps`` noisy steps with Poisson sampling rate ``sample_rate`` (= B/N) and noise
    multiplier ``noise_multiplier`` (σ: noise std / clipping norm)."""

    noise_multiplier: float
    sample_rate: float
    steps: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.noise_multiplier) and self.noise_multiplier > 0):
            raise InputError(f"claim: noise multiplier σ must be > 0, got {self.noise_multiplier}")
        if not (math.isfinite(self.sample_rate) and 0 < self.sample_rate <= 1):
            raise InputError(f"claim: sample rate q must be in (0, 1], got {self.sample_rate}")
        if isinstance(self.steps, bool) or int(self.steps) != self.steps or self.steps < 1:
            raise InputError(f"claim: steps must be a positive integer, got {self.steps}")


@dataclass(frozen=True)
class DpSgdClaim:
    """DP-SGD with one or more phases (composed in order) under a neighbouring relation."""

    phases: tuple[DpSgdPhase, ...]
    neighbouring: Neighbouring = "add_remove"
    dataset_size: int | None = None
    """N, when declared: δ = 1/N is then among the reported δs."""
    tuning: RunCount | None = None
    """How many runs were tried to pick the released one (None: a single run)."""
    kind: Literal["dpsgd"] = "dpsgd"

    def __post_init__(self) -> None:
        if not self.phases:
            raise InputError("claim: a DP-SGD claim needs at least one phase")
        if self.neighbouring not in NEIGHBOURING:
            raise InputError(
                f"claim: neighbouring relation must be one of {NEIGHBOURING}, "
                f"got {self.neighbouring!r}"
            )
        if self.dataset_size is not None and self.dataset_size < 1:
            raise InputError(f"claim: dataset size N must be ≥ 1, got {self.dataset_size}")

    @classmethod
    def single_phase(
        cls,
        noise_multiplier: float,
        *,
        sample_rate: float | None = None,
        batch_size: int | None = None,
        dataset_size: int | None = None,
        steps: int | None = None,
        epochs: float | None = None,
        neighbouring: Neighbouring = "add_remove",
        tuning: RunCount | None = None,
    ) -> DpSgdClaim:
        """From the usual hyper-parameters: q, or B and N; steps T, or epochs (T = ⌈epochs/q⌉)."""
        if sample_rate is None:
            if batch_size is None or dataset_size is None:
                raise InputError("claim: give the sample rate q, or the batch size B and N")
            if batch_size < 1 or dataset_size < batch_size:
                raise InputError(f"claim: need 1 ≤ B ≤ N, got B = {batch_size}, N = {dataset_size}")
            sample_rate = batch_size / dataset_size
        if (steps is None) == (epochs is None):
            raise InputError("claim: give exactly one of steps T and epochs")
        if epochs is not None:
            if not epochs > 0:
                raise InputError(f"claim: epochs must be > 0, got {epochs}")
            steps = math.ceil(epochs / sample_rate - 1e-9)
        steps = cast(int, steps)  # given, or set from the epochs above
        phase = DpSgdPhase(float(noise_multiplier), float(sample_rate), steps)
        return cls((phase,), neighbouring, dataset_size, tuning)

    def to_dict(self) -> JSONDict:
        return asdict(self) | {
            "phases": [asdict(phase) for phase in self.phases],
            "tuning": _tuning_to_dict(self.tuning),
        }


@dataclass(frozen=True)
class EpsDeltaClaim:
    """A bare (ε, δ)-DP statement, with nothing about how it was obtained."""

    epsilon: float
    delta: float
    tuning: RunCount | None = None
    """How many runs, each (ε, δ)-DP, were tried to pick the released one (None: one)."""
    kind: Literal["eps_delta"] = "eps_delta"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.epsilon) and self.epsilon >= 0):
            raise InputError(f"claim: ε must be a finite number ≥ 0, got {self.epsilon}")
        if not 0 <= self.delta < 1:
            raise InputError(f"claim: δ must be in [0, 1), got {self.delta}")

    def to_dict(self) -> JSONDict:
        return asdict(self) | {"tuning": _tuning_to_dict(self.tuning)}


@dataclass(frozen=True)
class NoClaim:
    """The owner declares no guarantee."""

    kind: Literal["none"] = "none"

    def to_dict(self) -> JSONDict:
        return asdict(self)


Claim = DpSgdClaim | EpsDeltaClaim | NoClaim


def _tuning_to_dict(tuning: RunCount | None) -> JSONDict | None:
    return None if tuning is None else run_count_to_dict(tuning)


def _tuning_from_dict(body: JSONDict | None) -> RunCount | None:
    return None if body is None else run_count_from_dict(body)


def claim_from_dict(body: JSONDict) -> Claim:
    """The claim stored as JSON; a malformed one raises :class:`InputError` naming the field."""
    if not isinstance(body, dict):
        raise InputError(f"claim: expected a JSON object, got {type(body).__name__}")
    kind = body.get("kind")
    try:
        if kind == "dpsgd":
            phases = tuple(DpSgdPhase(**phase) for phase in body["phases"])
            rest = {k: v for k, v in body.items() if k not in ("phases", "kind", "tuning")}
            return DpSgdClaim(phases, **rest, tuning=_tuning_from_dict(body.get("tuning")))
        if kind == "eps_delta":
            return EpsDeltaClaim(
                float(body["epsilon"]), float(body["delta"]),
                _tuning_from_dict(body.get("tuning")),
            )  # fmt: skip
        if kind in ("none", None):
            return NoClaim()
    except (KeyError, TypeError) as error:
        raise InputError(f"claim: malformed {kind!r} claim ({error})") from None
    except OverflowError:  # an integer past float range (10**400)
        raise InputError(f"claim: a number of the {kind!r} claim is out of range") from None
    raise InputError(f"claim: kind must be 'dpsgd', 'eps_delta' or 'none', got {kind!r}")
