"""The two-sided game (docs/SPEC.md §2.6): member *and* non-member guesses, reported beside
the paper's one-sided figures, never in their place.

A guess rule is a pair of grid thresholds τ_lo ≤ τ_hi on probability scores: "member" when
score > τ_hi, "non-member" when score < τ_lo, abstain otherwise. Under two-sided c-closeness
of the generator (and ε-DP of the target), every guess of either kind is right with
probability at most sigmoid(c) (sigmoid(c + ε) for the attack), so the count of right guesses
among r is dominated by Bin(r, ·) and the same exact test as §2.1 applies, Bonferroni over
the K(K+1)/2 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.errors import InputError
from panoramia.measure.bounds import p_at_zero, saturation_ceiling
from panoramia.measure.game_result import GameBounds, RealNonmemberBound
from panoramia.measure.jsonable import number
from panoramia.measure.sweep import argmax_theta_lb
from panoramia.measure.thresholds import ThresholdStrategy
from panoramia.measure.validation import check_confidence, check_membership, check_scores

MAX_PAIR_GRID = 1000
"""Largest K of the two-sided game: its K(K+1)/2 pairs (500,500 here) are counted at once."""


@dataclass(frozen=True)
class TwoSidedPoint:
    """The best pair of thresholds of one classifier, counted on the audit set."""

    low: float
    """Guess non-member iff score < low (0: no non-member guesses)."""
    high: float
    """Guess member iff score > high (1: no member guesses)."""
    member_guesses: int
    member_correct: int
    nonmember_guesses: int
    nonmember_correct: int
    theta_lb: float
    """Lower bound on θ (two-sided c, or c + ε), nats."""
    alpha: float

    @property
    def r(self) -> int:
        return self.member_guesses + self.nonmember_guesses

    @property
    def v(self) -> int:
        return self.member_correct + self.nonmember_correct

    @property
    def saturated(self) -> bool:
        return self.r > 0 and self.v == self.r

    def to_dict(self) -> dict[str, object]:
        return {
            "theta_lb": number(self.theta_lb),
            "low": number(self.low),
            "high": number(self.high),
            "member_guesses": self.member_guesses,
            "member_correct": self.member_correct,
            "nonmember_guesses": self.nonmember_guesses,
            "nonmember_correct": self.nonmember_correct,
            "ceiling": number(float(saturation_ceiling(self.r, self.alpha))),
            "saturated": self.saturated,
        }


@dataclass(frozen=True)
class TwoSidedMeasurement(GameBounds):
    """Baseline and attack in the two-sided game on one audit set (``c_lb``: the generator's
    two-sided closeness)."""

    n_pairs: int
    """Threshold pairs counted by the Bonferroni correction: K(K+1)/2."""
    alpha_per_test: float
    """β / (2 · n_pairs)."""
    baseline: TwoSidedPoint
    attack: TwoSidedPoint

    @property
    def saturated(self) -> bool:
        """Either best pair makes only right guesses: its bound counts error-free guesses, and
        ε̃ is then about ln(r_attack / r_baseline), a ratio of counts."""
        return self.baseline.saturated or self.attack.saturated

    def to_dict(self) -> dict[str, object]:
        return {
            **self.bounds_dict(),
            "saturated": self.saturated,
            "unreliable": self.c_lb == 0,
            "n_pairs": self.n_pairs,
            "alpha_per_test": number(self.alpha_per_test),
            "baseline": self.baseline.to_dict(),
            "attack": self.attack.to_dict(),
        }


def pair_count(grid: int) -> int:
    """Threshold pairs τ_lo ≤ τ_hi on a grid of ``grid`` points (2 ≤ grid ≤ MAX_PAIR_GRID)."""
    if not 2 <= grid <= MAX_PAIR_GRID:
        raise InputError(f"two-sided game: the grid takes 2 to {MAX_PAIR_GRID} points, got {grid}")
    return grid * (grid + 1) // 2


class NoTwoSidedGame(InputError):
    """The audit's settings have no two-sided game; the message says why."""


def two_sided_grid(thresholds: str, *, m: int, gamma: float, delta: float) -> int:
    """K of the two-sided game for an audit with these settings (``m``: the audit set's size),
    or :class:`NoTwoSidedGame` saying why it has none: the game needs ``grid:K`` thresholds
    with K ≤ :data:`MAX_PAIR_GRID` and γ = δ = 0 (the relaxed tests have no two-sided form
    here)."""
    strategy = ThresholdStrategy.parse(thresholds)
    if strategy.kind != "grid":
        raise NoTwoSidedGame(f"the two-sided game uses grid thresholds, not {strategy}")
    if gamma or delta:
        raise NoTwoSidedGame("the two-sided game has no relaxed (γ, δ) test")
    grid = strategy.n_tests(m)
    if grid > MAX_PAIR_GRID:
        raise NoTwoSidedGame(f"the two-sided game takes grid:K with K <= {MAX_PAIR_GRID}")
    return grid


