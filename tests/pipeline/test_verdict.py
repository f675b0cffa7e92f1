"""The verdict rule (docs/SPEC.md §3.1) on report documents: the graded level against the
in-audit null, the figure quoted with its interval, the caveats that hold; a document without
a null section (schema < 1.4) keeps the earlier rule."""

from __future__ import annotations

import pytest

from panoramia.report.html import _verdict_html
from panoramia.report.verdict import verdict
from panoramia.report.verdict_rule import STRONG, TOLERANCE
from tests.service_support import report_document_for_test


def _document(one: tuple[float, float], two: tuple[float, float] | None = None, **more) -> dict:
    """A real report document with the games' (c_lb, {c+ε}_lb) set to ``one`` / ``two``."""
    document = report_document_for_test()
    document["c_lb"], document["c_plus_eps_lb"] = one
    document["eps_tilde"] = max(0.0, one[1] - one[0])
    if two is not None:
        document["two_sided"] = {
            "c_lb": two[0], "c_plus_eps_lb": two[1], "eps_tilde": max(0.0, two[1] - two[0]),
            "saturated": False, "unreliable": two[0] == 0,
        }  # fmt: skip
    return document | more


def _null(
    observed: float,
    exceed: int,
    *,
    threshold: float = 0.3,
    high: float | None = None,
    game: str = "two_sided",
    draws: int = 999,
    rate: float = 0.05,
    ensemble: int = 3,
) -> dict:
    """A null section (schema 1.4) with these counts."""
    return {
        "game": game, "observed": observed, "draws": draws, "exceed": exceed,
        "p_value": (1 + exceed) / (draws + 1), "false_alarm_rate": rate,
        "threshold": threshold, "interval": [max(0.0, observed - threshold),
                                             high if high is not None else observed + 0.3],
        "detected": (1 + exceed) / (draws + 1) <= rate, "ensemble": ensemble, "seed": 0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("two", "null", "level"),
    [
        ((0.1, 2.5), _null(2.4, 0, threshold=0.3), "clear_leak"),  # low end 2.1 ≥ ln 2
        ((0.1, 0.6), _null(0.5, 3, threshold=0.2), "leak_detected"),  # low end 0.3 < ln 2
        ((0.0, 0.6), _null(0.6, 10, threshold=0.25), "leak_detected"),  # c_lb 0 still counts
        ((0.1, 0.3), _null(0.2, 70, threshold=0.3), "borderline"),  # p 0.071: under 2α only
        ((0.1, 0.15), _null(0.05, 400, threshold=0.3), "no_leak_detected"),
        ((0.2, 0.1), _null(-0.1, 900, threshold=0.3), "no_leak_detected"),
    ],
)
def test_the_graded_level_comes_from_this_runs_null(two, null: dict, level: str) -> None:  # type: ignore[no-untyped-def]
    found = verdict(_document((0.5, 0.6), two, null=null))
    assert found["level"] == level
    assert found["detected"] == (level in ("clear_leak", "leak_detected"))
    assert found["false_alarm_rate"] == 0.05
    assert found["quote"]["game"] == "two_sided"
    assert found["quote"]["value"] == pytest.approx(max(0.0, two[1] - two[0]))
    low, _high = found["quote"]["interval"]
    assert low == pytest.approx(max(0.0, null["observed"] - null["threshold"]))
    assert (low >= STRONG) == (level == "clear_leak")
    assert found["null"]["draws"] == 999
    assert not any("predates" in caveat for caveat in found["caveats"])
    assert any("False alarms" in line for line in found["meaning"])
    if level == "borderline":
        assert "Repeat" in found["sentence"]
    if level == "no_leak_detected":
        assert "does not show the model is private" in found["sentence"]


def test_the_levels_counts_are_recomputed_not_copied() -> None:
    forged = _null(0.05, 900) | {"detected": True, "p_value": 0.001}
    assert verdict(_document((0.5, 0.6), (0.1, 0.15), null=forged))["level"] == "no_leak_detected"
    broken = _null(0.5, 0) | {"exceed": 5000}  # more than the draws: not a null section
    assert verdict(_document((0.5, 0.6), (0.1, 0.6), null=broken))["false_alarm_rate"] is None


