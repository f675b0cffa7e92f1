"""What a DP-SGD target is trained for (:class:`DpSgdSettings`) and what its training did
(:class:`DpSgdRun`): plain data, so that checking a config costs no Lightning import."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from panoramia.errors import InputError


@dataclass(frozen=True)
class DpSgdSettings:
    """The guarantee to train for: (ε, δ)-DP under add/remove-one neighbouring."""

    epsilon: float
    """Target ε; ``inf``: no noise (clipping and Poisson sampling only)."""
    delta: float = 1e-5
    max_grad_norm: float = 1.0
    """Per-sample gradient clipping norm C."""

    def check(self, where: str = "target") -> None:
        if not (self.epsilon > 0):
            raise InputError(f"{where}.dp_epsilon: must be > 0 (or inf), got {self.epsilon}")
        if not (0 < self.delta < 1):
            raise InputError(f"{where}.dp_delta: must be in (0, 1), got {self.delta}")
        if not (self.max_grad_norm > 0 and math.isfinite(self.max_grad_norm)):
            raise InputError(
                f"{where}.dp_max_grad_norm: must be a positive number, got {self.max_grad_norm}"
            )


@dataclass(frozen=True)
class DpSgdRun:
    """What a DP-SGD training did: σ, q = B/N (Poisson), T steps, δ, C, and the ε that
    Opacus' PRV accountant gives for them (``inf`` without noise)."""

    noise_multiplier: float
    sample_rate: float
    steps: int
    delta: float
    max_grad_norm: float
    epsilon: float
    dataset_size: int

    def to_dict(self) -> dict:
        """JSON form: ε is None where it is infinite (no noise)."""
        facts = asdict(self)
        return facts | {"epsilon": None if math.isinf(self.epsilon) else self.epsilon}
