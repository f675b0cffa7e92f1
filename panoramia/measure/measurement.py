"""The PANORAMIA measurement (docs/SPEC.md §2.2): c_lb, {c+ε}_lb and ε̃ from baseline and
attack scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from panoramia.errors import InputError
from panoramia.measure.bounds import saturation_ceiling
from panoramia.measure.game_result import GameBounds
from panoramia.measure.jsonable import number
from panoramia.measure.relaxed import attack_slack
from panoramia.measure.sweep import SweepResult, sweep
from panoramia.measure.thresholds import ThresholdStrategy
from panoramia.measure.validation import (
    check_confidence,
    check_membership,
    check_scores,
    check_slack,
)

INTERPRETATION = (
    "ε̃ is not a lower bound on ε. The audit could not reject c-closeness of the generator for "
    "c = c_lb; if that is tight, the target cannot be ε̃-DP."
)


@dataclass(frozen=True)
class Measurement(GameBounds):
    """Result of the two tests on one audit set (baseline vs one attack): ``c_lb`` and
    ``c_plus_eps_lb`` from the sweeps over thresholds."""

    strategy: ThresholdStrategy
    n_thresholds: int
    """K, the thresholds counted by the Bonferroni correction."""
    alpha_per_test: float
    """β / (2K): the level of each threshold's test (2 tests: baseline and attack)."""
    m: int
    """Size of the audit set."""
    confidence: float
    gamma: float
    delta: float
    seed: int
    """Seed of the ``split`` partition (unused by the other strategies)."""
    baseline: SweepResult
    attack: SweepResult

    @property
    def saturated(self) -> bool:
        """True when either maximiser has precision 1 (a count of error-free guesses)."""
        return self.baseline.best.saturated or self.attack.best.saturated

    def detectable(self) -> dict[str, float | int | None]:
        """How much this audit could show at its size: ``members`` in the tested audit set,
        ``c_plus_eps_max`` = logit(α^(1/r)) with α the per-test level and r those members
        (the bound of r error-free member guesses: no attack can show more), and
        ``eps_tilde_max`` = max(0, c_plus_eps_max − c_lb) (nats); the same two for twice the
        members (``…_doubled``), what a larger audit would reach."""
        members = int(self.attack.roc.n_positive)
        ceiling = float(saturation_ceiling(members, self.alpha_per_test))
        doubled = float(saturation_ceiling(2 * members, self.alpha_per_test))
        return {
            "members": members,
            "c_plus_eps_max": number(ceiling),
            "eps_tilde_max": number(max(0.0, ceiling - self.c_lb)),
            "c_plus_eps_max_doubled": number(doubled),
            "eps_tilde_max_doubled": number(max(0.0, doubled - self.c_lb)),
        }

    def to_dict(self, *, include_table: bool = False) -> dict[str, Any]:
        """JSON-safe document; ``include_table`` adds every threshold's row (large for ``all``)."""
        return {
            **self.bounds_dict(),
            "alpha_per_test": number(self.alpha_per_test),
            "thresholds": str(self.strategy),
            "n_thresholds": self.n_thresholds,
            "m": self.m,
            "confidence": self.confidence,
            "gamma": self.gamma,
            "delta": self.delta,
            "seed": self.seed,
            "saturated": self.saturated,
            "interpretation": INTERPRETATION,
            "baseline": self.baseline.to_dict(include_table=include_table),
            "attack": self.attack.to_dict(include_table=include_table),
        }


def measure(
    membership: object,
    *,
    baseline_scores: object,
    attack_scores: object,
    thresholds: str | ThresholdStrategy = "grid:100",
    confidence: float = 0.95,
    gamma: float = 0.0,
    delta: float = 0.0,
    seed: int = 0,
) -> Measurement:
    """Run the baseline and attack tests of PANORAMIA on one audit set.

    Args:
        membership: 0/1 per audit example, 1 = real member (positive class), 0 = generated
            non-member; shape (m,).
        baseline_scores: baseline classifier's scores, higher = more member-like; shape (m,).
            ``grid:K`` needs probabilities in [0, 1].
        attack_scores: the MIA's scores on the same examples, same convention.
        thresholds: ``grid:K``, ``all`` or ``split:F`` (docs/SPEC.md §2.2).
        confidence: 1 − β, split over the two tests and the K thresholds.
        gamma: γ of (c, γ)-closeness (relaxed baseline and attack tests, docs/SPEC.md §2.3).
        delta: δ of (ε, δ)-DP (relaxed attack test).
        seed: seed of the ``split`` partition (the same partition for both classifiers).

    Raises:
        InputError: on bad labels or scores (naming which), or a malformed strategy.
    """
    labels = check_membership(membership)
    m = labels.size
    baseline = check_scores(baseline_scores, name="baseline scores", n=m)
    attack = check_scores(attack_scores, name="attack scores", n=m)
    confidence = check_confidence(confidence)
    gamma = check_slack(gamma, name="gamma")
    delta = check_slack(delta, name="delta")
    strategy = ThresholdStrategy.parse(thresholds)
    if strategy.kind == "grid":
        _check_probabilities(baseline, "baseline scores", strategy)
        _check_probabilities(attack, "attack scores", strategy)

    n_thresholds = strategy.n_tests(m)
    alpha = (1.0 - confidence) / (2 * n_thresholds)
    baseline_sweep = sweep(baseline, labels, strategy=strategy, alpha=alpha, slack=gamma, seed=seed)
    attack_sweep = sweep(
        attack,
        labels,
        strategy=strategy,
        alpha=alpha,
        slack=attack_slack(gamma=gamma, delta=delta),
        seed=seed,
    )
    return Measurement(
        c_lb=baseline_sweep.best.theta_lb,
        c_plus_eps_lb=attack_sweep.best.theta_lb,
        strategy=strategy,
        n_thresholds=n_thresholds,
        alpha_per_test=alpha,
        m=m,
        confidence=confidence,
        gamma=gamma,
        delta=delta,
        seed=seed,
        baseline=baseline_sweep,
        attack=attack_sweep,
    )


def _check_probabilities(scores: np.ndarray, name: str, strategy: ThresholdStrategy) -> None:
    low, high = float(scores.min()), float(scores.max())
    if low < 0.0 or high > 1.0:
        raise InputError(
            f"{name}: {strategy} thresholds lie in [0, 1] but the scores span "
            f"[{low:.4g}, {high:.4g}]; pass probabilities or use thresholds 'all' or 'split:F'"
        )
