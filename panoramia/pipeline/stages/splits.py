"""The splits of the known members, the real non-members and the synthetic pool.

D_G depends on ``generation_seed`` alone; the other member parts, the non-members' parts
and the re-dealt synthetic sets on ``seed`` (docs/SPEC.md §2.5)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from panoramia.errors import InputError
from panoramia.pipeline.seeds import child_rng
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, SEED, StageKey

MEMBER_SETS = ("generator", "attack_train", "attack_val", "audit")
"""The parts of the known members: D_G, D_in^tr, D_in^val, D_in^te."""
SYNTHETIC_SETS = ("attack_train", "attack_val", "audit", "helper")
"""The disjoint synthetic sets: the distinguishers' train/val, the audit, h's training set."""

GENERATOR_DATA = StageKey(
    "generator_data", settings={"fractions": "data.split"}, seeds=(GENERATION_SEED,)
)
SPLIT = StageKey("split", settings={"fractions": "data.split"}, seeds=(GENERATION_SEED, SEED))
SYNTHETIC_SPLIT = StageKey("synthetic_split", seeds=(SEED,))


def split_sizes(n: int, fractions: dict[str, float]) -> dict[str, int]:
    """Examples per part of :data:`MEMBER_SETS` for ``n`` known members (floors)."""
    if sum(fractions.values()) > 1 + 1e-9:
        raise InputError("data.split: the fractions add up to more than 1")
    sizes = {name: math.floor(fraction * n) for name, fraction in fractions.items()}
    if min(sizes.values()) < 10:
        raise InputError(f"data.split: {n} known members leave a part under 10 rows: {sizes}")
    return sizes


def member_parts(
    n: int, sizes: dict[str, int], *, generation_seed: int, seed: int
) -> dict[str, np.ndarray]:
    """Indices into the ``n`` known members of each part of :data:`MEMBER_SETS` (disjoint).

    D_G depends on ``generation_seed`` alone; the other parts are drawn by ``seed`` among the
    members D_G leaves, so changing ``seed`` never moves an example into or out of D_G."""
    order = _generator_order(n, generation_seed)
    n_generator = sizes["generator"]
    rest = order[n_generator:]
    rest = rest[child_rng(seed, "split/rest").permutation(rest.size)]
    parts, start = {"generator": order[:n_generator]}, 0
    for name in MEMBER_SETS[1:]:
        parts[name] = rest[start : start + sizes[name]]
        start += sizes[name]
    return parts


def _generator_order(n: int, generation_seed: int) -> np.ndarray:
    """The known members' order whose first ones are D_G (by ``generation_seed`` alone)."""
    return child_rng(generation_seed, "split/members").permutation(n)


def generator_part_of(audit: Audit, data: StageResult) -> tuple[Any, np.ndarray]:
    """The known members and the indices of D_G among them: what
    :func:`member_parts_of` gives as its ``generator`` part, read without ``seed``."""
    members = audit.sets.read(data.directory / audit.sets.members_file)
    sizes = split_sizes(len(members), asdict(audit.job.data.split))
    return members, _generator_order(len(members), audit.generation_seed)[: sizes["generator"]]


def member_parts_of(audit: Audit, data: StageResult) -> tuple[Any, dict[str, np.ndarray]]:
    """The known members and the indices of each part of :data:`MEMBER_SETS`."""
    members = audit.sets.read(data.directory / audit.sets.members_file)
    sizes = split_sizes(len(members), asdict(audit.job.data.split))
    parts = member_parts(
        len(members), sizes, generation_seed=audit.generation_seed, seed=audit.seed
    )
    return members, parts


def build_generator_data(audit: Audit, data: StageResult) -> StageResult:
    """D_G: the known members the generator (and the labeler) learn from; it depends on
    ``generation_seed`` only. Its info records the size of every member part."""

    def build(directory: Path) -> dict:
        members, generator = generator_part_of(audit, data)
        audit.sets.write(members, generator, directory / f"member_generator{audit.sets.suffix}")
        sizes = split_sizes(len(members), asdict(audit.job.data.split))
        return {"members": {name: int(sizes[name]) for name in MEMBER_SETS}}

    return audit.runner.run(
        GENERATOR_DATA,
        build,
        inputs=[data],
        label="D_G (generator's members)",
    )


def build_split(audit: Audit, data: StageResult) -> StageResult:
    """The known members outside D_G into attack train/val and audit (by ``seed``); real
    non-members (if any) into attack train/val/audit, for RM;RN and O(1)."""

    def build(directory: Path) -> dict:
        members, parts = member_parts_of(audit, data)
        for name in MEMBER_SETS[1:]:
            audit.sets.write(members, parts[name], directory / f"member_{name}{audit.sets.suffix}")
        info: dict = {"members": {name: int(part.size) for name, part in parts.items()}}
        if (data.directory / audit.sets.nonmembers_file).exists():
            nonmembers = audit.sets.read(data.directory / audit.sets.nonmembers_file)
            order = child_rng(audit.seed, "split/nonmembers").permutation(len(nonmembers))
            start, info["nonmembers"] = 0, {}
            for name in MEMBER_SETS[1:]:
                size = min(parts[name].size, max(0, len(nonmembers) - start))
                if size:
                    audit.sets.write(
                        nonmembers, order[start : start + size],
                        directory / f"nonmember_{name}{audit.sets.suffix}",
                    )  # fmt: skip
                info["nonmembers"][name] = size
                start += size
        return info

    return audit.runner.run(SPLIT, build, inputs=[data])


