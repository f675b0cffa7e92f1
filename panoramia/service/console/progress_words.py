"""An audit's progress in her words (issue 72: the page showed "Stage 5 of 20: helper" and
internal names such as ``stand_in_2`` and ``attack_rmrn``, with no time left).

The progress record is what the audit child last wrote (``progress.json``: ``stage``,
``state``, ``done``, ``total``), so nothing in it is trusted: a count that is not a whole
number in range, or a stage name of other characters, is shown as nothing. The time left is
the pace so far carried over the stages left: rough (stages differ in length, and a reused
stage takes no time), and said so.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

STAGE_WORDS = {
    "data": "reading your data",
    "target": "opening the model",
    "generator_data": "choosing the records the generator learns from",
    "generator": "training the generator of synthetic records",
    "synthetic": "drawing synthetic records",
    "helper": "training the helper model (one that never saw your records)",
    "split": "dealing the records into the game's sets",
    "synthetic_split": "dealing the synthetic records into the game's sets",
    "losses_helper": "scoring every record with the helper model",
    "losses_target": "scoring every record with the audited model",
    "game": "playing the privacy game",
    "baseline_blind": "training the baseline that sees no model",
    "baseline": "training the baseline attack (without the model)",
    "attack": "training the attack (with the model)",
    "attack_rmrn": "the attack on your held-out rows",
    "reference_units": "scoring your documents as wholes",
    "reference_rows": "scoring your members and held-out rows with the model and the "
    "reference models",
}
"""Each stage of the audit's graph in words; a numbered stage (``stand_in_2``) is below."""
NUMBERED = {
    "stand_in": "training stand-in model {n} (the model's recipe, without your records)",
    "losses_stand_in": "scoring every record with stand-in model {n}",
    "reference_model": "training reference model {n} (the model's own recipe, without your "
    "records)",
}
"""The numbered stages' words; the graph numbers them from 1 (``stand_in_1`` …), as the
words do."""
STAGE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_STAGES = 1000


def stage_words(stage: object) -> str | None:
    """What ``stage`` (a stage's name in the progress record) is doing, in words; None for
    a name that is none of the graph's."""
    if not isinstance(stage, str) or not STAGE_NAME.fullmatch(stage):
        return None
    if stage in STAGE_WORDS:
        return STAGE_WORDS[stage]
    base, _, number = stage.rpartition("_")
    if base in NUMBERED and number.isdigit():
        return NUMBERED[base].format(n=int(number))
    return None


def _count(value: object) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_STAGES
    return value if ok else None  # type: ignore[return-value]


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return "about a minute"
    if seconds < 3600:
        return f"about {round(seconds / 60)} minutes"
    return f"about {seconds / 3600:.1f} hours"


def progress_words(
    progress: dict[str, Any], status: str, started_at: datetime | None, now: datetime
) -> dict[str, Any]:
    """``done`` and ``total`` (whole numbers, or None), ``doing`` (the stage in words, or
    None) and ``left`` (a rough time left while it runs, from the pace so far, or None before
    two stages have ended) of an audit whose ``status`` and start are given."""
    done, total = _count(progress.get("done")), _count(progress.get("total"))
    if done is not None and total is not None and done > total:
        done = total = None
    doing = stage_words(progress.get("stage"))
    left = None
    if status == "running" and started_at is not None and done and total and 2 <= done < total:
        elapsed = (now - started_at).total_seconds()
        if elapsed > 0:
            left = _minutes(elapsed / done * (total - done))
    return {"done": done, "total": total, "doing": doing, "left": left}