def test_unmirrored_sides_have_no_null_and_are_inconclusive_when_the_gap_is_open() -> None:
    skipped = {"skipped": "audit.baseline_side=helper does not mirror audit.attack_side"}
    found = verdict(_document((0.5, 0.9), (0.1, 0.6), null=skipped))
    assert found["level"] == "inconclusive"
    assert not found["detected"]
    assert found["false_alarm_rate"] is None
    assert found["quote"]["interval"] is None
    assert "does not mirror" in found["sentence"]
    closed = verdict(_document((0.5, 0.4), (0.6, 0.5), null=skipped))
    assert closed["level"] == "no_leak_detected"


def test_caveats_only_when_they_hold() -> None:
    document = _document((1.0, 3.0), (1.0, 3.5), null=_null(2.5, 0))
    document["data"] = {"synthetic": {"real_vs_synthetic_auc": 0.9}}
    document["reference_audits"] = {"o1": {"eps_lb": 2.4}}
    loud = verdict(document)
    assert loud["level"] == "clear_leak"
    assert not any("AUC" in caveat for caveat in loud["caveats"])  # a leak found: no hiding
    assert not any("O(1)" in caveat for caveat in loud["caveats"])
    assert any("O(1) audit agrees" in line for line in loud["meaning"])
    document["null"] = _null(0.0, 500)
    document["two_sided"]["c_plus_eps_lb"] = 1.0
    document["two_sided"]["eps_tilde"] = 0.0
    quiet = verdict(document)
    assert quiet["level"] == "no_leak_detected"
    assert any("AUC 0.90" in caveat for caveat in quiet["caveats"])
    assert any("O(1) audit reads ε_lb = 2.40" in caveat for caveat in quiet["caveats"])
    single = verdict(_document((1.0, 1.5), (1.0, 1.5), null=_null(0.5, 0, ensemble=1)))
    assert any("audit.ensemble=1" in caveat for caveat in single["caveats"])


@pytest.mark.parametrize(
    ("one", "two", "level", "quoted"),
    [
        ((1.0, 1.05), (0.8, 0.85), "no_leak_detected", 0.05),
        ((1.0, 1.05), (0.8, 1.5), "leak_detected", 0.7),  # the two-sided game sees it
        ((1.0, 1.4), None, "leak_detected", 0.4),  # a game not played counts for nothing
        ((1.0, 0.99 + TOLERANCE), None, "no_leak_detected", TOLERANCE - 0.01),
        ((0.0, 0.9), (0.0, 1.2), "inconclusive", 1.2),  # no baseline measured the generator
        ((0.0, 0.9), (0.5, 0.55), "no_leak_detected", 0.05),  # only reliable games are quoted
    ],
)
def test_a_document_without_a_null_keeps_the_earlier_rule(
    one, two, level: str, quoted: float
) -> None:  # type: ignore[no-untyped-def]
    found = verdict(_document(one, two))
    assert found["false_alarm_rate"] is None
    assert found["quote"]["interval"] is None
    assert any("predates the in-audit null" in caveat for caveat in found["caveats"])
    assert found["level"] == level
    assert found["quote"]["value"] == pytest.approx(quoted)
    assert found["sentence"].endswith(".")
    if level == "no_leak_detected":
        assert "does not show the model is private" in found["sentence"]
    quoted_c_lb = (two or one)[0] if found["quote"]["game"] == "two_sided" else one[0]
    assert any("c_lb is 0" in caveat for caveat in found["caveats"]) == (quoted_c_lb == 0)


def test_a_violated_claim_comes_first_and_the_claim_is_in_words() -> None:
    claim = {
        "violation": True,
        "banner": "The measured points contradict (ε = 1, δ = 1e-5).",
        "statements": ["The owner declares (ε = 1, δ = 1e-5)-DP."],
        "inconclusive": [],
    }
    found = verdict(_document((1.0, 1.02), claim=claim))
    assert found["level"] == "leak_beyond_claim"
    assert "contradict" in found["sentence"]
    assert found["claim"] == ["The owner declares (ε = 1, δ = 1e-5)-DP."]


def test_caveats_of_the_run_and_what_the_figures_mean() -> None:
    document = _document((2.0, 2.05), saturated=True)
    document["data"] = {"synthetic": {"real_vs_synthetic_auc": 0.9}}
    found = verdict(document)
    assert any("saturated" in caveat for caveat in found["caveats"])
    assert any("AUC 0.90" in caveat for caveat in found["caveats"])
    assert found["meaning"][0].startswith("ε̃ is not a lower bound on ε")
    assert any("O(1)" in line for line in found["meaning"])


