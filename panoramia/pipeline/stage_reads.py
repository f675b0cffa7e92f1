"""Holding a stage's reads of the settings against what its key declares (the check of
:mod:`panoramia.pipeline.stages.stage_key`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence

from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import covered

log = logging.getLogger("panoramia.pipeline")

CHECK_READS = "PANORAMIA_CHECK_READS"
"""Set to ``1`` (the suite does), an undeclared read fails the audit; else it is logged."""

NO_RESULT_SETTINGS = frozenset({
    "threads",  # every key holds the thread count already (the runner's environment)
    "artifacts_dir",
    "target.name",  # what the report calls the model
    "target.trusted_modules",  # who may be imported, not what the model is (kept out on purpose)
    "data.source",  # picks the data stage's reader; its identity holds what was read
})  # fmt: skip
"""Settings a stage may read without declaring them: they cannot change its result."""
WHERE_IT_RUNS = frozenset({"device", "accelerator", "devices", "strategy", "num_workers"})
"""Last names of the settings that say where a section's work runs (any section's): results
do not depend on them beyond floating-point order (``precision`` does, and is declared)."""


class UndeclaredSetting(AssertionError):
    """A stage's build read a setting that neither its key nor an input's declares."""


def check_declared(
    node: str,
    reads: set[str],
    made: Sequence[StageResult],
    declared: Mapping[str, frozenset[str]],
) -> None:
    """Hold ``reads`` (what the graph entry ``node`` read while it ran) against what the stages
    it ``made`` (built or reused) declare with every stage they build on; an entry that made
    no stage is not held. Raises :class:`UndeclaredSetting` under :data:`CHECK_READS`, else
    logs a warning."""
    if not made:
        return
    allowed = frozenset().union(*(declared.get(stage.key, frozenset()) for stage in made))
    missing = sorted(
        path for path in reads
        if not covered(path, allowed)
        and not covered(path, NO_RESULT_SETTINGS)
        and path.rsplit(".", 1)[-1] not in WHERE_IT_RUNS
    )  # fmt: skip
    if not missing:
        return
    message = (
        f"stage {node} read {', '.join(missing)}, which its key does not declare: a change "
        "to it would reuse a stale artifact (declare it in the stage's StageKey)"
    )
    if os.environ.get(CHECK_READS) == "1":
        raise UndeclaredSetting(message)
    log.warning(message)
