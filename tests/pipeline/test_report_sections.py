"""The report's attacker and exposure sections on scores whose answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from panoramia.errors import InputError
from panoramia.measure import measure
from panoramia.report.attacker import attacker_section, in_ten, two_sided_sentence
from panoramia.report.digest import report_digest
from panoramia.report.exposure import exposure_section


def _game(seed: int = 0, m: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Coins and scores where members of group "b" (a fifth of the rows) score high."""
    rng = np.random.default_rng(seed)
    coins = rng.integers(0, 2, m)
    group = np.where(np.arange(m) % 5 == 0, "b", "a")
    scores = rng.uniform(0, 0.8, m) + 0.3 * ((coins == 1) & (group == "b"))
    return coins, np.clip(scores, 0, 1)


def test_the_exposed_group_is_the_one_that_leaks_and_small_groups_are_not_ranked() -> None:
    coins, scores = _game()
    rows = pd.DataFrame({
        "group": np.where(np.arange(coins.size) % 5 == 0, "b", "a"),
        "rare": np.where(np.arange(coins.size) < 16, "x", "y"),  # at most 16 members
        "age": np.arange(coins.size) % 90,
    })  # fmt: skip
    section = exposure_section(rows, ["group", "rare", "age"], coins, scores, min_group=20)
    ranked = [g for g in section["groups"] if not g["small"]]
    assert (ranked[0]["column"], ranked[0]["value"]) == ("group", "b")
    assert ranked[0]["tpr"] > 0.25 > 0.05 > max(g["tpr"] for g in ranked if g["value"] == "a")
    small = [g for g in section["groups"] if g["small"]]
    assert [(g["column"], g["value"]) for g in small] == [("rare", "x")]
    assert section["groups"][-1]["small"]  # listed last, never ranked
    assert len({g["value"] for g in section["groups"] if g["column"] == "age"}) == 4  # quartiles
    non_members = scores[coins == 0]
    assert np.mean(non_members > section["threshold"]) <= 0.01
    assert [r["rank"] for r in section["records"]] == list(range(1, 11))
    top = np.sort(scores[coins == 1])[::-1][:10]
    assert [r["score"] for r in section["records"]] == list(top)
    assert all(r["values"]["group"] == "b" for r in section["records"])


def test_the_attacker_sentence_compares_both_sides_at_one_count() -> None:
    coins, attack = _game(1, m=8000)  # the measurement's half: 2,000 non-members
    rng = np.random.default_rng(2)
    baseline = rng.uniform(0, 1, coins.size)
    result = measure(coins, baseline_scores=baseline, attack_scores=attack, seed=0)
    section = attacker_section(result, coins, attack, baseline)
    assert section["flagged"] <= 800  # at most 10 % of the records
    assert section["attack"]["top_precision"] > section["baseline"]["top_precision"]
    assert section["attack"]["auc"] > section["baseline"]["auc"]
    # ~4,000 non-members: at 0.1 % four can be wrongly flagged, so the TPR is read, with an
    # interval that holds it; with fewer than 1,000 it cannot be
    for key in ("0.001", "0.01"):
        low, high = section["attack"]["tpr_at_fpr_interval"][key]
        assert low <= section["attack"]["tpr_at_fpr"][key] <= high
    low, high = section["attack"]["auc_interval"]
    assert low < section["attack"]["auc"] < high
    assert section["baseline"]["auc_interval"][1] < low  # the attack's AUC is clearly higher
    small = attacker_section(result, coins[:1500], attack[:1500], baseline[:1500])
    assert small["attack"]["tpr_at_fpr"]["0.001"] is None
    assert small["attack"]["tpr_at_fpr_interval"]["0.001"] is None
    assert small["attack"]["tpr_at_fpr"]["0.01"] is not None
    assert section["member_side"].startswith("Finding your records: wrongly flagging 1 in 100")
    fraction = section["flagged_fraction"]
    shown = f"{fraction:.0%}" if fraction >= 0.1 else f"{fraction:.1%}"  # as the table shows it
    assert section["sentence"].startswith(f"Flagging the {shown} of")
    assert in_ten(section["attack"]["top_precision"]) in section["sentence"]
    assert in_ten(0.5) == "5 times in 10"
    assert in_ten(0.66) == "6.6 times in 10"
    calls = {"member_guesses": 0, "member_correct": 0,
             "nonmember_guesses": 213, "nonmember_correct": 213}  # fmt: skip
    base = {"member_guesses": 400, "member_correct": 267,
            "nonmember_guesses": 98, "nonmember_correct": 66}  # fmt: skip
    words = two_sided_sentence(calls, base, 3750)
    assert "calls 213 records (5.7%) non-members and is right every time" in words
    assert "without the model, 333 of 498 (6.7 times in 10)" in words


