"""Threshold strategies: parsing, vectorised counts, the exact maximiser, the split's isolation."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.measure import ThresholdStrategy, argmax_theta_lb, sweep, theta_lb
from panoramia.measure.thresholds import MAX_GRID, SortedScores, grid_thresholds
from tests.conftest import simulated_scores


@pytest.mark.parametrize(
    ("spec", "kind", "tests_for_m_1000"),
    [("grid:100", "grid", 100), ("all", "all", 1000), ("split:0.5", "split", 1)],
)
def test_parse_and_test_count(spec: str, kind: str, tests_for_m_1000: int) -> None:
    strategy = ThresholdStrategy.parse(spec)
    assert strategy.kind == kind
    assert str(strategy) == spec
    assert strategy.n_tests(1000) == tests_for_m_1000


@pytest.mark.parametrize("spec", ["grid", "grid:1", "grid:x", "all:3", "split:1.5", "split:0", ""])
def test_parse_rejects_malformed(spec: str) -> None:
    with pytest.raises(InputError, match="thresholds"):
        ThresholdStrategy.parse(spec)


def test_grid_size_is_bounded() -> None:
    """K above MAX_GRID is refused by name, before any of its K thresholds is allocated."""
    assert ThresholdStrategy.parse(f"grid:{MAX_GRID}").count == MAX_GRID
    for spec in (f"grid:{MAX_GRID + 1}", "grid:2000000000"):
        with pytest.raises(InputError, match=rf"^thresholds: grid:K takes at most K = {MAX_GRID}"):
            ThresholdStrategy.parse(spec)
    with pytest.raises(InputError, match="at most K"):
        ThresholdStrategy("grid", count=10**12)
    with pytest.raises(InputError, match=r"'grid:9999.*'…"):
        ThresholdStrategy.parse("grid:" + "9" * 5000)  # the echoed spec is cut short


def test_counts_match_brute_force_with_ties() -> None:
    rng = np.random.default_rng(0)
    scores = np.round(rng.random(400), 2)  # many ties
    membership = rng.integers(0, 2, 400)
    sorted_scores = SortedScores.build(scores, membership)
    taus = grid_thresholds(37)
    r, v = sorted_scores.counts(taus, inclusive=False)
    for tau, r_i, v_i in zip(taus, r, v, strict=True):
        guess = scores > tau
        assert (r_i, v_i) == (guess.sum(), (guess & (membership == 1)).sum())
    distinct, r, v = sorted_scores.distinct
    np.testing.assert_array_equal(distinct, np.unique(scores))
    for tau, r_i, v_i in zip(distinct, r, v, strict=True):
        guess = scores >= tau
        assert (r_i, v_i) == (guess.sum(), (guess & (membership == 1)).sum())


@pytest.mark.parametrize("shift", [0.0, 0.3, 1.0, 4.0])
@pytest.mark.parametrize("rounding", [None, 2])
def test_pruned_argmax_equals_full_argmax(shift: float, rounding: int | None) -> None:
    rng = np.random.default_rng(int(shift * 10) + (rounding or 0))
    for m in (50, 2000, 30_000):
        membership, scores = simulated_scores(rng, m, shift=shift)
        if rounding is not None:
            scores = np.round(scores, rounding)
        _, r, v = SortedScores.build(scores, membership).distinct
        alpha = 0.05 / (2 * m)
        full = theta_lb(r, v, alpha)
        index, value = argmax_theta_lb(r, v, alpha)
        assert index == int(np.argmax(full))
        assert value == float(full.max())


def test_split_never_uses_the_test_part_to_choose_tau() -> None:
    rng = np.random.default_rng(5)
    membership, scores = simulated_scores(rng, 2000, shift=1.5)
    strategy = ThresholdStrategy.parse("split:0.5")
    reference = sweep(scores, membership, strategy=strategy, alpha=0.025, seed=11)
    # Rebuild the test part from scratch: scramble its scores and labels entirely.
    perm = np.random.default_rng(11).permutation(2000)
    test_rows = np.sort(perm[1000:])
    scrambled_scores, scrambled_labels = scores.copy(), membership.copy()
    scrambled_scores[test_rows] = rng.random(test_rows.size)
    scrambled_labels[test_rows] = rng.integers(0, 2, test_rows.size)
    other = sweep(scrambled_scores, scrambled_labels, strategy=strategy, alpha=0.025, seed=11)
    assert other.best.threshold == reference.best.threshold
    np.testing.assert_array_equal(other.table.r, reference.table.r)
    # ... while the tested counts come from the test part only.
    assert (other.best.r, other.best.v) != (reference.best.r, reference.best.v)
    assert reference.best.n_positive == membership[test_rows].sum()


def test_split_partition_depends_on_seed() -> None:
    rng = np.random.default_rng(6)
    membership, scores = simulated_scores(rng, 1000, shift=1.0)
    strategy = ThresholdStrategy.parse("split:0.3")
    first = sweep(scores, membership, strategy=strategy, alpha=0.025, seed=0)
    second = sweep(scores, membership, strategy=strategy, alpha=0.025, seed=1)
    assert first.table.tau.size == 300  # the choose part only
    assert not np.array_equal(first.table.tau, second.table.tau)