def test_a_schema_1_0_document_gets_its_verdict_from_its_figures() -> None:
    document = _document((1.0, 2.0), schema_version="1.0")  # as stored before 1.1
    assert "verdict" not in document
    page = _verdict_html(document)
    assert "Leak detected" in page
    assert "ε̃ = 1.00" in page
    assert "<script" not in page


def test_a_leak_real_non_members_show_is_a_caveat_of_a_quiet_run() -> None:
    found = verdict(_document((1.0, 1.02), reference_audits={"o1": {"eps_lb": 0.15}}))
    assert found["level"] == "no_leak_detected"
    assert any("O(1) audit reads ε_lb = 0.15" in caveat for caveat in found["caveats"])
    quiet = verdict(_document((1.0, 1.02), reference_audits={"o1": {"eps_lb": 0.0}}))
    assert not any("O(1)" in caveat for caveat in quiet["caveats"])


def test_a_quiet_run_says_how_much_its_size_could_show() -> None:
    document = _document((1.0, 1.02))
    assert document["detectable"]["members"] > 0  # schema 1.2
    found = verdict(document)
    reach = [caveat for caveat in found["caveats"] if caveat.startswith("At this size")]
    assert len(reach) == 1
    expected = document["detectable"]["eps_tilde_max"]
    assert f"cannot show ε̃ above {expected:.2f}" in reach[0]
    loud = verdict(_document((1.0, 1.6)))
    assert not any(caveat.startswith("At this size") for caveat in loud["caveats"])
    older = {k: v for k, v in _document((1.0, 1.02)).items() if k != "detectable"}
    assert not any(caveat.startswith("At this size") for caveat in verdict(older)["caveats"])


def test_the_reach_is_logit_of_alpha_to_the_one_over_r() -> None:
    import math

    document = report_document_for_test()
    reach, alpha = document["detectable"], document["alpha_per_test"]
    q = alpha ** (1 / reach["members"])
    assert reach["c_plus_eps_max"] == pytest.approx(math.log(q / (1 - q)))
    assert reach["eps_tilde_max"] == pytest.approx(
        max(0.0, reach["c_plus_eps_max"] - document["c_lb"])
    )
    assert reach["c_plus_eps_max_doubled"] > reach["c_plus_eps_max"]


@pytest.mark.parametrize(
    "reach", [{"members": "many"}, ["x"], {"eps_tilde_max": float("nan")}, None]
)
def test_a_malformed_reach_section_never_costs_the_verdict(reach: object) -> None:
    found = verdict(_document((1.0, 1.02), detectable=reach))
    assert found["level"] == "no_leak_detected"
    assert not any(caveat.startswith("At this size") for caveat in found["caveats"])


def test_a_null_section_that_does_not_match_its_figures_is_not_used() -> None:
    """An uploaded document's null is not trusted: another game than the pre-registered one,
    a gap other than the quoted ε̃, or a detection its threshold contradicts make it
    unusable, and so does a 1.4 document without one; the run is then inconclusive."""
    cases = [
        _null(0.5, 0, threshold=0.2, game="one_sided"),  # two-sided was played
        _null(1.5, 0, threshold=0.2),  # the game reads 0.5
        _null(0.5, 0, threshold=0.9),  # p 0.001 but Δ under the threshold
    ]
    for null in cases:
        found = verdict(_document((0.5, 0.6), (0.1, 0.6), null=null))
        assert found["level"] == "inconclusive"
        assert "cannot be read" in found["sentence"]
        assert found["quote"]["interval"] is None
    bare = _document((0.5, 0.6), (0.1, 0.6), schema_version="1.4")
    assert verdict(bare)["level"] == "inconclusive"
    page = _verdict_html(bare)
    assert "no null" in page
    assert "up to 0 read" not in page


def test_a_run_that_could_not_have_called_a_leak_is_inconclusive_not_quiet() -> None:
    """docs/SPEC.md §3.1, level 7: where even every guess right could not lift the gap above
    the null's threshold, "no leak detected" would be an answer the run could not give."""
    from panoramia.measure.bounds import saturation_ceiling

    alpha = 0.05 / (2 * 5050)
    top = float(saturation_ceiling(150, alpha))  # every one of 150 slots guessed right

    def document(c_lb: float) -> dict:
        found = _document((0.5, 0.5), (c_lb, c_lb), null=_null(0.0, 900, threshold=0.3))
        return found | {"m": 150, "two_sided": found["two_sided"] | {"alpha_per_test": alpha}}

    blind = verdict(document(top - 0.1))  # the baseline already near the ceiling
    assert blind["level"] == "inconclusive"
    assert not blind["detected"]
    assert "could not have called a leak" in blind["sentence"]
    assert f"above {0.1:.2f}" in blind["sentence"]
    seeing = verdict(document(top - 1.0))  # room above the null's threshold: a real answer
    assert seeing["level"] == "no_leak_detected"


