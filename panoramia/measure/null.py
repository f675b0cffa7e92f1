"""The in-audit null (docs/SPEC.md §3.1): how large the quoted game's gap {c+ε}_lb − c_lb
reads, in this audit, when the target adds nothing over a model that never saw the members.

Under the null hypothesis H₀ "f is, for this audit, one more model of real data that never
saw D_in" the attack (f's losses, and h's) and the baseline (a stand-in f̂_j's in f's place,
and h's) are mirrored: the j-th distinguisher of each side has the same seed and the same
training rows, and differ only by f against f̂_j. The gap Δ = {c+ε}_lb − c_lb (unclipped,
nats) then has mean 0 and a spread made of the audit set's draw, the distinguishers' training
and the models' own randomness. The null draws resample, jointly for both sides, the audit's
slots (with replacement) and the ensemble's members (k indices with replacement, each bringing
the attack's and the baseline's j-th distinguisher), recompute Δ with the same thresholds and
Bonferroni share, and centre it (Δ*_b − Δ: the basic bootstrap). The p-value is
``(1 + #{b : Δ*_b − Δ ≥ Δ}) / (B + 1)``; the run detects a leak when it is at most the
false-alarm rate α, which is the same as Δ above the centred draws' order statistic
``threshold`` and the low end of the 1 − 2α interval of ε̃ = max(0, Δ) above 0.

Scores are probabilities of "member" (1 = member, the positive class), one row per member of
the ensemble: shape (k, m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from panoramia.errors import InputError
from panoramia.measure.jsonable import number
from panoramia.measure.relaxed import attack_slack
from panoramia.measure.sweep import argmax_theta_lb, sweep
from panoramia.measure.thresholds import ThresholdStrategy
from panoramia.measure.two_sided import grid_counts, pair_count, pair_guesses

MIRRORED_SIDES = {
    "target": "stand_in",
    "target+helper": "stand_in+helper",
    "target+helper+reference_models": "stand_in+helper+reference_models",
}
"""The attack's side → the baseline side that mirrors it (f̂_j in f's place, all else equal):
only then does H₀ make the two sides exchangeable."""


@dataclass(frozen=True)
class NullTest:
    """The quoted game's gap against this audit's null draws."""

    game: str
    """``two_sided`` or ``one_sided`` (the paper's game)."""
    observed: float
    """Δ = {c+ε}_lb − c_lb of the game on the audit set, unclipped (nats)."""
    draws: int
    """B, the null draws."""
    exceed: int
    """Centred draws at or above Δ."""
    false_alarm_rate: float
    """α: the share of runs on a model that never saw the members allowed to read a leak."""
    threshold: float
    """The centred draws' order statistic Δ must exceed to be detected (nats)."""
    interval: tuple[float, float]
    """The 1 − 2α basic-bootstrap interval of ε̃ = max(0, Δ) (nats)."""
    ensemble: int
    """k, the members resampled per side."""
    seed: int
    centred: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0))
    """The centred draws Δ*_b − Δ, (B,) (for plots; not in :meth:`to_dict`)."""

    @property
    def p_value(self) -> float:
        return (1 + self.exceed) / (self.draws + 1)

    @property
    def detected(self) -> bool:
        return self.p_value <= self.false_alarm_rate

    def to_dict(self) -> dict[str, object]:
        return {
            "game": self.game,
            "observed": number(self.observed),
            "draws": self.draws,
            "exceed": self.exceed,
            "p_value": number(self.p_value),
            "false_alarm_rate": self.false_alarm_rate,
            "threshold": number(self.threshold),
            "interval": [number(self.interval[0]), number(self.interval[1])],
            "detected": self.detected,
            "ensemble": self.ensemble,
            "seed": self.seed,
            "method": (
                "paired bootstrap over the audit slots and the ensemble's members, centred "
                "(docs/SPEC.md §3.1)"
            ),
        }


def largest_exceed(draws: int, false_alarm_rate: float) -> int:
    """The most centred draws at or above Δ that still give p = (1 + E)/(B + 1) ≤ α (−1: none),
    by the very comparison :attr:`NullTest.detected` makes."""
    allowed = math.floor(false_alarm_rate * (draws + 1)) - 1
    while (allowed + 2) / (draws + 1) <= false_alarm_rate:
        allowed += 1
    while allowed >= 0 and (allowed + 1) / (draws + 1) > false_alarm_rate:
        allowed -= 1
    return allowed


def check_null_settings(draws: int, false_alarm_rate: float) -> None:
    """:class:`InputError` naming ``audit.null.*`` when the rate is outside (0, 0.5) or B draws
    cannot reach a p-value at or under it."""
    if not 0.0 < false_alarm_rate < 0.5:
        raise InputError(f"audit.null.false_alarm_rate: {false_alarm_rate} is not in (0, 0.5)")
    if largest_exceed(draws, false_alarm_rate) < 0:
        raise InputError(
            f"audit.null.draws: {draws} draws cannot reach a p-value of {false_alarm_rate} "
            f"(at least {math.ceil(1 / false_alarm_rate) - 1} are needed)"
        )


