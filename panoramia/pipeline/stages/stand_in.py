"""The stand-in stage f̂: h's recipe trained on real examples no game sees (SPEC §2.7)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from panoramia.pipeline.seeds import child_rng, child_seed
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.reference_rows import (
    RESERVED_SHARE,
    enough_rows,
    reference_attack_planned,
    reserved_nonmembers,
)
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey

STAND_IN = StageKey(
    "stand_in", seeds=(GENERATION_SEED,),
    also_reads=(
        "helper", "audit.stand_in", "audit.ensemble", "data.split", "audit.real_nonmembers"
    ),
)  # fmt: skip
"""The stand-in stages (``stand_in_<index>``): the recipe (h's settings as the stand-in
trains with them, or the target's where ``audit.stand_in.recipe`` says so: the plug-in's
:meth:`stand_in_recipe_key`), which files it trains on, how many, the generation seed, its
index and, where the reference attack reserves held-out rows, their share."""


def training_sources(audit: Audit, data: StageResult, known: StageResult) -> tuple[list[Path], str]:
    """The files the stand-ins draw their examples from (``audit.stand_in.training_data``: the
    real non-members, D_G, or both; D_G alone when the data has no real non-members), and
    how a label names them."""
    setting = audit.job.audit.stand_in
    nonmembers = data.directory / audit.sets.nonmembers_file
    generator_data = known.directory / f"member_generator{audit.sets.suffix}"
    sources = {
        "real_nonmembers": [nonmembers], "generator_data": [generator_data],
        "real_nonmembers+generator_data": [nonmembers, generator_data],
    }[setting.training_data]  # fmt: skip
    if not nonmembers.exists():  # no real non-members: D_G alone
        sources = [generator_data]
    shown = " + ".join("real non-members" if s == nonmembers else "D_G" for s in sources)
    return sources, shown


def reserves_rows(audit: Audit, data: StageResult, sources: list[Path]) -> bool:
    """Whether the reference attack's held-out rows are kept out of these sources (it runs,
    the real non-members are among them and both of its sides are large enough)."""
    nonmembers = data.directory / audit.sets.nonmembers_file
    return reference_attack_planned(audit) and nonmembers in sources and enough_rows(audit, data)


def draw_training_examples(
    audit: Audit, data: StageResult, known: StageResult, directory: Path, name: str
) -> tuple[Any, int]:
    """The stand-ins' training examples, written to ``directory / name`` (+ the sets'
    suffix) and read back, with their count: at most ``audit.stand_in.max_examples`` (default:
    as many as the known members) of :func:`training_sources`, drawn by ``generation_seed``,
    the reference attack's held-out rows never among them (:func:`reserves_rows`)."""
    sources, _ = training_sources(audit, data, known)
    nonmembers = data.directory / audit.sets.nonmembers_file
    reserve = reserves_rows(audit, data, sources)
    cap = audit.job.audit.stand_in.max_examples or int(data.info["members"])

    def read(source: Path) -> Any:
        examples = audit.sets.read(source)
        if source != nonmembers or not reserve:
            return examples
        kept = np.setdiff1d(
            np.arange(len(examples)), reserved_nonmembers(audit.generation_seed, len(examples))
        )
        pool = directory / f"stand_in_pool{audit.sets.suffix}"
        audit.sets.write(examples, kept, pool)
        kept_examples = audit.sets.read(pool)
        pool.unlink()
        return kept_examples

    examples = read(sources[0])
    for source in sources[1:]:
        examples = audit.sets.stack(examples, read(source))
    rng = child_rng(audit.generation_seed, "stand_in/examples")
    order = rng.permutation(len(examples))[:cap]
    training = directory / f"{name}{audit.sets.suffix}"
    audit.sets.write(examples, order, training)
    return audit.sets.read(training), int(order.size)


def build_stand_in(
    audit: Audit, data: StageResult, known: StageResult, index: int = 1
) -> StageResult:
    """The stand-in f̂: h's recipe trained on real examples that no distinguisher and no
    PANORAMIA game sees (docs/SPEC.md §2.7; the real non-members among them may be in the
    reference game of RM;RN and O(1), which only f's and h's losses meet):
    ``audit.stand_in.training_data`` names them (the real non-members, D_G, or both; D_G
    alone when the data has no real non-members). At most ``max_examples`` of them
    (default: as many as the known members), drawn by ``generation_seed``; a fifth is held
    out to choose the epoch as for h when ``select_epoch``. The ``index``-th stand-in
    (1 … ``audit.ensemble``) trains on the same examples with a seed of its own. Where the
    reference attack runs, the held-out rows it scores
    (:func:`~panoramia.pipeline.stages.reference_rows.reserved_nonmembers`) are never among
    them, so that every stand-in is an OUT reference model for them."""
    sources, shown = training_sources(audit, data, known)
    generator_data = known.directory / f"member_generator{audit.sets.suffix}"
    cap = audit.job.audit.stand_in.max_examples or int(data.info["members"])
    extra_config, extra_inputs = audit.stand_in_key(data)
    reserve = reserves_rows(audit, data, sources)

    def build(directory: Path) -> dict:
        # kept beside f̂
        examples, count = draw_training_examples(audit, data, known, directory, "stand_in_training")
        seed = child_seed(audit.generation_seed, "stand_in" + (f"/{index}" if index > 1 else ""))
        metrics = audit.train_stand_in(data, examples, directory, seed)
        return {"training_data": shown, "examples": count, **metrics}

    config = {
        "helper": asdict(audit.stand_in_recipe()),
        **audit.stand_in_recipe_key(),
        "training_data": [source.name for source in sources],
        "max_examples": cap,
        "index": index,
        # only where it applies, so that the stand-ins of audits without it keep their keys
        **({"reserved_share": RESERVED_SHARE} if reserve else {}),
        **extra_config,
    }
    return audit.runner.run(
        STAND_IN, build, name=f"stand_in_{index}", config=config,
        inputs=[data, *([known] if generator_data in sources else []), *extra_inputs],
        label=f"stand-in f̂_{index} ({shown})",
    )  # fmt: skip