def build_synthetic_split(audit: Audit, pool: StageResult) -> StageResult:
    """The pool's distinguisher and audit sets, pooled and re-dealt by ``seed`` into sets
    of the same sizes (h's set stays out: h never sees an audited example)."""
    names = SYNTHETIC_SETS[:3]

    def build(directory: Path) -> dict:
        sets = [
            audit.sets.read(pool.directory / f"synthetic_{n}{audit.sets.suffix}") for n in names
        ]
        sizes = [len(part) for part in sets]
        pooled = sets[0]
        for part in sets[1:]:
            pooled = audit.sets.stack(pooled, part)
        order = child_rng(audit.seed, "split/synthetic").permutation(len(pooled))
        for name, end, size in zip(names, np.cumsum(sizes), sizes, strict=True):
            audit.sets.write(
                pooled,
                order[end - size : end],
                directory / f"synthetic_{name}{audit.sets.suffix}",
            )
        return dict(zip(names, sizes, strict=True))

    return audit.runner.run(SYNTHETIC_SPLIT, build, inputs=[pool], label="synthetic split")


def synthetic_sizes(known: StageResult, helper: int) -> dict[str, int]:
    """Synthetic examples per set: as many as the members of each distinguisher split and of
    the audit, and ``helper`` for h (the sets of :data:`SYNTHETIC_SETS`, disjoint).
    ``known``: the generator_data stage (it records every part's size)."""
    sizes = known.info["members"]
    return {**{name: int(sizes[name]) for name in SYNTHETIC_SETS[:3]}, "helper": helper}


POOL_SET = "pool_fpr"
"""The synthetic stage's extra generated non-members for the attacker's false positives
(:func:`fpr_pool_size`): never dealt into the game, scored by the distinguishers alone."""


POOL_MARGIN = 1.1
"""The pool aims at this many times ``audit.fpr_negatives``: the audit set's generated
non-members are its slots whose coin fell 0, about half, so the total varies a little."""


def fpr_pool_size(audit: Audit, needed: dict[str, int]) -> int:
    """How many generated non-members the synthetic stage draws beside the audit's own so
    that about :data:`POOL_MARGIN` × ``audit.fpr_negatives`` are scored for the
    false-positive side, counting half the audit set (its coins' expected non-members); 0
    where those suffice or the setting is 0."""
    wanted = int(audit.job.audit.fpr_negatives)
    if not wanted:
        return 0
    return max(0, math.ceil(round(POOL_MARGIN * wanted - int(needed["audit"]) / 2, 6)))


def with_pool(sample_config: dict, pool: int) -> dict:
    """The synthetic stage's key settings with the pool's size where there is one (a stage
    drawn without a pool keeps the key it had before the pool existed)."""
    return {**sample_config, "fpr_pool": pool} if pool else sample_config


@dataclass(frozen=True)
class SyntheticWork:
    """What the synthetic stage's draw works from and into: the data, generator_data (D_G)
    and generator stages, the examples ``needed`` per set of :data:`SYNTHETIC_SETS`, the
    attacker's ``pool`` (:data:`POOL_SET`, 0: none) and the stage's ``directory``."""

    data: StageResult
    known: StageResult
    gen: StageResult
    needed: dict[str, int]
    pool: int
    directory: Path


def build_synthetic(
    audit: Audit,
    data: StageResult,
    known: StageResult,
    gen: StageResult,
    *,
    helper: int,
    settings: dict,
    draw: Callable[[SyntheticWork], dict],
    spec: StageKey,
) -> StageResult:
    """The synthetic stage, after the generator ``gen`` and D_G (``known``): ``draw(work)``
    fills ``work.directory`` with the sets :func:`synthetic_sizes` asks for (``helper`` for h)
    and the attacker's pool (:func:`fpr_pool_size`) and returns the stage's info. Its key
    (``spec``: the modality's, a :func:`synthetic_key`): the generator's ``settings`` (those
    the modality's sampling reads), the sizes, the generation seed and the pool's size
    (:func:`with_pool`)."""
    needed = synthetic_sizes(known, helper)
    pool = fpr_pool_size(audit, needed)

    def build(directory: Path) -> dict:
        return draw(SyntheticWork(data, known, gen, needed, pool, directory))

    sample_config = {"generator": settings, "needed": needed}
    return audit.runner.run(spec, build, config=with_pool(sample_config, pool), inputs=[gen, known])


def synthetic_key(version: int, *also_reads: str) -> StageKey:
    """A modality's synthetic stage: its ``version``, the generation seed, the sizes
    (``audit.fpr_negatives`` and the parts of ``data.split``) and what its sampling reads
    (``also_reads``: the generator's settings, h's set size)."""
    return StageKey(
        "synthetic", version=version, seeds=(GENERATION_SEED,),
        also_reads=("audit.fpr_negatives", "data.split", *also_reads),
    )  # fmt: skip
