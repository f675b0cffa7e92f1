"""The reference attack's rows (docs/SPEC.md §2.4, "the reference attack"): the target's and
every stand-in's losses on the known members no stand-in trained on (those outside D_G) and
on the held-out rows no stand-in trained on (a half of them, drawn by ``generation_seed`` and
kept out of the stand-ins' training for it).

The stand-ins are models of the target's kind that never saw a scored row, so they serve as
the attack's OUT reference models (where the plug-in names the target's own recipe, models of
it take their place: :mod:`~panoramia.pipeline.stages.reference_models`); the stage costs
forward passes only. It depends on
``generation_seed`` alone, like the stand-ins, so repeats of one generation seed reuse it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.pipeline.seeds import child_rng
from panoramia.pipeline.stages.artifacts import ReferenceRows
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.losses import model_directory
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.splits import generator_part_of
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey
from panoramia.targets import load_target

STAGE = "reference_rows"
ROWS = ReferenceRows.FILE
"""The stage's file: ``member`` (n,) int8, 1 = a known member; ``target`` (n,) f's losses
(nats); ``stand_ins`` (k, n) each stand-in's; members first, then the held-out rows;
``member_index`` and ``nonmember_index``: which of the data stage's members and real
non-members they are (:func:`scored_indices`)."""
MIN_SCORED_ROWS = 10
"""The stage runs where the data holds at least this many held-out rows to score (and
members outside D_G): fewer tell an attacker's rates nothing."""
RESERVED_SHARE = 0.5
"""The share of the held-out rows the stand-ins never train on, where the reference attack
runs: the rows it scores against the members."""
REFERENCE_ROWS = StageKey(STAGE, settings={"fractions": "data.split"}, seeds=(GENERATION_SEED,))
"""Its key: the reserved share (a constant, in the key), the split that leaves the members
outside D_G and the generation seed that draws D_G and the reserved rows."""


def reserved_nonmembers(generation_seed: int, n_nonmembers: int) -> np.ndarray:
    """The held-out rows (indices into the data stage's real non-members, ascending) that no
    stand-in trains on and the reference attack scores: ⌊``RESERVED_SHARE`` · n⌋ of them,
    drawn by ``generation_seed``."""
    order = child_rng(generation_seed, "reference_rows/reserve").permutation(n_nonmembers)
    return np.sort(order[: int(RESERVED_SHARE * n_nonmembers)])


def scored_indices(
    audit: Audit, data: StageResult, n_nonmembers: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows the reference attack scores, in the stage's order: indices into the data
    stage's known members (every one outside D_G, ascending: D_G, and so they, depend on
    ``generation_seed`` and the split's fractions only) and into its real non-members
    (:func:`reserved_nonmembers`)."""
    members, generator = generator_part_of(audit, data)
    outside = np.setdiff1d(np.arange(len(members)), generator)  # D_G's by gen. seed
    return outside, reserved_nonmembers(audit.generation_seed, n_nonmembers)


def enough_rows(audit: Audit, data: StageResult) -> bool:
    """Whether both sides of the reference attack would hold at least
    :data:`MIN_SCORED_ROWS` rows (from the data stage's counts), so that it runs and the
    stand-ins keep its held-out rows out."""
    held_out = int(data.info.get("nonmembers") or 0)
    members = int(data.info.get("members") or 0)
    outside = members - float(audit.job.data.split.generator) * members
    return int(RESERVED_SHARE * held_out) >= MIN_SCORED_ROWS and outside >= MIN_SCORED_ROWS


def scores_rows(audit: Audit, data: StageResult) -> bool:
    """Whether the reference attack, where planned, scores rows on this data: it has real
    non-members and both sides are large enough (:func:`enough_rows`)."""
    return (data.directory / audit.sets.nonmembers_file).exists() and enough_rows(audit, data)


def reference_attack_planned(audit: Audit) -> bool:
    """Whether the reference attack runs: ``audit.real_nonmembers.reference_attack``, where
    the modality scores rows one by one (``audit.rows_are_units``: not text, whose unit is the
    document, docs/SPEC.md §2.4); it needs the data's real non-members as well, which the
    stage checks once the data is read."""
    return bool(audit.job.audit.real_nonmembers.reference_attack) and audit.rows_are_units


def _losses(audit: Audit, model: StageResult, which: str, sets: list[object]) -> np.ndarray:
    adapter = load_target(
        model_directory(model), trusted_modules=audit.trusted_modules(),
        device=audit.inference_device(which),
    )  # fmt: skip
    found = []
    for examples in sets:
        values = np.asarray(audit.side_losses(adapter, examples), dtype=float)
        found.append(values.mean(axis=1) if values.ndim == 2 else values)
    return np.concatenate(found)


def build_reference_rows(
    audit: Audit,
    data: StageResult,
    target: StageResult,
    stand_ins: list[StageResult],
    *,
    own_recipe: bool = False,
) -> StageResult | None:
    """The losses of f and of each reference model on the scored rows (:data:`ROWS`; the
    reference models are the stand-ins, or models of the target's recipe where
    ``own_recipe``: :mod:`~panoramia.pipeline.stages.reference_models`); None where the data
    has no real non-members, no reference model ran, or either side would hold fewer than
    :data:`MIN_SCORED_ROWS` rows."""
    if not stand_ins or not scores_rows(audit, data):
        return None
    nonmembers_path = data.directory / audit.sets.nonmembers_file

    def build(directory: Path) -> dict:
        members = audit.sets.read(data.directory / audit.sets.members_file)
        nonmembers = audit.sets.read(nonmembers_path)
        outside, reserved = scored_indices(audit, data, len(nonmembers))
        member_file = directory / f"scored_members{audit.sets.suffix}"
        nonmember_file = directory / f"scored_nonmembers{audit.sets.suffix}"
        audit.sets.write(members, outside, member_file)
        audit.sets.write(nonmembers, reserved, nonmember_file)
        sets = [audit.sets.read(member_file), audit.sets.read(nonmember_file)]
        losses_target = _losses(audit, target, "target", sets)
        losses_stand_ins = np.stack(
            [_losses(audit, stand_in, "helper", sets) for stand_in in stand_ins]
        )
        member_file.unlink()  # copies of her rows: the losses are what the stage keeps
        nonmember_file.unlink()
        member = np.r_[np.ones(outside.size, np.int8), np.zeros(reserved.size, np.int8)]
        ReferenceRows(
            member=member, target=losses_target, stand_ins=losses_stand_ins,
            member_index=outside, nonmember_index=reserved,
        ).save(directory)  # fmt: skip
        return {"members": int(outside.size), "nonmembers": int(reserved.size),
                "references": len(stand_ins),
                **({"reference_recipe": "target"} if own_recipe else {})}  # fmt: skip

    references = "reference models of its recipe" if own_recipe else "stand-ins"
    return audit.runner.run(
        REFERENCE_ROWS,
        build,
        config={"reserved_share": RESERVED_SHARE},
        inputs=[data, target, *stand_ins],
        label=f"reference rows (f, {len(stand_ins)} {references})",
    )


def read_rows(stage: StageResult) -> ReferenceRows:
    """The stage's :data:`ROWS`."""
    return ReferenceRows.load(stage.directory)