def test_the_digest_writes_the_attacker_sentence_anew_from_its_numbers() -> None:
    coins, attack = _game(3)
    baseline = np.random.default_rng(4).uniform(0, 1, coins.size)
    result = measure(coins, baseline_scores=baseline, attack_scores=attack, seed=0)
    section = attacker_section(result, coins, attack, baseline)
    forged = section | {"sentence": "<script>alert(1)</script> nothing leaks"}
    digest = report_digest({"attacker": forged, "m": int(coins.size)})
    assert digest["attacker"]["sentence"] == section["sentence"]
    assert digest["attacker"]["attack"]["auc"] == section["attack"]["auc"]
    assert report_digest({"attacker": {"attack": {"auc": "nan"}}})["attacker"] is None


def test_a_group_stands_out_only_where_the_attack_flags_more_than_the_baseline() -> None:
    """The leaking group stands out; with the same model noise on both sides, none does."""
    coins, scores = _game(5, m=4000)
    rng = np.random.default_rng(6)
    rows = pd.DataFrame({
        "group": np.where(np.arange(coins.size) % 5 == 0, "b", "a"),
        "c": rng.integers(0, 6, coins.size),
    })  # fmt: skip
    baseline = np.clip(rng.uniform(0, 0.8, coins.size), 0, 1)
    leak = exposure_section(rows, ["group", "c"], coins, scores, baseline_scores=baseline,
                            draws=199, seed=1)  # fmt: skip
    first = leak["groups"][0]
    assert (first["column"], first["value"], first["stands_out"]) == ("group", "b", True)
    assert first["p"] <= 0.05
    assert first["baseline_share"] < first["interval"][0]
    assert first["interval"][0] <= first["share"] <= first["interval"][1]
    assert not any(g["stands_out"] for g in leak["groups"] if g["value"] == "a")
    same = np.clip(rng.uniform(0, 0.8, coins.size), 0, 1)
    quiet = exposure_section(rows, ["group", "c"], coins, same, baseline_scores=baseline,
                             draws=199, seed=1)  # fmt: skip
    assert quiet["standing_out"] == 0
    assert all(g["p"] is not None and g["p"] > 0.05 for g in quiet["groups"])
    # what the test could have seen: a larger group needs a smaller excess to stand out, and
    # the standing group's excess is past its own mark
    sizes = {(g["column"], g["value"]): g for g in leak["groups"]}
    assert 0 < sizes[("group", "a")]["detectable"] < sizes[("group", "b")]["detectable"] < 1
    assert first["share"] - first["baseline_share"] >= first["detectable"]
    assert all(0 < g["detectable"] < 1 for g in quiet["groups"])
    unmirrored = exposure_section(rows, ["group"], coins, scores, baseline_scores=baseline,
                                  tested=False, draws=99)  # fmt: skip
    assert all(g["p"] is None and not g["stands_out"] for g in unmirrored["groups"])


