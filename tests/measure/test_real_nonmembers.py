"""Reference audits: O(1) on hand-computed counts, tie handling, δ; RM;RN."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.measure import ThresholdStrategy, o1_audit, rmrn, sweep, theta_lb
from tests.conftest import simulated_scores


def test_o1_on_hand_computed_counts() -> None:
    # Rows in descending score order: 8 members, 24 alternating N M N M ..., 8 non-members.
    membership = np.r_[np.ones(8, int), np.tile([0, 1], 12), np.zeros(8, int)]
    scores = -np.arange(40.0)  # the first row has the highest score
    # fractions 0 and 0.2 of n = 40: k ∈ {0, 8}; pairs (0, 8), (8, 0), (8, 8).
    result = o1_audit(membership, scores, confidence=0.9, guess_fractions=(0.0, 0.2))
    # (8, 0): 8 of 8 correct; (0, 8): 8 of 8; (8, 8): 16 of 16, the best.
    assert result.n_grid == 3
    assert result.alpha == pytest.approx(0.1 / 3)
    assert (result.k_plus, result.k_minus, result.r, result.v) == (8, 8, 16, 16)
    q = (0.1 / 3) ** (1 / 16)  # P[Bin(16, q) >= 16] = q^16 = alpha
    assert result.eps_lb == pytest.approx(np.log(q / (1 - q)))
    # one wrong guess in the top 8 costs: (8, 8) now has 15 of 16 correct
    membership[3] = 0
    worse = o1_audit(membership, scores, confidence=0.9, guess_fractions=(0.0, 0.2))
    assert (worse.r, worse.v) == (16, 15)
    assert worse.eps_lb == pytest.approx(float(theta_lb(16, 15, 0.1 / 3)))


def test_o1_counts_wrong_guesses_of_both_kinds() -> None:
    membership = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 1])
    scores = -np.arange(10.0)
    result = o1_audit(membership, scores, confidence=0.9, guess_fractions=(0.0, 0.3))
    # (3, 3): top-3 N M M → 2 correct; bottom-3 M N M → 1 correct → v = 3 of 6, bound 0.
    assert result.eps_lb == 0.0


def test_o1_ties_do_not_leak_the_row_order() -> None:
    membership = np.repeat([1, 0], 5000)  # members first
    scores = np.zeros(10_000)  # no information at all
    result = o1_audit(membership, scores)
    assert result.eps_lb == 0.0


def test_o1_finds_leakage_and_delta_lowers_it() -> None:
    rng = np.random.default_rng(0)
    membership = rng.integers(0, 2, 4000)
    losses = rng.exponential(1.0, 4000) * np.where(membership == 1, 0.3, 1.0)
    pure = o1_audit(membership, -losses)
    approx = o1_audit(membership, -losses, delta=1e-5)
    assert pure.eps_lb > 0.5
    assert 0 < approx.eps_lb < pure.eps_lb


def test_o1_null_rarely_reports_leakage() -> None:
    rng = np.random.default_rng(1)
    hits = sum(
        o1_audit(rng.integers(0, 2, 500), rng.normal(size=500), seed=i).eps_lb > 0
        for i in range(300)
    )
    assert hits <= 0.05 * 300


def test_rmrn_is_one_attack_test_at_beta_over_k() -> None:
    rng = np.random.default_rng(2)
    membership, scores = simulated_scores(rng, 3000, shift=1.5)
    result = rmrn(membership, scores, thresholds="grid:100", confidence=0.95)
    assert result.alpha == pytest.approx(0.05 / 100)
    direct = sweep(
        scores, membership, strategy=ThresholdStrategy.parse("grid:100"), alpha=0.05 / 100
    )
    assert result.eps_lb == direct.best.theta_lb > 0
    assert rmrn(membership, scores, delta=1e-5).eps_lb < result.eps_lb
