"""The plain paragraph a reader sees first (issue 72 item 3): the answer, whether her own
records can be picked out, and how sure — in words, with no symbol or p-value."""

from __future__ import annotations

import re

from panoramia.report.plain import (
    chance_words,
    in_hundred,
    plain_paragraph,
    pooled_own_records,
    pooled_paragraph,
)
from panoramia.report.pooled import pooled_verdict, run_reading


def _verdict(level: str, p: float) -> dict:
    return {"level": level, "false_alarm_rate": 0.05, "decision": {"p_value": p},
            "quote": {"calls": {"member": 30, "nonmember": 0}}}  # fmt: skip


def _attacker(attack: float, low: float, baseline: float, high: float) -> dict:
    return {
        "attack": {"tpr_at_fpr": {"0.01": attack}, "tpr_at_fpr_interval": {"0.01": [low, 0.9]}},
        "baseline": {"tpr_at_fpr": {"0.01": baseline},
                     "tpr_at_fpr_interval": {"0.01": [0.0, high]}},
    }  # fmt: skip


NO_SYMBOLS = re.compile(r"ε|p =|p-value|c_lb|α|TPR|FPR|AUC|e\^")


def test_a_leak_page_says_her_records_are_picked_out_and_how_sure() -> None:
    said = plain_paragraph(_verdict("clear_leak", 0.0004), _attacker(0.31, 0.22, 0.02, 0.05))
    assert said is not None
    assert said.startswith("Yes, clearly:")
    assert "Your own records can be picked out more often with the model" in said
    assert "about 31 in 100 of your audited records" in said
    assert "without the model, 2 in 100" in said
    assert "How sure: there is less than a 1 in 1,000 chance" in said
    assert "the audit calls a leak only below 1 in 20" in said
    assert not NO_SYMBOLS.search(said), said


def test_a_no_leak_page_says_the_attack_does_no_better_than_the_data_alone() -> None:
    """The issue's page: 24.0 % with the model beside 24.3 % without it, read as a gain."""
    said = plain_paragraph(_verdict("no_leak_detected", 0.62), _attacker(0.240, 0.17, 0.243, 0.31))
    assert said is not None
    assert said.startswith("No leak found")
    assert "picked out no more often with the model than without it" in said
    assert "24 in 100" in said
    assert "about a 6 in 10 chance" in said  # one scale on every page
    assert "A small leak can still go unseen" in said
    assert "fairly" not in said
    assert not NO_SYMBOLS.search(said)


def test_a_gain_inside_the_baselines_interval_is_not_called_a_gain() -> None:
    said = plain_paragraph(_verdict("leak_detected", 0.004), _attacker(0.10, 0.04, 0.03, 0.06))
    assert said is not None
    assert "against 3 in 100 without it, a difference this audit cannot tell from chance" in said
    assert "The leak the audit found shows in its other calls" in said  # not a contradiction
    assert "about a 1 in 250 chance" in said


def test_borderline_and_missing_pieces() -> None:
    said = plain_paragraph(_verdict("borderline", 0.07), None)
    assert said is not None
    assert said.startswith("Maybe:")
    assert "not enough to call it: there is about a 1 in 14 chance" in said
    assert "Your own records" not in said  # no attacker section: nothing said of them
    assert plain_paragraph(None) is None
    assert plain_paragraph({"level": "unknown"}) is None
    assert chance_words(0.003) == "about a 1 in 330 chance"
    assert in_hundred(0.004) == "under 1 in 100"
    assert in_hundred(0.0) == "0 in 100"
    assert chance_words(1.0) == "a near-certain chance"
    assert chance_words(0.038) == "about a 1 in 26 chance"


def test_the_pooled_paragraph_reads_her_records_over_the_runs() -> None:
    readings = [run_reading(_verdict("leak_detected", 0.002)) for _ in range(3)]
    pooled = pooled_verdict(readings)
    attackers = [_attacker(0.30, 0.2, 0.02, 0.05), _attacker(0.08, 0.03, 0.02, 0.05), None]
    said = pooled_paragraph(pooled, attackers)
    assert said is not None
    assert said.startswith("Yes: over these runs together")
    assert "over 2 runs" in said
    assert "the model's gain at this strict setting goes beyond chance in 1 of the 2 runs" in said
    assert "about a 1 in 250 chance" in said  # pooled p = 2 · 0.002
    assert pooled_own_records([None, {}]) == ""
    assert pooled_paragraph(None, []) is None


def test_her_control_beside_her_model_in_plain_words() -> None:
    from panoramia.report.plain import paired_words

    assert "cannot tell your model from one that never saw" in paired_words(
        {"mean": 0.5, "interval": [-0.2, 1.2], "n": 3}
    )
    assert "reads higher over these seeds (a description" in paired_words(
        {"mean": 1.9, "interval": [1.2, 2.6]}
    )
    assert "one pair of runs" in paired_words({"mean": 0.3, "interval": None, "n": 1})
    assert paired_words(None) == ""


def test_no_gain_is_claimed_without_both_intervals_nor_against_the_verdict() -> None:
    """The review of this change: point estimates alone claimed a gain 'beyond chance'; a
    no-leak page claimed her records picked out; a non-member-only leak said both."""
    bare = {"attack": {"tpr_at_fpr": {"0.01": 0.20}}, "baseline": {"tpr_at_fpr": {"0.01": 0.19}}}
    said = plain_paragraph(_verdict("leak_detected", 0.01), bare)
    assert said is not None
    assert "cannot tell from chance" in said
    quiet = plain_paragraph(_verdict("no_leak_detected", 0.4), _attacker(0.3, 0.2, 0.02, 0.05))
    assert quiet is not None
    assert "That alone is not enough for the audit's test to call a leak." in quiet
    others = _verdict("leak_detected", 0.01) | {"quote": {"calls": {"member": 0, "nonmember": 9}}}
    carried = plain_paragraph(others, _attacker(0.3, 0.2, 0.02, 0.05))
    assert carried is not None
    assert "not by picking out your records" in carried
    assert "can be picked out more often" not in carried


def test_an_uploaded_documents_odd_attacker_section_is_read_as_nothing() -> None:
    """An uploaded report's sections are any JSON: odd shapes and out-of-range rates say
    nothing rather than raise (the CLI's reports show read them raw)."""
    odd = [
        {"attack": {"tpr_at_fpr": {"0.01": 0.3}, "tpr_at_fpr_interval": {"0.01": 5}},
         "baseline": {"tpr_at_fpr": {"0.01": 0.1}, "tpr_at_fpr_interval": {"0.01": {"a": 1}}}},
        {"attack": {"tpr_at_fpr": [1]}, "baseline": {"tpr_at_fpr": {"0.01": 0.1}}},
        {"attack": {"tpr_at_fpr": {"0.01": 7.0}}, "baseline": {"tpr_at_fpr": {"0.01": -1}}},
        {"attack": "x", "baseline": None},
    ]  # fmt: skip
    for section in odd:
        said = plain_paragraph(_verdict("leak_detected", 0.01), section)
        assert said is not None
        assert "700 in 100" not in said
    assert "cannot tell from chance" in str(
        plain_paragraph(_verdict("leak_detected", 0.01), odd[0])
    )
    assert chance_words(0.0499) == "about a 1 in 20 chance"
    assert chance_words(0.0488) == "about a 1 in 20 chance"
    assert chance_words(0.003) == "about a 1 in 330 chance"
