"""Reference audits with real non-members (docs/SPEC.md §2.4): the O(1) audit and RM;RN.

Both are lower bounds on ε only when membership was randomised (each candidate included in
training with probability 1/2, independently). A post-hoc audit with a held-out split (e.g.
Adult's test set) approximates that game; reports label the result accordingly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.measure.bounds import p_at_zero, saturation_ceiling
from panoramia.measure.game_result import RealNonmemberBound
from panoramia.measure.jsonable import number
from panoramia.measure.relaxed import relaxed_theta_lb
from panoramia.measure.sweep import SweepResult, argmax_theta_lb, sweep
from panoramia.measure.thresholds import ThresholdStrategy
from panoramia.measure.validation import (
    check_confidence,
    check_membership,
    check_scores,
    check_slack,
)

DEFAULT_GUESS_FRACTIONS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
"""Fractions of the n examples guessed "member" (k₊) and, separately, "non-member" (k₋)."""


@dataclass(frozen=True)
class O1Result(RealNonmemberBound):
    """The O(1) audit's best guess counts and its lower bound on ε (``eps_lb``, at the given
    confidence and δ, Bonferroni over the grid)."""

    k_plus: int
    """Examples guessed "member" (the k₊ highest scores)."""
    k_minus: int
    """Examples guessed "non-member" (the k₋ lowest scores)."""
    r: int
    """Guesses, k₊ + k₋ (the others abstain)."""
    v: int
    """Correct guesses of both kinds."""
    n: int
    """Examples audited (members + non-members)."""
    n_grid: int
    """(k₊, k₋) pairs examined: the Bonferroni factor."""
    alpha: float
    confidence: float
    delta: float
    p_value: float = 1.0
    """The p-value of ε = 0 at the best (k₊, k₋), Bonferroni over the grid
    (:func:`panoramia.measure.bounds.p_at_zero`; δ > 0: not computed, 1)."""
    unit: str = "example"
    """What one guess is about: an ``example`` (a row, an image, a chunk) or a whole
    ``document`` (its chunks' mean loss; docs/SPEC.md §2.4)."""
    randomised: bool = True
    """Whether the audit drew the members and the held-out rows at random at that unit (the
    embedded data); False for a contributor's own held-out rows, where the bound and its p
    stay a figure outside the verdict (docs/SPEC.md §3.1, level 8)."""
    per_example: O1Result | None = None
    """Where the unit is larger than an example: the same audit per example on the reference
    game's slots (a figure; the rule before 2026-12-02 read it)."""

    @property
    def ceiling(self) -> float:
        return float(saturation_ceiling(self.r, self.alpha))

    def to_dict(self) -> dict[str, object]:
        return {
            **self.bound_dict(),
            "k_plus": self.k_plus,
            "k_minus": self.k_minus,
            "r": self.r,
            "v": self.v,
            "precision": number(self.v / self.r),
            "ceiling": number(self.ceiling),
            "saturated": self.v == self.r,
            "n": self.n,
            "n_grid": self.n_grid,
            "alpha": number(self.alpha),
            "confidence": self.confidence,
            "delta": self.delta,
            "p_value": number(self.p_value),
            "unit": self.unit,
            "randomised": self.randomised,
            **({} if self.per_example is None else {"per_example": self.per_example.to_dict()}),
        }


def o1_audit(
    membership: object,
    scores: object,
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    guess_fractions: tuple[float, ...] = DEFAULT_GUESS_FRACTIONS,
    seed: int = 0,
) -> O1Result:
    """O(1) audit (Steinke, Nasr, Jagielski 2023) with abstention, on real (non-)members.

    Args:
        membership: 0/1 per example, 1 = member of the target's training set.
        scores: higher = more member-like (pass ``-loss`` for the loss attack); shape (n,).
        confidence: 1 − β for the whole grid (Bonferroni over the (k₊, k₋) pairs).
        delta: δ > 0 uses the relaxed p-value of docs/SPEC.md §2.3 with slack δ and m = n.
        guess_fractions: k₊ and k₋ each range over ``round(f · n)`` for these fractions.
        seed: breaks ties between equal scores at random, so that the rows' order cannot
            leak into the guesses.
    """
    labels = check_membership(membership)
    n = labels.size
    values = check_scores(scores, name="scores", n=n)
    confidence = check_confidence(confidence)
    delta = check_slack(delta, name="delta")

    tie_break = np.random.default_rng(seed).random(n)
    descending = labels[np.lexsort((tie_break, -values))]
    members_in_top = np.concatenate(([0], np.cumsum(descending, dtype=np.int64)))
    nonmembers_in_bottom = np.concatenate(([0], np.cumsum(1 - descending[::-1], dtype=np.int64)))

    ks = np.unique(np.round(np.asarray(guess_fractions) * n).astype(np.int64))
    k_plus, k_minus = (grid.ravel() for grid in np.meshgrid(ks, ks, indexing="ij"))
    keep = (k_plus + k_minus >= 1) & (k_plus + k_minus <= n)
    k_plus, k_minus = k_plus[keep], k_minus[keep]
    r = k_plus + k_minus
    v = members_in_top[k_plus] + nonmembers_in_bottom[k_minus]
    alpha = (1.0 - confidence) / r.size

    if delta > 0:
        bounds = np.array(
            [
                relaxed_theta_lb(int(ri), int(vi), alpha, m=n, slack=delta)
                for ri, vi in zip(r, v, strict=True)
            ]
        )
        index = int(np.argmax(bounds))
        value = float(bounds[index])
    else:
        index, value = argmax_theta_lb(r, v, alpha)
    return O1Result(
        eps_lb=value,
        k_plus=int(k_plus[index]),
        k_minus=int(k_minus[index]),
        r=int(r[index]),
        v=int(v[index]),
        n=n,
        n_grid=int(r.size),
        alpha=alpha,
        confidence=confidence,
        delta=delta,
        p_value=p_at_zero([r[index]], [v[index]], r.size) if delta == 0 else 1.0,
    )


def paired_unit_game(member: object, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The O(1) game at the unit membership was drawn by (docs/SPEC.md §2.4: a text
    document), from ``member`` (0/1 per unit, 1 = a member unit; shape (U,)).

    As many member units as there are non-member ones (the smaller side, m) are drawn at
    random, each side in a random order, paired, and a fair coin per pair shows one of the
    two. Where the units' split into members and non-members was itself drawn at random,
    the pair's order is a fair coin given the pairs, so the shown units' membership is m
    independent fair coins whatever a model that never saw the members makes of them, which
    is O(1)'s null. Returns ``(coins, shown)``: coins (m,) int8, 1 = the member unit is shown;
    shown (m,) the index of the unit shown in each pair.
    """
    labels = check_membership(member)
    rng = np.random.default_rng(seed)
    members, others = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    m = min(members.size, others.size)  # ≥ 1: check_membership wants both classes
    pair_member = rng.permutation(members)[:m]
    pair_other = rng.permutation(others)[:m]
    coins = rng.integers(0, 2, m).astype(np.int8)
    return coins, np.where(coins == 1, pair_member, pair_other)


def o1_on_units(
    member: object,
    loss: object,
    *,
    game_seed: int,
    audit_seed: int,
    confidence: float = 0.95,
    delta: float = 0.0,
) -> O1Result:
    """O(1) played at the unit membership was drawn by (docs/SPEC.md §2.4): the units'
    :func:`paired_unit_game` drawn by ``game_seed``, then :func:`o1_audit` on the shown
    units' ``-loss`` with its ties broken by ``audit_seed``.

    ``member``: 0/1 per unit (1 = a member unit); ``loss``: the target's mean loss per unit
    (nats), shape (U,) like ``member``. The result's ``unit`` is left for the caller to name."""
    coins, shown = paired_unit_game(member, game_seed)
    values = check_scores(loss, name="loss", n=np.asarray(member).size)
    return o1_audit(coins, -values[shown], confidence=confidence, delta=delta, seed=audit_seed)


@dataclass(frozen=True)
class RmRnResult(RealNonmemberBound):
    """RM;RN: the attack against real non-members; c = 0 by construction, ε_lb = {c+ε}_lb."""

    n_thresholds: int
    alpha: float
    confidence: float
    delta: float
    attack: SweepResult
    p_value: float = 1.0
    """The p-value of ε = 0 at its best threshold, Bonferroni over its K tests
    (:func:`panoramia.measure.bounds.p_at_zero`; δ > 0: not computed, 1)."""

    def to_dict(self, *, include_table: bool = False) -> dict[str, object]:
        return {
            **self.bound_dict(),
            "thresholds": str(self.attack.strategy),
            "n_thresholds": self.n_thresholds,
            "alpha": number(self.alpha),
            "confidence": self.confidence,
            "delta": self.delta,
            "p_value": number(self.p_value),
            "attack": self.attack.to_dict(include_table=include_table),
        }


def rmrn(
    membership: object,
    attack_scores: object,
    *,
    thresholds: str | ThresholdStrategy = "grid:100",
    confidence: float = 0.95,
    delta: float = 0.0,
    seed: int = 0,
) -> RmRnResult:
    """RM;RN measurement: one attack test (no baseline, c = 0) at level β / K.

    ``membership`` is 1 for real members and 0 for *real* non-members; ``attack_scores`` are
    the attack's scores on them (higher = member). Thresholds as in :func:`measure`.
    """
    labels = check_membership(membership)
    values = check_scores(attack_scores, name="attack scores", n=labels.size)
    confidence = check_confidence(confidence)
    delta = check_slack(delta, name="delta")
    strategy = ThresholdStrategy.parse(thresholds)
    n_thresholds = strategy.n_tests(labels.size)
    alpha = (1.0 - confidence) / n_thresholds
    result = sweep(values, labels, strategy=strategy, alpha=alpha, slack=delta, seed=seed)
    p_value = 1.0 if delta > 0 else p_at_zero([result.best.r], [result.best.v], n_thresholds)
    return RmRnResult(
        eps_lb=result.best.theta_lb,
        n_thresholds=n_thresholds,
        alpha=alpha,
        confidence=confidence,
        delta=delta,
        attack=result,
        p_value=p_value,
    )