def grid_counts(
    scores: np.ndarray, labels: np.ndarray, tau: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For every threshold of ``tau``: the slots strictly below it, the members among them,
    the slots strictly above it and the members among them, each slot counted ``weights``
    times (integer multiplicities, as a bootstrap draws them; None: once). Shapes (len(tau),)."""
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    counted = np.ones(scores.size, np.int64) if weights is None else weights[order]
    slots = np.r_[0, np.cumsum(counted)]
    members = np.r_[0, np.cumsum(counted * (labels[order] == 1))]
    low = np.searchsorted(ranked, tau, side="left")
    high = np.searchsorted(ranked, tau, side="right")
    return slots[low], members[low], slots[-1] - slots[high], members[-1] - members[high]


def pair_guesses(
    counts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, ...]:
    """Every pair τ_lo ≤ τ_hi of a grid (``np.triu_indices`` order) from :func:`grid_counts`:
    (low, high, non-member guesses, right ones, member guesses, right ones)."""
    below, members_below, above, members_above = counts
    low, high = np.triu_indices(below.size)
    return (
        low, high, below[low], below[low] - members_below[low], above[high],
        members_above[high],
    )  # fmt: skip


def two_sided_best(
    scores: np.ndarray, labels: np.ndarray, *, grid: int, alpha: float
) -> TwoSidedPoint:
    """The pair of ``linspace(0, 1, grid)`` thresholds with the largest exact bound at level
    ``alpha`` (ties: the first pair in (τ_lo, τ_hi) order; no pair above 0: no guesses,
    τ_lo = 0 and τ_hi = 1). ``scores`` in [0, 1], shape (m,); ``labels`` 1 = member.
    O(m log m + grid²)."""
    pair_count(grid)  # the grid's range
    tau = np.linspace(0.0, 1.0, grid)
    low, high, nonmember_r, nonmember_v, member_r, member_v = pair_guesses(
        grid_counts(scores, labels, tau)
    )
    index, value = argmax_theta_lb(nonmember_r + member_r, nonmember_v + member_v, alpha)
    if value == 0.0:
        return TwoSidedPoint(0.0, 1.0, 0, 0, 0, 0, theta_lb=0.0, alpha=alpha)
    return TwoSidedPoint(
        low=float(tau[low[index]]),
        high=float(tau[high[index]]),
        member_guesses=int(member_r[index]),
        member_correct=int(member_v[index]),
        nonmember_guesses=int(nonmember_r[index]),
        nonmember_correct=int(nonmember_v[index]),
        theta_lb=value,
        alpha=alpha,
    )


def _checked(membership: object, scores: object, name: str) -> tuple[np.ndarray, np.ndarray]:
    labels = check_membership(membership)
    values = check_scores(scores, name=name, n=labels.size)
    if values.min() < 0.0 or values.max() > 1.0:
        raise InputError(f"{name}: the two-sided game's grid thresholds need scores in [0, 1]")
    return labels, values


def measure_two_sided(
    membership: object,
    *,
    baseline_scores: object,
    attack_scores: object,
    grid: int = 100,
    confidence: float = 0.95,
) -> TwoSidedMeasurement:
    """c_lb, {c+ε}_lb and ε̃ of the two-sided game (docs/SPEC.md §2.6).

    ``membership``: 1 = real member (positive class), 0 = generated non-member, shape (m,);
    scores: probabilities of "member" in [0, 1], shape (m,). The level β = 1 − confidence is
    split over the two tests and the K(K+1)/2 threshold pairs."""
    labels, baseline = _checked(membership, baseline_scores, "baseline scores")
    _, attack = _checked(labels, attack_scores, "attack scores")
    confidence = check_confidence(confidence)
    n_pairs = pair_count(grid)
    alpha = (1.0 - confidence) / (2 * n_pairs)
    base = two_sided_best(baseline, labels, grid=grid, alpha=alpha)
    att = two_sided_best(attack, labels, grid=grid, alpha=alpha)
    return TwoSidedMeasurement(
        c_lb=base.theta_lb,
        c_plus_eps_lb=att.theta_lb,
        n_pairs=n_pairs,
        alpha_per_test=alpha,
        baseline=base,
        attack=att,
    )


@dataclass(frozen=True)
class TwoSidedRmRn(RealNonmemberBound):
    """RM;RN in the two-sided game: one test (c = 0) on real members vs real non-members
    (``eps_lb`` under the randomised-membership caveat of §2.4)."""

    n_pairs: int
    alpha: float
    """β / n_pairs."""
    confidence: float
    attack: TwoSidedPoint
    p_value: float = 1.0
    """The p-value of ε = 0 at its best pair, Bonferroni over its pairs
    (:func:`panoramia.measure.bounds.p_at_zero`)."""

    def to_dict(self) -> dict[str, object]:
        return {
            **self.bound_dict(),
            "n_pairs": self.n_pairs,
            "alpha": number(self.alpha),
            "confidence": self.confidence,
            "p_value": number(self.p_value),
            "attack": self.attack.to_dict(),
        }


def rmrn_two_sided(
    membership: object, attack_scores: object, *, grid: int = 100, confidence: float = 0.95
) -> TwoSidedRmRn:
    """RM;RN in the two-sided game at level β / (K(K+1)/2), as the one-sided RM;RN is one test
    at β / K (:func:`panoramia.measure.real_nonmembers.rmrn`)."""
    labels, values = _checked(membership, attack_scores, "attack scores")
    confidence = check_confidence(confidence)
    n_pairs = pair_count(grid)
    alpha = (1.0 - confidence) / n_pairs
    best = two_sided_best(values, labels, grid=grid, alpha=alpha)
    p_value = p_at_zero([best.r], [best.v], n_pairs)
    return TwoSidedRmRn(best.theta_lb, n_pairs, alpha, confidence, best, p_value)
