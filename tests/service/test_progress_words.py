"""An audit's progress in her words (issue 72): stage names become what the step does, a
rough time left from the pace so far, and nothing from a record the child could have forged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from panoramia.service.console.progress_words import NUMBERED, progress_words, stage_words

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_every_stage_of_the_graph_is_said_in_words() -> None:
    from panoramia.pipeline.graph import STAGE_GRAPH

    for node in STAGE_GRAPH:
        name = getattr(node, "name", node)
        shown = f"{name}_1" if name in NUMBERED else name  # stand_in_1, losses_stand_in_1
        assert stage_words(shown), name
    # the graph numbers its stand-ins from 1 (stand_in_1 … stand_in_3), as the words do
    assert stage_words("stand_in_2") == (
        "training stand-in model 2 (the model's recipe, without your records)"
    )
    assert stage_words("losses_stand_in_1") == "scoring every record with stand-in model 1"
    assert stage_words("reference_model_3").startswith("training reference model 3")
    for forged in ("<script>", "x" * 100, 17, None, "unknown_stage"):
        assert stage_words(forged) is None


def test_time_left_is_the_pace_so_far_and_only_while_it_runs() -> None:
    started = NOW - timedelta(minutes=10)
    running = progress_words({"stage": "helper", "done": 5, "total": 20}, "running", started, NOW)
    assert running == {
        "done": 5,
        "total": 20,
        "doing": STAGE_WORDS_HELPER,
        "left": "about 30 minutes",
    }
    early = progress_words({"stage": "data", "done": 1, "total": 20}, "running", started, NOW)
    assert early["left"] is None  # one stage says nothing of the pace
    failed = progress_words({"stage": "attack", "done": 16, "total": 20}, "failed", started, NOW)
    assert (failed["left"], failed["doing"]) == (None, "training the attack (with the model)")
    forged = progress_words({"done": 10**9, "total": True, "stage": 3}, "running", started, NOW)
    assert forged == {"done": None, "total": None, "doing": None, "left": None}
    assert progress_words({"done": 9, "total": 4}, "running", started, NOW)["done"] is None


STAGE_WORDS_HELPER = "training the helper model (one that never saw your records)"
