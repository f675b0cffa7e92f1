"""The reference attack (docs/SPEC.md §2.4): RMIA's and LiRA's offline scores, read in
attacker terms from the sorted scores, and its O(1) test on fair-coin pairs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from panoramia.measure.reference_attack import (
    OFFLINE_A,
    auc_exact,
    lira_offline_scores,
    loss_scores,
    reference_attack,
    rmia_offline_scores,
    tpr_at_fpr_exact,
)


def _published_rmia_counts(
    target_p: np.ndarray, reference_p: np.ndarray, z_target_p: np.ndarray,
    z_reference_p: np.ndarray, a: float, gamma: float = 1.0,
) -> np.ndarray:  # fmt: skip
    """RMIA's offline score as ML Privacy Meter publishes it (``modules/mia/attacks/rmia.py``,
    read 2026-12-07; rewritten here from its description, not copied): Pr(x) from the mean OUT
    reference probability, ((1 + a) · mean + (1 − a)) / 2; the ratio of the target's
    probability to it, for the scored rows x and for the population rows z alike; the score of
    x is the share of z with ratio_x / ratio_z > γ (γ = 1)."""
    prior_x = (1 + a) / 2 * reference_p.mean(axis=1) + (1 - a) / 2
    prior_z = (1 + a) / 2 * z_reference_p.mean(axis=1) + (1 - a) / 2
    ratio_x = target_p / prior_x
    ratio_z = z_target_p / prior_z
    return np.mean(ratio_x[:, None] / ratio_z[None, :] > gamma, axis=1)


def _losses(rng: np.random.Generator, n: int, k: int, leak: float) -> tuple:
    """Per-row difficulty shared by every model, the target's losses ``leak`` nats lower on
    the members (the first half)."""
    difficulty = rng.gamma(2.0, 0.4, n)
    member = np.r_[np.ones(n // 2, np.int8), np.zeros(n - n // 2, np.int8)]
    references = np.abs(difficulty + rng.normal(0, 0.15, (k, n)))
    target = np.abs(difficulty + rng.normal(0, 0.15, n) - leak * member)
    return target, references, member


def test_rmia_ranks_rows_as_the_published_formula_and_gives_its_figures() -> None:
    rng = np.random.default_rng(7)
    target, references, member = _losses(rng, 600, 3, leak=0.3)
    z_target, z_references, _ = _losses(rng, 4000, 3, leak=0.0)  # a population of non-members
    counts = _published_rmia_counts(
        np.exp(-target), np.exp(-references).T, np.exp(-z_target), np.exp(-z_references).T,
        OFFLINE_A,
    )  # fmt: skip
    ours = rmia_offline_scores(target, references)
    # the published count never orders two rows against our score
    order = np.argsort(ours)
    assert np.all(np.diff(counts[order]) >= 0)
    # so the figures agree, up to the count's steps of 1/|Z| (ties)
    assert auc_exact(ours, member) == pytest.approx(roc_auc_score(member, counts), abs=2e-3)
    for fpr in (0.01, 0.1):
        assert tpr_at_fpr_exact(ours, member, fpr)[0] == pytest.approx(
            tpr_at_fpr_exact(counts, member, fpr)[0], abs=0.02
        )
    assert auc_exact(ours, member) > 0.6  # the leak is found


def test_rmia_offline_coefficient_is_checked() -> None:
    with pytest.raises(ValueError, match="offline_a"):
        rmia_offline_scores([1.0, 2.0], [[1.0, 2.0]], offline_a=1.5)
    with pytest.raises(ValueError, match="expected shape"):
        rmia_offline_scores([1.0, 2.0], [[1.0, 2.0, 3.0]])


def test_lira_offline_is_a_one_sided_gaussian_test_with_one_global_scale() -> None:
    target = np.array([0.1, 0.5, 1.0])
    references = np.array([[0.2, 0.6, 1.1], [0.4, 0.4, 0.9]])

    def phi(loss: np.ndarray) -> np.ndarray:
        p = np.exp(-loss)
        return np.log(p / (1 - p))

    mu = phi(references).mean(axis=0)
    sigma = np.sqrt(np.var(phi(references), axis=0, ddof=1).mean())
    expected = (phi(target) - mu) / sigma
    assert lira_offline_scores(target, references) == pytest.approx(expected)
    # its p-value, 1 − Φ(statistic), falls as the statistic rises
    assert np.all(np.diff(norm.sf(expected)[np.argsort(expected)]) <= 0)


def test_tpr_at_fpr_is_read_exactly_with_the_fpr_it_realises() -> None:
    scores = np.array([9, 8, 8, 7, 6, 5, 4, 3, 2, 1], dtype=float)
    member = np.array([1, 1, 0, 1, 0, 1, 0, 0, 0, 0])
    # score ≥ 9: TPR 1/4, FPR 0; ≥ 8 (a tie of a member and a non-member, taken together):
    # 2/4 at 1/6; ≥ 7: 3/4 at 1/6, the most at FPR ≤ 1/6
    assert tpr_at_fpr_exact(scores, member, 0.1) == (0.25, 0.0)
    assert tpr_at_fpr_exact(scores, member, 1 / 6) == (0.75, pytest.approx(1 / 6))
    assert tpr_at_fpr_exact(scores, member, 0.34) == (1.0, pytest.approx(2 / 6))
    assert auc_exact(scores, member) == pytest.approx(roc_auc_score(member, scores))


def test_its_test_holds_its_level_on_models_that_never_saw_the_members() -> None:
    """Under the null (the target one more model like the references) the pair game's
    Bin(r, ½) null holds: ε_lb > 0 in at most ~5 % of 200 draws (its level)."""
    rng = np.random.default_rng(3)
    called = 0
    for draw in range(200):
        target, references, member = _losses(rng, 300, 3, leak=0.0)
        found = reference_attack(
            "rmia", target, references, member, game_seed=draw, audit_seed=draw, draws=19
        )
        called += found.eps_lb > 0
        assert (found.test.p_value <= 0.05) == (found.eps_lb > 0)
    assert called <= 0.05 * 200 + 5  # 5 %, with room for chance (binomial sd ≈ 3)


def test_a_leak_is_read_in_attacker_terms_with_intervals() -> None:
    rng = np.random.default_rng(5)
    target, references, member = _losses(rng, 2000, 3, leak=0.5)
    found = reference_attack("rmia", target, references, member, draws=199, level=0.9)
    assert found.members == found.nonmembers == 1000
    assert found.references == 3
    assert found.eps_lb > 0
    assert found.test.p_value < 1e-6
    tpr, realised = found.tpr_at_fpr[0.01]
    assert realised <= 0.01
    assert tpr > 0.05  # far above the 1 % a model that never saw them would catch
    low, high = found.tpr_interval[0.01]
    assert low <= tpr <= high
    figures = found.to_dict()
    assert figures["realised_fpr"]["0.01"] == realised
    assert figures["offline_a"] == OFFLINE_A
    assert figures["test"]["n"] == 1000  # one guess slot per pair
    lira = reference_attack("lira", target, references, member, draws=199)
    assert "offline_a" not in lira.to_dict()
    with pytest.raises(ValueError, match="attack"):
        reference_attack("mystery", target, references, member)


def test_the_loss_attack_reads_the_target_alone_and_the_references_add_to_it() -> None:
    """The plain loss attack (−loss_f, no reference model) on the same rows: where rows differ
    in difficulty far more than the leak moves a member's loss, it catches few members at
    1 % FPR, and RMIA, which divides each row's difficulty out, catches many more."""
    rng = np.random.default_rng(11)
    target, references, member = _losses(rng, 4000, 3, leak=0.3)
    assert loss_scores(target) == pytest.approx(-target)
    loss = reference_attack("loss", target, references, member, draws=99)
    rmia = reference_attack("rmia", target, references, member, draws=99)
    assert loss.references == 0
    assert loss.to_dict()["attack"] == "loss"
    assert "offline_a" not in loss.to_dict()
    assert loss.auc == pytest.approx(roc_auc_score(member, -target))
    assert rmia.tpr_at_fpr[0.01][0] > 3 * loss.tpr_at_fpr[0.01][0]
    assert rmia.auc > loss.auc