def _references(right: int, eps: float, *, guesses: int = 100, grid: int = 1) -> dict:
    """An O(1) section whose best guesses are ``right`` of ``guesses`` (its p-value comes
    from these counts: grid · P[Bin(guesses, ½) ≥ right])."""
    return {"o1": {"eps_lb": eps, "r": guesses, "v": right, "n_grid": grid, "delta": 0.0,
                   "confidence": 0.95, "p_value": 1e-12},  # a stored p is never read
            "rmrn": None}  # fmt: skip


def test_o1_on_her_own_held_out_rows_stays_a_figure_outside_the_verdict() -> None:
    """Issue 75, SPEC §3.1 level 8 (2026-12-02): where the audit did not draw the held-out
    rows (``randomised: false``), O(1) neither calls a leak nor makes a run borderline; one
    line says why. The same counts with the split drawn by the audit call the leak."""
    quiet_null = _null(0.05, 400, threshold=0.3)  # p = 0.401
    strong = _references(90, 1.5)
    drawn = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=strong))  # fmt: skip
    assert drawn["level"] == "leak_detected"
    strong["o1"]["randomised"] = False
    hers = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                             reference_audits=strong))  # fmt: skip
    assert hers["level"] == "no_leak_detected"
    assert not hers["detected"]
    assert "O(1)" not in hers["sentence"]
    said = " ".join([*hers["meaning"], *hers["caveats"]])
    assert "stays out of this verdict (it reads ε_lb = 1.50)" in said
    assert "did not draw them at random" in said
    assert "does leak something" not in said
    assert said.count("stays out of this verdict") == 1
    assert not any("give held-out rows" in step for step in hers["next_steps"])  # she did
    # the null alone decides, at the whole α (as without held-out rows)
    alone = verdict(_document((0.5, 0.6), (0.1, 0.6), null=_null(0.5, 39, threshold=0.2),
                              reference_audits=strong))  # fmt: skip
    assert alone["level"] == "leak_detected"


def test_o1_per_document_says_its_unit() -> None:
    references = _references(90, 1.5)
    references["o1"]["unit"] = "document"
    found = verdict(_document((0.5, 0.6), (0.1, 0.15), null=_null(0.05, 400, threshold=0.3),
                              reference_audits=references))  # fmt: skip
    assert found["level"] == "leak_detected"
    assert any("about whole documents" in line for line in found["meaning"])


def test_the_reference_audits_join_the_decision_at_one_false_alarm_rate() -> None:
    """docs/SPEC.md §3.1 level 8: min(1, 2 · min(p, p_ref)) against α; a reference audit
    that reads ε_lb > 0 at its own confidence never sits beside "No leak detected"."""
    quiet_null = _null(0.05, 400, threshold=0.3)  # p = 0.401
    found = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=_references(62, 0.3)))  # fmt: skip
    assert found["level"] == "leak_detected"
    assert found["detected"]
    assert found["decision"]["found_by"] == ["o1"]
    assert found["decision"]["p_value"] == pytest.approx(2 * 0.0104894, rel=1e-4)
    assert "the O(1) audit on your held-out rows (p = 0.010)" in found["sentence"]
    assert "did not reach its share of the combined test (p ≤ 2.5%)" in found["sentence"]
    reads = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=_references(59, 0.05)))  # fmt: skip
    assert reads["level"] == "borderline"
    assert not reads["detected"]
    assert reads["sentence"].startswith("Borderline: the O(1) audit on your held-out rows reads")
    nothing = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                                reference_audits=_references(50, 0.0)))  # fmt: skip
    assert nothing["level"] == "no_leak_detected"
    assert "Nor did the O(1) audit on your held-out rows (p = 0.540)" in nothing["sentence"]
    assert "not a guarantee" in nothing["sentence"]
    assert "at most" not in nothing["sentence"]
    # the null alone at p = 0.04 is no longer enough beside a silent reference (2 · 0.04 > α)
    halved = verdict(_document((0.5, 0.6), (0.1, 0.6), null=_null(0.5, 39, threshold=0.2),
                               reference_audits=_references(50, 0.0)))  # fmt: skip
    assert halved["level"] == "borderline"
    alone = verdict(_document((0.5, 0.6), (0.1, 0.6), null=_null(0.5, 39, threshold=0.2)))
    assert alone["level"] == "leak_detected"
    assert alone["decision"]["tests"] == ["null"]