def paired_members(
    attack_members: object, baseline_members: object, m: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' ensemble scores as float arrays (k, m); :class:`InputError` naming
    ``what`` where their shapes differ or do not hold ``m`` slots."""
    attack = np.atleast_2d(np.asarray(attack_members, dtype=np.float64))
    baseline = np.atleast_2d(np.asarray(baseline_members, dtype=np.float64))
    if attack.shape != baseline.shape or attack.shape[1] != m:
        raise InputError(
            f"{what}: attack scores {attack.shape} and baseline scores {baseline.shape} "
            f"must both be (k, {m})"
        )
    return attack, baseline


def mirrored(attack_side: str, baseline_side: str) -> bool:
    """Whether the baseline's side mirrors the attack's (H₀ makes them exchangeable)."""
    return MIRRORED_SIDES.get(attack_side) == baseline_side


@dataclass(frozen=True)
class _Game:
    """One game's best bound of a score vector under slot weights (counts)."""

    kind: str
    strategy: ThresholdStrategy
    alpha: float
    slack: float
    seed: int

    def bound(self, scores: np.ndarray, members: np.ndarray, weights: np.ndarray) -> float:
        """The game's best bound with slot i counted ``weights[i]`` times (integers)."""
        if self.kind == "two_sided" or (self.strategy.kind == "grid" and self.slack == 0.0):
            tau = np.linspace(0.0, 1.0, self.strategy.n_tests(scores.size))
            counts = grid_counts(scores, members, tau, weights)
            if self.kind == "one_sided":  # member guesses only: score > τ
                return argmax_theta_lb(counts[2], counts[3], self.alpha)[1]
            _, _, nonmember_r, nonmember_v, member_r, member_v = pair_guesses(counts)
            return argmax_theta_lb(nonmember_r + member_r, nonmember_v + member_v, self.alpha)[1]
        # Other strategies and the relaxed tests: the resampled slots themselves.
        index = np.repeat(np.arange(scores.size), weights)
        result = sweep(
            scores[index], members[index].astype(np.int8), strategy=self.strategy,
            alpha=self.alpha, slack=self.slack, seed=self.seed,
        )  # fmt: skip
        return result.best.theta_lb


def null_test(
    membership: object,
    attack_members: object,
    baseline_members: object,
    *,
    game: str,
    thresholds: str | ThresholdStrategy = "grid:100",
    confidence: float = 0.95,
    gamma: float = 0.0,
    delta: float = 0.0,
    draws: int = 999,
    false_alarm_rate: float = 0.05,
    seed: int = 0,
    split_seed: int = 0,
) -> NullTest:
    """The null test of one game (``two_sided``: pairs of ``grid:K`` thresholds at
    β / (2 K(K+1)/2); ``one_sided``: the paper's test with ``thresholds``, γ and δ at
    β / (2K)). ``attack_members`` and ``baseline_members``: (k, m) scores of the ensembles'
    members in seed order (the j-th of each side share seed j); ``membership``: (m,) 0/1.
    ``split_seed`` is the ``split:F`` partition's. Deterministic in ``seed``."""
    labels = np.asarray(membership).astype(np.int64)
    attack, baseline = paired_members(attack_members, baseline_members, labels.size, "null test")
    check_null_settings(draws, false_alarm_rate)
    strategy = ThresholdStrategy.parse(thresholds)
    beta = 1.0 - confidence
    if game == "two_sided":
        scored = _Game(game, strategy, beta / (2 * pair_count(strategy.n_tests(labels.size))),
                       0.0, split_seed)  # fmt: skip
        attack_game = baseline_game = scored
    elif game == "one_sided":
        alpha = beta / (2 * strategy.n_tests(labels.size))
        baseline_game = _Game(game, strategy, alpha, gamma, split_seed)
        attack_game = _Game(game, strategy, alpha, attack_slack(gamma=gamma, delta=delta),
                            split_seed)  # fmt: skip
    else:
        raise InputError(f"null test: unknown game {game!r}")
    k: int
    m: int
    k, m = attack.shape
    ones = np.ones(m, np.int64)

    def gap(members: np.ndarray, weights: np.ndarray) -> float:
        return attack_game.bound(attack[members].mean(axis=0), labels, weights) - (
            baseline_game.bound(baseline[members].mean(axis=0), labels, weights)
        )

    observed = gap(np.arange(k), ones)
    rng = np.random.default_rng(seed)
    centred = np.empty(draws)
    for b in range(draws):
        weights = np.bincount(rng.integers(0, m, m), minlength=m)
        members = rng.integers(0, k, k)
        centred[b] = gap(members, weights) - observed
    ranked = np.sort(centred)
    allowed = largest_exceed(draws, false_alarm_rate)
    threshold = float(ranked[draws - allowed - 1])
    lower = float(ranked[allowed])
    return NullTest(
        game=game,
        observed=float(observed),
        draws=draws,
        exceed=int(np.sum(centred >= observed)),
        false_alarm_rate=false_alarm_rate,
        threshold=threshold,
        interval=(max(0.0, observed - threshold), max(0.0, observed - lower)),
        ensemble=k,
        seed=seed,
        centred=centred,
    )