def test_groups_are_tested_family_wise_by_one_permutation_of_the_labels() -> None:
    """docs/SPEC.md §2.4, "by group": under the null no group stands out in more than ~α of
    the draws (family-wise); a group whose members alone the model knows stands out, and a
    group too small to test gets its counts only."""
    from panoramia.measure.reference_groups import group_readings

    rng = np.random.default_rng(11)
    n = 600
    member = rng.permutation(np.r_[np.ones(n // 2, np.int8), np.zeros(n // 2, np.int8)])
    colour = rng.integers(0, 3, n)
    tiny = np.zeros(n, bool)
    tiny[:15] = True
    groups = [("colour", str(c), colour == c) for c in range(3)] + [("tiny", "yes", tiny)]
    called = 0
    for draw in range(60):
        scores = rng.normal(size=n)  # a model that never saw the members
        found = group_readings(scores, member, groups, draws=99, seed=draw)
        called += any(g.stands_out for g in found)
    assert called <= 0.05 * 60 + 4  # family-wise 5 %, with room for chance
    scores = rng.normal(size=n) + 1.0 * ((colour == 2) & (member == 1))  # only group 2 leaks
    found = {g.value: g for g in group_readings(scores, member, groups, draws=199, seed=1)}
    assert found["2"].stands_out
    assert found["2"].auc > 0.7
    assert not found["0"].stands_out
    assert found["yes"].auc is None
    assert found["yes"].p is None
    assert found["yes"].members + found["yes"].nonmembers == 15
    untested = group_readings(scores, member, groups, tested=False)
    assert all(g.p is None and not g.stands_out for g in untested)
    assert untested[2].auc == pytest.approx(found["2"].auc)


def test_a_rate_too_small_for_the_held_out_rows_is_not_read() -> None:
    """With 150 held-out rows, 1 in 1,000 would flag none of them: no TPR is read there (a
    TPR at zero false positives is not a rate at 0.1 %), as the page then says."""
    rng = np.random.default_rng(2)
    target, references, member = _losses(rng, 300, 3, leak=0.3)
    found = reference_attack("rmia", target, references, member, draws=19)
    assert found.nonmembers == 150
    assert found.tpr_at_fpr[0.001] is None
    assert found.tpr_at_fpr[0.01] is not None
    figures = found.to_dict()
    assert figures["tpr_at_fpr"]["0.001"] is None
    assert figures["realised_fpr"]["0.001"] is None