def test_the_quote_says_which_calls_carry_it_and_a_saturated_one_reads_as_counts() -> None:
    document = _document((0.5, 0.6), (0.6, 2.9), null=_null(2.3, 0, threshold=0.3))
    document["two_sided"] |= {
        "saturated": True,
        "attack": {"member_guesses": 0, "member_correct": 0, "nonmember_guesses": 213,
                   "nonmember_correct": 213},
        "baseline": {"member_guesses": 0, "member_correct": 0, "nonmember_guesses": 17,
                     "nonmember_correct": 17},
    }  # fmt: skip
    found = verdict(document)
    assert found["quote"]["calls"] == {"member": 0, "nonmember": 213}
    assert "carried by 213 non-member calls" in found["sentence"]
    assert "the attack made 213 non-member calls without an error" in found["sentence"]
    assert "without the model, at most 17 at its own best" in found["sentence"]
    assert "multiplies an attacker's odds" not in found["sentence"]
    assert any("DP-SGD" in step for step in found["next_steps"])


@pytest.mark.parametrize(
    ("null", "words"),
    [
        (_null(0.2, 70, threshold=0.3), "Repeat the audit over more seeds"),
        (_null(0.05, 400, threshold=0.3), "Nothing in this run calls for action"),
    ],
)
def test_every_level_says_what_to_do_next(null: dict, words: str) -> None:
    found = verdict(_document((0.5, 0.6), (0.1, 0.1 + null["observed"]), null=null))
    assert any(words in step for step in found["next_steps"])


def test_a_powerless_game_stays_inconclusive_beside_silent_reference_audits() -> None:
    """Level 7 holds with reference audits too: they only lift a run to borderline where
    one of them reads a leak (level 8)."""
    document = _document((0.5, 0.6), (3.0, 3.0), null=_null(0.0, 999, threshold=0.3),
                         m=100, reference_audits=_references(50, 0.0))  # fmt: skip
    document["two_sided"]["alpha_per_test"] = 0.05 / 10_100
    assert verdict(document)["level"] == "inconclusive"
    document["reference_audits"] = _references(60, 0.1)
    assert verdict(document)["level"] == "borderline"


def test_a_reference_audit_is_read_from_its_own_counts_never_its_stored_p() -> None:
    """An uploaded document cannot forge a detection: a stored p, a bound its counts do not
    give, another confidence or a relaxed test are not used."""
    quiet_null = _null(0.05, 400, threshold=0.3)
    forged = _references(50, 0.01)  # ε_lb > 0 that 50 of 100 cannot give
    assert verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                             reference_audits=forged))["level"] == "no_leak_detected"  # fmt: skip
    for change in ({"confidence": 2.0}, {"confidence": 0.9}, {"delta": "x"}, {"delta": 0.1},
                   {"n_grid": "7"}, {"v": 101}):  # fmt: skip
        odd = _references(62, 0.3)
        odd["o1"] |= change
        found = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null, reference_audits=odd))
        assert found["level"] == "no_leak_detected", change


def test_rmrn_never_joins_the_decision_nor_makes_a_run_borderline() -> None:
    """RM;RN's distinguisher sees the examples: on text it told held-out documents from the
    members on never-trained controls (RESULTS §19), so only O(1) joins the decision."""
    references = {"o1": None, "rmrn": {"eps_lb": 0.2, "n_thresholds": 1, "confidence": 0.95,
                                       "delta": 0.0, "attack": {"r": 100, "v": 80}}}  # fmt: skip
    found = verdict(_document((0.5, 0.6), (0.1, 0.15), null=_null(0.05, 400, threshold=0.3),
                              reference_audits=references))  # fmt: skip
    assert found["level"] == "no_leak_detected"
    assert found["decision"]["tests"] == ["null"]


