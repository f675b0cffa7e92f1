"""The stand-in stage f̂: h's recipe trained on real examples no game sees (SPEC §2.7)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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


@dataclass(frozen=True)
class TrainingPool:
    """What the stand-ins' training examples are drawn from, as the stages trained on them
    (the stand-ins, a tree target's reference models) hold it in their keys."""

    sources: list[Path]
    shown: str
    """How a label names the sources (``real non-members + D_G``)."""
    cap: int
    """At most this many examples: ``audit.stand_in.max_examples``, else the known members."""
    reserve: bool
    """Whether the reference attack's held-out rows are kept out (:func:`reserves_rows`)."""
    inputs: list[StageResult]
    """The stages the sources are files of."""

    def key(self) -> dict:
        """The pool's key entries: its files, cap and, only where it applies (so that stages
        of audits without the reference attack keep their keys), the reserved share."""
        return {
            "training_data": [source.name for source in self.sources],
            "max_examples": self.cap,
            **({"reserved_share": RESERVED_SHARE} if self.reserve else {}),
        }


def training_pool(audit: Audit, data: StageResult, known: StageResult) -> TrainingPool:
    """The stand-ins' training pool of this audit (:func:`training_sources`)."""
    sources, shown = training_sources(audit, data, known)
    generator_data = known.directory / f"member_generator{audit.sets.suffix}"
    return TrainingPool(
        sources, shown,
        cap=audit.job.audit.stand_in.max_examples or int(data.info["members"]),
        reserve=reserves_rows(audit, data, sources),
        inputs=[data, *([known] if generator_data in sources else [])],
    )  # fmt: skip


def draw_training_examples(
    audit: Audit, data: StageResult, pool: TrainingPool, directory: Path, name: str
) -> tuple[Any, int]:
    """The stand-ins' training examples, written to ``directory / name`` (+ the sets'
    suffix) and read back, with their count: at most ``pool.cap`` of the pool's sources,
    drawn by ``generation_seed``, the reference attack's held-out rows never among them
    where ``pool.reserve``."""
    nonmembers = data.directory / audit.sets.nonmembers_file

    def read(source: Path) -> Any:
        examples = audit.sets.read(source)
        if source != nonmembers or not pool.reserve:
            return examples
        kept = np.setdiff1d(
            np.arange(len(examples)), reserved_nonmembers(audit.generation_seed, len(examples))
        )
        staged = directory / f"stand_in_pool{audit.sets.suffix}"
        audit.sets.write(examples, kept, staged)
        kept_examples = audit.sets.read(staged)
        staged.unlink()
        return kept_examples

    examples = read(pool.sources[0])
    for source in pool.sources[1:]:
        examples = audit.sets.stack(examples, read(source))
    rng = child_rng(audit.generation_seed, "stand_in/examples")
    order = rng.permutation(len(examples))[: pool.cap]
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
    pool = training_pool(audit, data, known)
    extra_config, extra_inputs = audit.stand_in_key(data)

    def build(directory: Path) -> dict:
        # kept beside f̂
        examples, count = draw_training_examples(audit, data, pool, directory, "stand_in_training")
        seed = child_seed(audit.generation_seed, "stand_in" + (f"/{index}" if index > 1 else ""))
        metrics = audit.train_stand_in(data, examples, directory, seed)
        return {"training_data": pool.shown, "examples": count, **metrics}

    config = {
        "helper": asdict(audit.stand_in_recipe()),
        **audit.stand_in_recipe_key(),
        **pool.key(),
        "index": index,
        **extra_config,
    }
    return audit.runner.run(
        STAND_IN, build, name=f"stand_in_{index}", config=config,
        inputs=[*pool.inputs, *extra_inputs], label=f"stand-in f̂_{index} ({pool.shown})",
    )  # fmt: skip