def test_the_groups_are_read_at_the_rate_asked_and_never_below_what_the_slots_resolve() -> None:
    """``audit.group_fpr`` sets the rate each side flags at; with under 100 non-member slots
    1 % is unresolvable and 10 % is read instead."""
    coins, scores = _game(5, m=1000)
    rows = pd.DataFrame({"group": np.where(np.arange(coins.size) % 5 == 0, "b", "a")})
    by_default = exposure_section(rows, ["group"], coins, scores)
    asked = exposure_section(rows, ["group"], coins, scores, fpr=0.1)
    assert (by_default["fpr"], asked["fpr"]) == (0.01, 0.1)
    non_members = scores[coins == 0]
    assert (
        np.mean(non_members > asked["threshold"])
        <= 0.1
        < 2 * np.mean(non_members > asked["threshold"])
    )
    assert asked["overall_tpr"] > by_default["overall_tpr"]
    few = np.flatnonzero(coins == 0)[60:]  # 60 non-member slots left
    kept = np.setdiff1d(np.arange(coins.size), few)
    small = exposure_section(rows.iloc[kept].reset_index(drop=True), ["group"], coins[kept],
                             scores[kept], fpr=0.02)  # fmt: skip
    assert small["fpr"] == 0.1


def test_the_group_test_holds_its_family_wise_rate_on_exchangeable_sides() -> None:
    """30 audits whose attack and baseline are draws of the same noisy model: a group stands
    out in at most a few (α = 0.05 family-wise; 0 of 100 in a longer run of this check)."""
    runs = _exchangeable_audits(first_seed=100, m=1500, n_groups=8, statistic="share")
    standing = sum(any(g.stands_out for g in found) for *_, found in runs)
    assert standing <= 4


def _exchangeable_audits(
    *, first_seed: int, m: int, n_groups: int, statistic: str
) -> list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray], list]]:
    """30 group tests (at 1 %, 99 draws) whose attack and baseline are draws of the same noisy
    model of m slots with ``n_groups`` groups of members: (coins, sides, groups, found) each."""
    from panoramia.measure.groups import groups_against_chance

    runs = []
    for index in range(30):
        rng = np.random.default_rng(first_seed + index)
        coins = rng.integers(0, 2, m)
        common = rng.normal(0, 1, m) + 0.5 * coins
        sides = [np.stack([1 / (1 + np.exp(-(common + rng.normal(0, 0.7, m)))) for _ in "abc"])
                 for _ in range(2)]  # fmt: skip
        codes = rng.integers(0, n_groups, m)
        groups = [np.flatnonzero((codes == c) & (coins == 1)) for c in range(n_groups)]
        found = groups_against_chance(coins, sides[0], sides[1], groups,
                                      tested=[True] * n_groups, fpr=0.01, draws=99, seed=index,
                                      statistic=statistic)  # fmt: skip
        runs.append((coins, sides, groups, found))
    return runs


def test_the_pool_feeds_only_the_false_positive_side() -> None:
    """Extra generated non-members resolve TPR at 0.1 % FPR and change nothing else."""
    coins, attack = _game(7, m=1200)  # ~600 non-members: 0.1 % cannot be read
    rng = np.random.default_rng(8)
    baseline = rng.uniform(0, 1, coins.size)
    result = measure(coins, baseline_scores=baseline, attack_scores=attack, seed=0)
    alone = attacker_section(result, coins, attack, baseline, draws=99)
    pool = (rng.uniform(0, 0.8, 1500), rng.uniform(0, 1, 1500))  # generated: no member boost
    pooled = attacker_section(result, coins, attack, baseline, draws=99, pool=pool)
    assert alone["attack"]["tpr_at_fpr"]["0.001"] is None
    assert pooled["attack"]["tpr_at_fpr"]["0.001"] is not None
    assert pooled["attack"]["fpr_negatives"] == alone["attack"]["fpr_negatives"] + 1500
    for side in ("attack", "baseline"):
        for key in ("auc", "auc_interval", "advantage", "top_precision"):
            assert pooled[side][key] == alone[side][key], (side, key)
    assert pooled["sentence"] == alone["sentence"]