def test_the_reference_audit_that_called_the_leak_says_which_way_its_calls_went() -> None:
    """An O(1) call made only of non-member guesses says it does not show that her rows can be
    picked out; all of them right says the bound is a floor (issue 53's direction, said)."""
    quiet_null = _null(0.05, 400, threshold=0.3)
    one_way = _references(100, 0.5)
    one_way["o1"] |= {"k_plus": 0, "k_minus": 100}
    found = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=one_way))  # fmt: skip
    assert found["level"] in ("leak_detected", "clear_leak")
    assert "All 100 of its calls were non-member calls" in found["sentence"]
    assert "does not show that your own rows can be picked out" in found["sentence"]
    assert "All 100 were right" in found["sentence"]
    both = _references(62, 0.3)
    both["o1"] |= {"k_plus": 40, "k_minus": 60}
    mixed = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=both))  # fmt: skip
    assert "Its calls: 40 member and 60 non-member." in mixed["sentence"]
    assert "were right" not in mixed["sentence"]
    assert mixed["decision"]["references"][0]["calls"] == {"member": 40, "nonmember": 60}


def test_a_blind_baseline_that_beats_the_baseline_is_a_caveat() -> None:
    """``baseline.blind`` (docs/SPEC.md §2.9): the words alone told the generated examples
    apart better than the baseline; the caveat says so, and only then."""
    document = _document((1.0, 1.05), (0.8, 0.85), null=_null(0.05, 500))
    document["baseline"] = {**document["baseline"], "blind": {"c_lb": 0.4, "beats_baseline": False}}
    assert not any("sees no model" in caveat for caveat in verdict(document)["caveats"])
    document["baseline"]["blind"] = {"c_lb": 1.7, "beats_baseline": True}
    caveat = next(c for c in verdict(document)["caveats"] if "sees no model" in c)
    assert "in the paper's game, its c_lb 1.70 against the baseline's 1.00" in caveat
    document["baseline"]["blind"] = {"c_lb": 0.4, "c_lb_two_sided": 2.0, "beats_baseline": True}
    caveat = next(c for c in verdict(document)["caveats"] if "sees no model" in c)
    assert "in the two-sided game, its c_lb 2.00 against the baseline's 0.80" in caveat
    document["baseline"]["blind"] = "garbled"  # a malformed section never costs the verdict
    assert verdict(document)["level"] == "no_leak_detected"


@pytest.mark.parametrize(
    ("kind", "advice", "not_said"),
    [
        ("xgboost-json", "shallower trees", "DP-SGD ("),
        ("catboost-cbm", "boosting method", "panoramia calibrate"),
        ("torch-safetensors", "retrain with DP-SGD", "trees"),
        ("onnx", "stronger regularisation", "trees"),
    ],
)
def test_what_to_do_next_fits_the_kind_of_model_and_carries_no_markup(
    kind: str, advice: str, not_said: str
) -> None:
    """Issue 72: DP-SGD is advice for a network, not for an xgboost model; no step carries
    command-line markup (backticks), whichever surface shows it."""
    document = _document((0.5, 0.6), (0.6, 2.9), null=_null(2.3, 0, threshold=0.3))
    document["target"] = {"identity": {"format": kind}}
    steps = verdict(document)["next_steps"]
    assert any(advice in step for step in steps), steps
    assert not any(not_said in step for step in steps), steps
    assert not any("`" in step for step in steps), steps


def test_the_caveats_say_how_much_of_her_data_was_audited_and_how_to_audit_more() -> None:
    """Issue 72: 304 of her 2,400 members were audited and only the collapsed JSON said so."""
    document = _document((0.5, 0.6), (0.6, 2.9), null=_null(2.3, 0, threshold=0.3))
    document["data"] = {
        "members": 2400, "nonmembers": 1000,
        "split": {"members": {"generator": 960, "attack_train": 600, "attack_val": 240,
                              "audit": 600},
                  "nonmembers": {"attack_train": 600, "attack_val": 240, "audit": 160}},
        "game": {"m": 600, "members_in_audit": 304},
    }  # fmt: skip
    (size,) = [c for c in verdict(document)["caveats"] if c.startswith("How much was audited")]
    assert "304 of the 2,400 members" in size
    assert "of the 1,000 held-out rows, 160 were the reference audits' non-members" in size
    assert "data.split.audit" in size
    del document["data"]["game"]
    assert not any(c.startswith("How much") for c in verdict(document)["caveats"])


