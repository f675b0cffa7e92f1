"""What every game's result shares: the PANORAMIA games (one- and two-sided) bound c and
c + ε; the real non-member games (RM;RN, one- and two-sided) bound ε with c = 0."""

from __future__ import annotations

from dataclasses import dataclass

from panoramia.measure.jsonable import number


@dataclass(frozen=True)
class GameBounds:
    """The baseline's and the attack's lower bounds on one audit set (nats)."""

    c_lb: float
    """Lower bound on the generator's closeness c (the baseline's test), nats."""
    c_plus_eps_lb: float
    """Lower bound on c + ε (the attack's test), nats."""

    @property
    def eps_tilde(self) -> float:
        """ε̃ = max(0, {c+ε}_lb − c_lb) (sign as in the paper; the official script reverses it)."""
        return max(0.0, self.c_plus_eps_lb - self.c_lb)

    def bounds_dict(self) -> dict[str, object]:
        """``c_lb``, ``c_plus_eps_lb`` and ``eps_tilde``, JSON-safe."""
        return {
            "c_lb": number(self.c_lb),
            "c_plus_eps_lb": number(self.c_plus_eps_lb),
            "eps_tilde": number(self.eps_tilde),
        }


@dataclass(frozen=True)
class RealNonmemberBound:
    """An attack's test against real non-members (c = 0 by construction): ε_lb, nats."""

    eps_lb: float
    """Lower bound on ε (pure DP, nats)."""

    def bound_dict(self) -> dict[str, object]:
        """``eps_lb``, JSON-safe."""
        return {"eps_lb": number(self.eps_lb)}
