"""Reference models of the target's own recipe for the reference attack (docs/SPEC.md §2.4):
where the plug-in says the stand-ins are of another family than the target (tables: an MLP
of h's recipe beside a gradient-boosted target), RMIA and LiRA read models of the target's
recipe instead, as their authors train them. Each trains on its own random half of the
stand-ins' training examples (the reference attack's held-out rows are never among them), so
every one is an OUT reference model for every scored row and the references differ where the
recipe itself draws nothing at random (a tree ensemble without subsampling)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.pipeline.seeds import child_rng, child_seed
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.reference_rows import reference_attack_planned, scores_rows
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey
from panoramia.pipeline.stages.stand_in import draw_training_examples, training_pool

REFERENCE_MODEL = StageKey(
    "reference_model", seeds=(GENERATION_SEED,),
    also_reads=(
        "target", "audit.stand_in", "audit.ensemble", "data.split", "audit.real_nonmembers"
    ),
)  # fmt: skip
"""The reference model stages (``reference_model_<index>``): the target's recipe (the
plug-in's :meth:`reference_recipe_key`), the stand-ins' training files and cap, the share
each trains on, the generation seed, its index and the reserved share of held-out rows."""
TRAINING_SHARE = 0.5
"""The share of the stand-ins' training examples each reference model trains on (RMIA's and
LiRA's reference models each see a random half of the population data)."""


def reference_models_planned(audit: Audit) -> bool:
    """Whether the reference attack trains models of the target's recipe: it runs, the
    baseline trains stand-ins (whose examples these draw from), and the plug-in names a
    recipe for them (:meth:`reference_recipe_key` not None)."""
    return (
        reference_attack_planned(audit)
        and audit.uses_stand_in
        and audit.reference_recipe_key() is not None
    )


def reference_model_names(audit: Audit) -> list[str]:
    """The stage names of the reference models (one per stand-in), or none."""
    if not reference_models_planned(audit):
        return []
    return [f"reference_model_{index}" for index in range(1, audit.job.audit.ensemble + 1)]


def build_reference_models(
    audit: Audit, data: StageResult, known: StageResult
) -> list[StageResult]:
    """The reference models (one per stand-in), or none where the reference attack will
    score no rows (:func:`~panoramia.pipeline.stages.reference_rows.scores_rows`), so that
    nothing is trained that no stage reads."""
    if not scores_rows(audit, data):
        return []
    return [
        build_reference_model(audit, data, known, index)
        for index in range(1, audit.job.audit.ensemble + 1)
    ]


def build_reference_model(
    audit: Audit, data: StageResult, known: StageResult, index: int
) -> StageResult:
    """The ``index``-th reference model (1 … ``audit.ensemble``): the target's recipe
    trained on a random half (drawn by ``generation_seed``, one draw per index) of the
    stand-ins' training examples (:func:`~panoramia.pipeline.stages.stand_in.
    draw_training_examples`), which never hold the rows the reference attack scores."""
    pool = training_pool(audit, data, known)

    def build(directory: Path) -> dict:
        examples, count = draw_training_examples(audit, data, pool, directory, "reference_pool")
        rng = child_rng(audit.generation_seed, f"reference_model/{index}")
        half = np.sort(rng.permutation(count)[: int(TRAINING_SHARE * count)])
        training = directory / f"reference_training{audit.sets.suffix}"
        audit.sets.write(examples, half, training)
        (directory / f"reference_pool{audit.sets.suffix}").unlink()
        seed = child_seed(audit.generation_seed, f"reference_model/{index}/train")
        metrics = audit.train_reference_model(data, audit.sets.read(training), directory, seed)
        return {"training_data": pool.shown, "examples": int(half.size), **metrics}

    config = {
        "recipe": audit.reference_recipe_key(),
        **pool.key(),
        "training_share": TRAINING_SHARE,
        "index": index,
    }
    return audit.runner.run(
        REFERENCE_MODEL, build, name=f"reference_model_{index}", config=config,
        inputs=pool.inputs,
        label=f"reference model {index} (the target's recipe, half of {pool.shown})",
    )  # fmt: skip