def _rmia(
    right: int, eps: float, *, randomised: bool = True, guesses: int = 100, decides: bool = True
) -> dict:
    """A reference attack section (RMIA, docs/SPEC.md §2.4) whose O(1) game on fair-coin
    pairs has its best guesses ``right`` of ``guesses`` (one test of 64)."""
    test = {"eps_lb": eps, "r": guesses, "v": right, "n_grid": 64, "delta": 0.0,
            "confidence": 0.95, "p_value": 1e-12, "randomised": randomised,
            "k_plus": guesses, "k_minus": 0}  # a stored p is never read  # fmt: skip
    return {"attack": "rmia", "eps_lb": eps, "p_value": 1e-12, "randomised": randomised,
            "members": 900, "nonmembers": 800, "references": 3, "test": test,
            "decides": decides}  # fmt: skip


def test_rmia_joins_the_decision_beside_o1_where_the_split_was_drawn() -> None:
    """Issue 71, SPEC §3.1 level 8 (2026-12-07): RMIA's test on pairs is a second reference
    audit (R = 2); where O(1) finds nothing and RMIA does, the run is called and the
    sentence names RMIA; on her own held-out rows it stays a figure with one line."""
    quiet_null = _null(0.05, 400, threshold=0.3)  # p = 0.401
    weak_o1 = _references(52, 0.0)  # P[Bin(100, ½) ≥ 52] ≈ 0.38
    both = weak_o1 | {"rmia": _rmia(95, 2.0)}
    found = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=both))  # fmt: skip
    assert found["level"] == "leak_detected"
    decision = found["decision"]
    assert decision["tests"] == ["null", "o1", "rmia"]
    assert decision["found_by"] == ["rmia"]
    assert "the reference-model attack (RMIA) on your held-out rows" in found["sentence"]
    assert "over all 3 tests" in found["sentence"]
    # R = 2: p_ref is twice the smaller of the two tests' own p-values, never a stored p
    from panoramia.measure.bounds import p_at_zero

    p_ref = 2 * p_at_zero([100], [95], 64)
    assert decision["p_value"] == pytest.approx(min(1.0, 2 * min(0.401, p_ref)))
    # the same counts on her own held-out rows: a figure outside, one line says so
    hers = _references(52, 0.0) | {"rmia": _rmia(95, 2.0, randomised=False)}
    hers["o1"]["randomised"] = False
    outside = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                                reference_audits=hers))  # fmt: skip
    assert outside["level"] == "no_leak_detected"
    said = " ".join(outside["meaning"])
    assert "(RMIA) on your held-out rows stays out of this verdict (it reads ε_lb = 2.00)" in said
    # by default (its judgement did not pass) it decides nothing: a figure, one line says so
    figure = _references(52, 0.0) | {"rmia": _rmia(95, 2.0, decides=False)}
    quiet = verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                              reference_audits=figure))  # fmt: skip
    assert quiet["level"] == "no_leak_detected"
    assert quiet["decision"]["tests"] == ["null", "o1"]
    assert "RMIA" not in quiet["sentence"]
    assert any("is a figure beside this verdict (it reads ε_lb = 2.00)" in line
               for line in quiet["meaning"])  # fmt: skip
    # a section whose bound its own counts contradict does not join
    forged = weak_o1 | {"rmia": _rmia(50, 2.0)}
    assert verdict(_document((0.5, 0.6), (0.1, 0.15), null=quiet_null,
                             reference_audits=forged))["level"] == "no_leak_detected"  # fmt: skip


