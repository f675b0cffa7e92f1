"""A text audit's example sets: TextSets of token chunks in ``.npz`` files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.data.text import TextSet, concat_chunks, read_chunks
from panoramia.pipeline.stages.example_sets import ExampleSets
from panoramia.pipeline.text.data import MEMBERS, NONMEMBERS


def write_chunks(chunks: TextSet, indices: np.ndarray, path: Path) -> None:
    """Store ``chunks[indices]`` at ``path``."""
    chunks.take(indices).save(path)


def fill_chunks(members: TextSet, others: TextSet, take: np.ndarray) -> TextSet:
    """Chunk i: member i where ``take[i]``, else other i (``take.size`` chunks)."""
    m = take.size
    return TextSet(
        np.where(take[:, None], members.tokens[:m], others.tokens[:m]),
        np.where(take, members.documents[:m], others.documents[:m]),
        np.where(take, members.positions[:m], others.positions[:m]),
    )


TEXT_SETS = ExampleSets(
    suffix=".npz", members_file=MEMBERS, nonmembers_file=NONMEMBERS, read=read_chunks,
    write=write_chunks, stack=lambda members, others: concat_chunks([members, others]),
    fill=fill_chunks,
)  # fmt: skip
