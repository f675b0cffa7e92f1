"""The synthetic stage's loop, whatever the examples: draw candidates in rounds, screen them
(the real-vs-synthetic filter, loss matching), and deal the survivors into the disjoint sets.

A modality supplies how to draw ``n`` labelled candidates under a name (the name seeds the
draw), how to screen a batch, and how to store a subset; the rounds, their sizes, the
dealing and the attacker's pool live here once (:func:`draw_and_deal`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np

from panoramia.errors import InputError
from panoramia.pipeline.stages.example_sets import ExampleSets
from panoramia.pipeline.stages.splits import POOL_SET, SYNTHETIC_SETS

Examples = TypeVar("Examples")

SAMPLING_ONLY = ("relabel", "filter")
"""Generator settings that only the synthetic stage uses (the generator's fit does not)."""
MAX_ROUNDS = 5
"""Rounds of drawing before the stage gives up (the screen keeps too little)."""
MARGIN = 1.05
"""Candidates drawn per example still missing, before the screen's expected loss."""


def draw_screened(
    total: int,
    *,
    draw: Callable[[int, str], Examples],
    screen: Callable[[Examples], Examples],
    size: Callable[[Examples], int],
    factor: float,
    adapt: bool,
    what: str,
    hint: str = "",
    name: str = "synthetic/candidates",
) -> tuple[list[Examples], int]:
    """Draw and screen candidates until at least ``total`` survive; returns the surviving
    batches (in draw order) and how many candidates were drawn.

    Round ``r`` draws under the name ``{name}/{r}`` (``synthetic/candidates/{r}``; the
    attacker's pool: ``synthetic/pool/{r}``); it draws ``factor``
    candidates per missing example (``MARGIN / (1 - max_drop)`` when the screen keeps at least
    ``1 - max_drop`` of a batch). With ``adapt``, later rounds are sized by the share kept so
    far (for screens whose share varies, such as loss matching). After :data:`MAX_ROUNDS`
    rounds, InputError naming ``generator.filter`` (``what``: the examples, e.g. "rows";
    ``hint``: what to change, appended after "; ")."""
    kept: list[Examples] = []
    drawn = rounds = 0
    while sum(map(size, kept)) < total:
        if rounds == MAX_ROUNDS:
            advice = f"; {hint}" if hint else ""
            raise InputError(f"generator.filter: too few synthetic {what} kept{advice}")
        missing = total - sum(map(size, kept))
        batch = draw(math.ceil(missing * factor), f"{name}/{rounds}")
        drawn += size(batch)
        kept.append(screen(batch))
        rounds += 1
        if adapt:
            factor = max(factor, MARGIN * drawn / max(1, sum(map(size, kept))))
    return kept, drawn


def deal(
    needed: dict[str, int],
    write: Callable[[np.ndarray, str], None],
    *,
    order: Sequence[str],
) -> None:
    """Deal consecutive examples into the sets of ``order`` (``needed[name]`` each, disjoint):
    ``write(indices, name)`` stores the examples at ``indices`` as set ``name``."""
    start = 0
    for name in order:
        write(np.arange(start, start + needed[name]), name)
        start += needed[name]


@dataclass(frozen=True)
class Dealt(Generic[Examples]):
    """What :func:`draw_and_deal` drew: the audit's ``kept`` examples (every set, in
    :data:`SYNTHETIC_SETS` order), the candidates ``drawn`` for them, the ``batches`` they
    were screened in (the first the screen saw; the pool's came after) and the candidates
    ``pool_drawn`` for the attacker's pool (0: none)."""

    kept: Examples
    drawn: int
    batches: int
    pool_drawn: int


def draw_and_deal(
    sets: ExampleSets,
    needed: dict[str, int],
    pool: int,
    directory: Path,
    *,
    screened: Callable[..., tuple[list[Examples], int]],
    concat: Callable[[list[Examples]], Examples],
) -> Dealt[Examples]:
    """Draw the synthetic sets ``needed`` with ``screened(total, name=...)`` (the modality's
    :func:`draw_screened`, its options set) and deal them into ``directory`` as
    ``synthetic_{name}`` files of ``sets`` (disjoint: h's examples are never audited); then,
    where ``pool``, the attacker's extra false-positive side, screened as the audit's, as the
    :data:`POOL_SET` file. ``concat`` joins a draw's surviving batches."""
    kept_parts, drawn = screened(sum(needed.values()))
    kept = concat(kept_parts)
    deal(
        needed,
        lambda indices, name: sets.write(
            kept, indices, directory / f"synthetic_{name}{sets.suffix}"
        ),
        order=SYNTHETIC_SETS,
    )
    pool_drawn = 0
    if pool:
        pool_parts, pool_drawn = screened(pool, name="synthetic/pool")
        sets.write(concat(pool_parts), np.arange(pool), directory / f"{POOL_SET}{sets.suffix}")
    return Dealt(kept, drawn, len(kept_parts), pool_drawn)