def test_the_reference_attack_leads_what_an_attacker_gains() -> None:
    """The page, the console's digest and ``reports show`` lead the attacker section with
    RMIA's rates on her rows; a report without held-out rows says what giving some adds."""
    from panoramia.cli.service import report_lines
    from panoramia.report.digest import report_digest as digest
    from panoramia.report.html import attacker_html
    from panoramia.report.reference_words import NO_HELD_OUT

    section = _rmia(95, 2.0) | {
        "auc": 0.62, "auc_interval": [0.61, 0.63],
        "tpr_at_fpr": {"0.001": 0.011, "0.01": 0.044},
        "realised_fpr": {"0.001": 0.00093, "0.01": 0.00996},
        "tpr_at_fpr_interval": {"0.001": [0.005, 0.018], "0.01": [0.038, 0.052]},
    }  # fmt: skip
    document = _document((0.5, 0.6), (0.1, 0.15), null=_null(0.05, 400, threshold=0.3))
    document["reference_audits"] = _references(52, 0.0) | {"rmia": section, "lira": None}
    page = attacker_html(document)
    assert "catches 4.4% (3.8%–5.2%) of your records while wrongly flagging 1 in 100" in page
    assert "(1.00% in fact)" in page
    assert "Scored on 900 of your members against 800 held-out rows" in page
    assert "LiRA" not in page  # an unreadable attack is left out, not shown as zeros
    assert "loss alone" not in page  # a 1.9 document: no loss attack
    loss = section | {
        "attack": "loss",
        "references": 0,
        "tpr_at_fpr": {"0.001": 0.0, "0.01": 0.004},
        "tpr_at_fpr_interval": {"0.001": [0.0, 0.001], "0.01": [0.002, 0.007]},
    }
    document["reference_audits"]["loss"] = loss  # fmt: skip
    with_loss = attacker_html(document)
    alone = "loss alone, without reference models, catches 0.4% (0.2%–0.7%) at 1 in 100."
    assert alone in with_loss
    assert "<th scope=col>Loss alone (no reference models)</th>" in with_loss
    del document["reference_audits"]["loss"]
    found = digest(document)["reference_attack"]
    assert found["sentence"].startswith("An attacker with reference models (RMIA")
    assert [attack["name"] for attack in found["attacks"]] == ["RMIA"]
    lines = report_lines({"model": "m", "version": "1", "modality": "tabular",
                          "created_at": "now", "document": document, "c_lb": 0.5,
                          "c_plus_eps_lb": 0.6, "eps_tilde": 0.1})  # fmt: skip
    assert any(line.startswith("An attacker with reference models (RMIA") for line in lines)
    # forged figures: a string where a rate belongs reads as no section at all
    section["tpr_at_fpr"] = {"0.01": "<script>"}
    assert digest(document)["reference_attack"] is None
    without = _document((0.5, 0.6), (0.1, 0.15), null=_null(0.05, 400, threshold=0.3))
    without["reference_audits"] = {"o1": None, "rmrn": None}
    without["data"] = {"members": 900}  # no held-out rows
    from panoramia.report.html import reference_attack_html

    assert NO_HELD_OUT not in reference_attack_html(without)  # its config ran no such attack
    without["config"] = {"audit": {"real_nonmembers": {"reference_attack": True}}}
    assert NO_HELD_OUT in reference_attack_html(without)
    assert digest(without)["no_held_out"] == NO_HELD_OUT
    # a randomised split says what a model that never saw her records would catch; her own
    # held-out rows leave the clause out (they may differ from her members in kind)
    assert "it would catch about as many as it wrongly flags, 1.00%" in page
    section["tpr_at_fpr"] = {"0.001": 0.011, "0.01": 0.044}
    section["randomised"] = False
    assert "never seen your records" not in attacker_html(document)
    # forged figures never raise nor show: a rate above 1, an int too large for a float
    for forged in (1.5, 10**400, True, [0.1]):
        section["tpr_at_fpr"] = {"0.01": forged}
        assert digest(document)["reference_attack"] is None
        assert "catches" not in attacker_html(document)


def test_forged_reference_groups_never_raise_nor_claim() -> None:
    """An uploaded document's ``exposure.reference_groups`` is read as untrusted: booleans,
    NaN, ∞ and huge ints are no figures; a group stands out only where its own p is at most
    the rate, whatever its ``stands_out`` says; names are cut and escaped."""
    from panoramia.report.html import reference_groups_html

    groups = [
        {"column": "race", "value": "<b>" + "x" * 500, "members": 30, "nonmembers": 30,
         "auc": True, "p": False, "stands_out": True},
        {"column": "sex", "value": "F", "members": 10**400, "nonmembers": True,
         "auc": 10**400, "p": float("inf"), "stands_out": True},
        {"column": "age", "value": "old", "members": 50, "nonmembers": 40,
         "auc": 0.7, "p": 0.5, "stands_out": True},
        "not a group",
    ]  # fmt: skip
    page = reference_groups_html({"reference_groups": {"tested": True, "groups": groups}})
    assert "<b>" not in page
    assert "x" * 100 not in page
    assert "yes (" not in page  # p = 0.5 is not ≤ 5 %, whatever stands_out says
    assert "no group of your records is picked out" in page
    assert reference_groups_html({"reference_groups": {"groups": "x"}}) == ""