def test_the_rank_statistic_is_each_groups_auc_and_holds_its_family_wise_rate() -> None:
    """``rank`` reads each group's AUC against every non-member (sklearn's, ties half): on
    exchangeable sides a group stands out in at most a few of 30 audits; a small group whose
    members the attack ranks a little higher everywhere stands out by rank where one low rate
    holds too few flags to show it."""
    from sklearn.metrics import roc_auc_score

    from panoramia.measure.groups import groups_against_chance

    runs = _exchangeable_audits(first_seed=300, m=600, n_groups=10, statistic="rank")
    coins, sides, groups, found = runs[0]
    for slots, group in zip(groups, found, strict=True):
        labels = np.r_[np.ones(slots.size), np.zeros(int((coins == 0).sum()))]
        attack = sides[0].mean(axis=0)
        expected = roc_auc_score(labels, np.r_[attack[slots], attack[coins == 0]])
        assert group.auc == pytest.approx(expected)
        assert group.tests is not None
        assert set(group.tests) == {"share", "rank"}
        assert group.p == group.tests["rank"].p
    standing = sum(any(g.stands_out for g in found) for *_, found in runs)
    assert standing <= 4
    rng = np.random.default_rng(7)
    m = 500
    coins = (np.arange(m) % 2).astype(np.int64)
    base = rng.normal(0, 1, m)
    small = np.flatnonzero(coins == 1)[:25]  # 25 members, ~250 non-members: MNIST's class
    lifted = base.copy()
    lifted[small] += 1.2
    attack, baseline = (1 / (1 + np.exp(-side)) for side in (lifted, base))
    rest = np.flatnonzero(coins == 1)[25:]
    by_rank = groups_against_chance(
        coins, attack[None, :], baseline[None, :], [small, rest], tested=[True, True],
        fpr=0.01, draws=199, statistic="rank",
    )  # fmt: skip
    assert by_rank[0].stands_out
    assert not by_rank[1].stands_out
    assert by_rank[0].auc > by_rank[0].baseline_auc + 0.2
    with pytest.raises(InputError, match="statistic"):
        groups_against_chance(coins, attack[None, :], baseline[None, :], [small], tested=[True],
                              fpr=0.01, draws=19, statistic="mean")  # fmt: skip


def test_the_digest_says_whether_o1_joins_the_verdict() -> None:
    """Issue 75: listings label O(1) on her own held-out rows as a figure outside the verdict
    (``randomised`` false, or anything but true); a document before it joins as it did."""

    def digest(o1: dict | None) -> dict:
        return report_digest({"reference_audits": {"o1": o1, "rmrn": None}})

    hers = digest({"eps_lb": 0.4, "randomised": False, "unit": "example"})
    assert (hers["o1_eps_lb"], hers["o1_in_verdict"], hers["o1_unit"]) == (0.4, False, "example")
    assert digest({"eps_lb": 0.4, "randomised": 0})["o1_in_verdict"] is False
    assert digest({"eps_lb": 0.4})["o1_in_verdict"] is True  # written before 2026-12-02
    assert digest({"eps_lb": 1.8, "randomised": True, "unit": "document"})["o1_unit"] == "document"
    assert digest({"eps_lb": 1.8, "unit": "<b>"})["o1_unit"] is None
    assert digest(None)["o1_in_verdict"] is None


def test_the_member_side_says_when_the_model_adds_nothing_to_the_data_alone() -> None:
    """Issue 72: a No-leak page said "an attacker with the model picks out 24.0 %" beside
    24.3 % without it, and nothing more."""
    from panoramia.report.attacker import member_side_sentence

    def side(rate: float, low: float, high: float) -> dict:
        return {"tpr_at_fpr": {"0.01": rate}, "tpr_at_fpr_interval": {"0.01": [low, high]}}

    same = member_side_sentence(side(0.240, 0.2, 0.28), side(0.243, 0.2, 0.29), 0.0, 0.9, 304)
    assert "The model adds nothing here" in same
    close = member_side_sentence(side(0.30, 0.25, 0.35), side(0.24, 0.2, 0.29), 0.1, 0.9, 304)
    assert "The two intervals overlap" in close
    clear = member_side_sentence(side(0.60, 0.5, 0.7), side(0.24, 0.2, 0.29), 1.0, 0.9, 304)
    assert "overlap" not in clear
    assert "adds nothing" not in clear
