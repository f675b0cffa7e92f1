"""Reference audits: O(1) on hand-computed counts, tie handling, δ; RM;RN."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.errors import InputError
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


def test_paired_unit_game_pairs_the_smaller_side_and_shows_one_of_each_pair() -> None:
    from panoramia.measure.real_nonmembers import paired_unit_game

    member = np.r_[np.ones(7, int), np.zeros(4, int)]
    coins, shown = paired_unit_game(member, seed=3)
    assert coins.shape == shown.shape == (4,)  # as many pairs as the smaller side's units
    assert np.array_equal(member[shown], coins)  # the coin says which side is shown
    assert np.unique(shown).size == 4
    again = paired_unit_game(member, seed=3)
    assert np.array_equal(again[1], shown)  # seeded
    with pytest.raises(InputError, match="both classes"):
        paired_unit_game(np.ones(5, int), seed=0)


def test_o1_on_units_plays_the_paired_game_then_o1_on_the_shown_units() -> None:
    """One function plays the per-unit O(1) for the audit and its benchmark: the paired game
    by its own seed, then O(1) on the shown units' negated losses."""
    from panoramia.measure.real_nonmembers import o1_audit, o1_on_units, paired_unit_game

    rng = np.random.default_rng(5)
    member = rng.permutation(np.r_[np.ones(40, int), np.zeros(30, int)])
    loss = rng.normal(2.0, 0.5, member.size) - 0.8 * member  # members' losses lower
    result = o1_on_units(member, loss, game_seed=11, audit_seed=12)
    coins, shown = paired_unit_game(member, 11)
    assert result == o1_audit(coins, -loss[shown], seed=12)
    assert result.eps_lb > 0
    with pytest.raises(InputError, match="loss"):
        o1_on_units(member, loss[:-1], game_seed=11, audit_seed=12)


def _clustered_null(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents of 1–40 chunks whose losses share a document effect (no model saw any):
    (document of each chunk, chunk losses, member documents drawn at random)."""
    sizes = rng.integers(1, 41, 120)
    documents = np.repeat(np.arange(sizes.size), sizes)
    losses = rng.normal(0, 1, sizes.size)[documents] + rng.normal(0, 0.3, documents.size)
    return documents, losses, rng.permutation(sizes.size)[:60]


def test_per_document_o1_holds_its_level_where_per_chunk_does_not() -> None:
    """Issue 75: membership drawn per document, chunks sharing their document's loss. Chunk
    by chunk O(1)'s Bin(r, ½) null is wrong (it calls a leak on a model that saw nothing far
    more often than its level); document by document, in the paired game, it holds."""
    from panoramia.measure.real_nonmembers import paired_unit_game

    rng = np.random.default_rng(75)
    chunk_calls = document_calls = 0
    draws = 200
    for draw in range(draws):
        documents, losses, members = _clustered_null(rng)
        is_member = np.isin(documents, members).astype(int)
        slots = min(is_member.sum(), (1 - is_member).sum()) // 2
        pick_m = rng.choice(np.flatnonzero(is_member), slots, replace=False)
        pick_o = rng.choice(np.flatnonzero(1 - is_member), slots, replace=False)
        coins = rng.integers(0, 2, slots)
        shown = np.where(coins == 1, pick_m, pick_o)
        chunk_calls += o1_audit(coins, -losses[shown], seed=draw).p_value <= 0.05
        means = np.bincount(documents, losses) / np.bincount(documents)
        unit_member = np.isin(np.arange(means.size), members).astype(int)
        unit_coins, unit_shown = paired_unit_game(unit_member, seed=draw)
        document_calls += o1_audit(unit_coins, -means[unit_shown], seed=draw).p_value <= 0.05
    assert chunk_calls / draws > 0.3
    assert document_calls / draws <= 0.05
