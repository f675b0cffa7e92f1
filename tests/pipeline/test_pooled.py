"""The pooled verdict of repeats (docs/SPEC.md §3.2): twice the mean p, unread runs at 1."""

import pytest

from panoramia.report.pooled import pooled_verdict, run_reading


def _run(level: str, p: float | None, value: float = 0.5, game: str = "two_sided") -> dict:
    """A run's verdict section as verdict() writes it (only the keys pooling reads)."""
    return {
        "level": level,
        "false_alarm_rate": 0.05,
        "quote": {"value": value, "game": game},
        "null": {"p_value": p},
        "decision": {"p_value": p} if p is not None else None,
    }


def test_three_runs_at_two_percent_pool_to_a_call():
    pooled = pooled_verdict([run_reading(_run("leak_detected", 0.02)) for _ in range(3)])
    assert pooled["p_value"] == pytest.approx(0.04)
    assert pooled["detected"]
    assert pooled["level"] == "leak_detected"
    assert pooled["called"] == 3
    assert pooled["runs"] == 3
    assert "3 of 3 runs called a leak" in pooled["sentence"]


def test_one_lucky_run_does_not_carry_two_quiet_ones():
    readings = [run_reading(_run("leak_detected", 0.001))]
    readings += [run_reading(_run("no_leak_detected", 0.5)) for _ in range(2)]
    pooled = pooled_verdict(readings)
    assert pooled["p_value"] == pytest.approx(2 * 1.001 / 3)
    assert not pooled["detected"]
    assert pooled["level"] == "borderline"  # a run called on its own: not quiet


def test_quiet_runs_read_no_leak_and_unread_runs_count_as_one():
    readings = [run_reading(_run("no_leak_detected", 0.4)), run_reading(None)]
    pooled = pooled_verdict(readings)
    assert pooled["read"] == 1
    assert pooled["p_value"] == pytest.approx(1.0)  # 2 · (0.4 + 1) / 2 = 1.4, capped
    assert pooled["level"] == "no_leak_detected"
    assert "1 run(s) could not be read" in pooled["sentence"]
    assert pooled_verdict([run_reading(None)])["level"] == "inconclusive"


def test_the_pooled_figure_is_the_commonest_games_mean_with_its_interval():
    readings = [run_reading(_run("leak_detected", 0.01, v)) for v in (1.0, 2.0, 3.0)]
    readings.append(run_reading(_run("leak_detected", 0.01, 9.0, game="one_sided")))
    quote = pooled_verdict(readings)["quote"]
    assert quote["game"] == "two_sided"
    assert quote["n"] == 3
    assert quote["mean"] == pytest.approx(2.0)
    low, high = quote["interval"]
    assert low < 2.0 < high


def test_the_pooled_figures_interval_never_goes_below_zero():
    """ε̃ is never negative: the interval of its mean over runs is cut at 0 (issue 72's
    "−0.30 to 1.42" over runs of 0, 0 and 1.1)."""
    readings = [run_reading(_run("no_leak_detected", 0.5, v)) for v in (0.0, 0.0, 1.1)]
    quote = pooled_verdict(readings)["quote"]
    assert quote["interval"][0] == 0.0
    assert quote["interval"][1] > quote["mean"] > 0
    assert "interval over the runs 0.00 to" in pooled_verdict(readings)["sentence"]


def test_a_digest_reads_as_its_verdict_and_a_forged_p_is_not_a_p():
    digest = {"level": "leak_detected", "decision_p_value": 0.01, "p_value": 0.2,
              "false_alarm_rate": 0.05, "quote": {"value": 1.0, "game": "two_sided"}}  # fmt: skip
    assert run_reading(digest)["p"] == 0.01
    assert run_reading({"level": "x", "decision": {"p_value": 7.0}})["p"] is None
    assert run_reading({"level": "x", "decision": {"p_value": "0.01"}})["p"] is None
    with pytest.raises(ValueError, match="at least one run"):
        pooled_verdict([])


def test_the_plain_line_answers_first_and_says_when_a_leak_is_not_her_records():
    from panoramia.report.verdict import PLAIN, plain_line

    assert plain_line({"level": "no_leak_detected"}) == PLAIN["no_leak_detected"]
    assert plain_line({"level": "nonsense"}) is None
    assert plain_line(None) is None
    carried = {"level": "clear_leak", "quote": {"calls": {"member": 0, "nonmember": 213}}}
    assert "not by picking out your records" in plain_line(carried)
    digest = {"level": "leak_detected", "calls": {"member": 12, "nonmember": 40}}
    assert plain_line(digest) == PLAIN["leak_detected"]


def test_the_paired_difference_pairs_seeds_that_quote_the_same_game():
    from panoramia.report.pooled import paired_difference

    target = {
        s: run_reading(_run("leak_detected", 0.01, v)) for s, v in ((0, 2.0), (1, 2.2), (2, 2.4))
    }
    control = {0: run_reading(_run("no_leak_detected", 0.6, 0.1)),
               1: run_reading(_run("no_leak_detected", 0.6, 0.0, game="one_sided")),
               2: run_reading(_run("no_leak_detected", 0.6, 0.2))}  # fmt: skip
    paired = paired_difference(target, control)
    assert paired["n"] == 2  # seed 1 quotes another game
    assert paired["mean"] == pytest.approx(((2.0 - 0.1) + (2.4 - 0.2)) / 2)
    assert paired["interval"][0] < paired["mean"] < paired["interval"][1]
    assert paired_difference(target, {}) is None


def test_the_paired_difference_says_whether_its_interval_holds_zero():
    """Issue 72: "0.518 (95 % −0.205 to 1.241)" was not said to include zero."""
    from panoramia.report.pooled import paired_sentence

    spans = paired_sentence({"mean": 0.518, "interval": [-0.205, 1.241], "n": 3})
    assert "includes zero" in spans
    assert "cannot tell the target from a model that never saw" in spans
    above = paired_sentence({"mean": 1.9, "interval": [1.2, 2.6], "n": 3})
    assert "above zero" in above
    assert "(one pair: no interval)" in paired_sentence({"mean": 0.3, "interval": None, "n": 1})


def test_the_pooled_verdict_answers_in_plain_words_and_says_what_to_do_next():
    """Issue 72: the pooled page had no "In short" and no next steps."""
    called = pooled_verdict([run_reading(_run("leak_detected", 0.01)) for _ in range(3)])
    assert called["plain"].startswith("Yes:")
    assert any("retrain" in step for step in called["next_steps"])
    quiet = pooled_verdict([run_reading(_run("no_leak_detected", 0.6)) for _ in range(3)])
    assert quiet["plain"].startswith("No leak found")
    assert not any("`" in step for level in (called, quiet) for step in level["next_steps"])
