"""The (c, γ) / (ε, δ) relaxations of docs/SPEC.md §2.3."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import binom

from panoramia.measure import (
    ThresholdStrategy,
    attack_slack,
    measure,
    relaxed_p_value,
    relaxed_theta_lb,
    sweep,
    theta_lb,
)
from tests.conftest import simulated_scores


def _brute_force_p_value(r: int, v: int, theta: float, m: int, slack: float) -> float:
    """The docs/SPEC.md formula written literally, one i at a time."""
    q = expit(theta)
    a_term = max((binom.cdf(v - 1, r, q) - binom.cdf(v - i - 1, r, q)) / i for i in range(1, v + 1))
    return float(binom.sf(v - 1, r, q) + a_term * 2 * m * slack)


def test_p_value_matches_the_formula() -> None:
    rng = np.random.default_rng(0)
    for _ in range(60):
        r = int(rng.integers(1, 300))
        v = int(rng.integers(1, r + 1))
        theta = float(rng.uniform(0, 4))
        m, slack = int(rng.integers(r, 2000)), float(10 ** rng.uniform(-9, -3))
        assert relaxed_p_value(r, v, theta, m=m, slack=slack) == pytest.approx(
            _brute_force_p_value(r, v, theta, m, slack), rel=1e-9, abs=1e-14
        )


def test_zero_slack_reduces_to_the_exact_test() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        r = int(rng.integers(1, 5000))
        v = int(rng.integers(0, r + 1))
        alpha = float(10 ** rng.uniform(-8, -1))
        assert relaxed_theta_lb(r, v, alpha, m=10_000, slack=0.0) == pytest.approx(
            float(theta_lb(r, v, alpha)), abs=1e-8
        )


def test_relaxed_bound_decreases_with_slack() -> None:
    r, v, alpha, m = 800, 760, 1e-4, 5000
    values = [relaxed_theta_lb(r, v, alpha, m=m, slack=s) for s in (0, 1e-9, 1e-7, 1e-6, 1e-5)]
    assert values[0] == pytest.approx(float(theta_lb(r, v, alpha)), abs=1e-9)
    assert all(a >= b for a, b in itertools.pairwise(values))
    assert values[-1] < values[0]


def test_attack_slack_is_the_union() -> None:
    assert attack_slack(gamma=0.0, delta=1e-5) == 1e-5
    assert attack_slack(gamma=0.1, delta=0.2) == pytest.approx(0.1 + 0.2 - 0.02)


def test_relaxed_maximiser_equals_brute_force_over_thresholds() -> None:
    rng = np.random.default_rng(2)
    membership, scores = simulated_scores(rng, 3000, shift=1.5)
    strategy = ThresholdStrategy.parse("grid:40")
    alpha, slack = 0.05 / 80, 1e-6
    result = sweep(scores, membership, strategy=strategy, alpha=alpha, slack=slack)
    table = result.table
    brute = [
        relaxed_theta_lb(int(r), int(v), alpha, m=3000, slack=slack)
        for r, v in zip(table.r, table.v, strict=True)
    ]
    assert result.best.theta_lb == pytest.approx(max(brute), abs=1e-10)
    assert result.best.theta_lb < float(table.theta_lb.max())


def test_measure_with_gamma_and_delta() -> None:
    rng = np.random.default_rng(3)
    membership, baseline = simulated_scores(rng, 4000, shift=1.0)
    attack = np.clip(baseline + 0.2 * membership * rng.random(4000), 0, 1)
    exact = measure(membership, baseline_scores=baseline, attack_scores=attack)
    zero = measure(membership, baseline_scores=baseline, attack_scores=attack, gamma=0, delta=0)
    relaxed = measure(
        membership, baseline_scores=baseline, attack_scores=attack, gamma=1e-6, delta=1e-5
    )
    assert (zero.c_lb, zero.c_plus_eps_lb) == (exact.c_lb, exact.c_plus_eps_lb)
    assert relaxed.c_lb < exact.c_lb
    assert relaxed.c_plus_eps_lb < exact.c_plus_eps_lb
    assert relaxed.attack.slack == pytest.approx(attack_slack(gamma=1e-6, delta=1e-5))
