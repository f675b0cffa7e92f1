"""The two-sided game (``panoramia.measure.two_sided``, docs/SPEC.md §2.6)."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.measure import measure
from panoramia.measure.two_sided import (
    measure_two_sided,
    pair_count,
    rmrn_two_sided,
    two_sided_best,
)
from tests.conftest import bisection_theta_lb


def _oracle(scores: np.ndarray, labels: np.ndarray, grid: int, alpha: float) -> float:
    """Every pair τ_lo ≤ τ_hi, counted row by row, each bound by bisection."""
    tau = np.linspace(0.0, 1.0, grid)
    best = 0.0
    for i in range(grid):
        for j in range(i, grid):
            member, nonmember = scores > tau[j], scores < tau[i]
            r = int(member.sum() + nonmember.sum())
            v = int((member & (labels == 1)).sum() + (nonmember & (labels == 0)).sum())
            if 2 * v > r:
                best = max(best, bisection_theta_lb(r, v, alpha))
    return best


@pytest.mark.parametrize("case", range(6))
def test_the_best_pair_matches_an_exhaustive_search(case: int) -> None:
    rng = np.random.default_rng(case)
    m = int(rng.integers(20, 120))
    labels = rng.integers(0, 2, m)
    scores = np.clip(rng.random(m) * 0.6 + 0.4 * labels * rng.random(m), 0, 1)
    if case % 2:
        scores = np.round(scores, 1)  # scores on the grid points themselves: strict guesses
    grid = int(rng.integers(2, 12))
    alpha = 0.05 / (2 * pair_count(grid))
    best = two_sided_best(scores, labels, grid=grid, alpha=alpha)
    assert best.theta_lb == pytest.approx(_oracle(scores, labels, grid, alpha), abs=1e-7)
    assert best.low <= best.high


def test_non_member_guesses_count() -> None:
    """Members score 0.5–1; half the non-members are plainly non-members (score < 0.05): the
    one-sided game cannot use them, the two-sided game can."""
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(500), np.zeros(500)].astype(int)
    scores = np.r_[rng.uniform(0.5, 1, 500), rng.uniform(0, 0.04, 250), rng.uniform(0.5, 1, 250)]
    two = measure_two_sided(labels, baseline_scores=np.full(1000, 0.5), attack_scores=scores)
    one = measure(labels, baseline_scores=np.full(1000, 0.5), attack_scores=scores)
    assert two.c_lb == 0.0
    assert two.attack.nonmember_guesses == 250
    assert two.attack.nonmember_correct == 250
    assert two.eps_tilde > one.eps_tilde + 1.0


def test_null_scores_rarely_reject() -> None:
    """Scores independent of membership: a bound above 0 is a false rejection, which the test
    allows with probability at most β / 2 per classifier."""
    rng = np.random.default_rng(1)
    rejections = 0
    for _ in range(200):
        labels = rng.integers(0, 2, 400)
        result = measure_two_sided(
            labels, baseline_scores=rng.random(400), attack_scores=rng.random(400)
        )
        rejections += result.c_plus_eps_lb > 0
    assert rejections <= 5  # expected ≤ 200 · 0.025 = 5, and far fewer: Bonferroni is loose


def test_rmrn_is_one_test_at_the_pairs_level() -> None:
    labels = np.r_[np.ones(300), np.zeros(300)].astype(int)
    scores = np.r_[np.full(300, 0.6), np.full(100, 0.01), np.full(200, 0.6)]
    result = rmrn_two_sided(labels, scores, grid=10, confidence=0.95)
    assert result.attack.nonmember_guesses == result.attack.nonmember_correct == 100
    assert result.alpha == pytest.approx(0.05 / 55)
    assert result.eps_lb == pytest.approx(bisection_theta_lb(100, 100, 0.05 / 55), abs=1e-7)
    assert result.to_dict()["attack"]["saturated"] is True


def test_no_pair_above_zero_reports_no_guesses() -> None:
    labels = np.r_[np.ones(50), np.zeros(50)].astype(int)
    point = two_sided_best(np.full(100, 0.5), labels, grid=100, alpha=0.05 / pair_count(100))
    assert (point.theta_lb, point.r, point.low, point.high) == (0.0, 0, 0.0, 1.0)
    assert point.to_dict()["saturated"] is False


@pytest.mark.parametrize("grid", [1, 1001])
def test_grids_outside_the_pairs_range_are_refused(grid: int) -> None:
    with pytest.raises(InputError, match="two-sided game: the grid takes 2 to 1000 points"):
        pair_count(grid)


@pytest.mark.parametrize("bad", [np.full(10, 1.5), np.full(10, -0.1)])
def test_scores_outside_the_unit_interval_are_refused(bad: np.ndarray) -> None:
    labels = np.r_[np.ones(5), np.zeros(5)]
    with pytest.raises(InputError, match=r"attack scores: .*scores in \[0, 1\]"):
        measure_two_sided(labels, baseline_scores=np.full(10, 0.5), attack_scores=bad)
