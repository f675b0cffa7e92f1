"""What a modality hands the shared stages: how its example sets are stored and combined."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ExampleSets:
    """A modality's example sets (a DataFrame of rows, an ImageSet or a TextSet), as the shared
    stages read, write, stack and deal them; examples are indexed along their first axis."""

    suffix: str
    """File suffix of a stored set (``.parquet`` rows, ``.npz`` images or chunks)."""
    members_file: str
    """The data stage's file of known members."""
    nonmembers_file: str
    """The data stage's file of real non-members (absent when the user has none)."""
    read: Callable[[Path], Any]
    """One stored set."""
    write: Callable[[Any, np.ndarray, Path], None]
    """``write(examples, indices, path)``: store ``examples[indices]`` (in that order)."""
    stack: Callable[[Any, Any], Any]
    """``stack(members, others)``: members then others, as one set."""
    fill: Callable[[Any, Any, np.ndarray], Any]
    """``fill(members, others, take)``: the game's audit set of ``take.size`` slots; slot i
    holds member i where ``take[i]``, else other i."""


def fill_arrays(members: Any, others: Any, take: np.ndarray) -> Any:
    """:attr:`ExampleSets.fill` for a dataclass of arrays indexed by example (an ImageSet, a
    TextSet): each field's slot i holds the member's where ``take[i]``, else the other's."""
    m = take.size

    def pick(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        return np.where(take.reshape(-1, *[1] * (mine.ndim - 1)), mine[:m], theirs[:m])

    names = [field.name for field in fields(members)]
    return type(members)(*(pick(getattr(members, n), getattr(others, n)) for n in names))


def write_taken(examples: Any, indices: np.ndarray, path: Path) -> None:
    """:attr:`ExampleSets.write` for a set with ``take(indices)`` and ``save(path)``."""
    examples.take(indices).save(path)


def save_known(
    directory: Path,
    members: Any,
    nonmembers: Any | None,
    *,
    max_members: int | None,
    files: tuple[str, str],
) -> Any:
    """Save the data stage's known members (the first ``max_members`` where set) and its real
    non-members (where there are any) in ``directory`` as ``files`` (the members', the
    non-members'), for sets with ``take`` and ``save`` (an ImageSet, a TextSet); the members
    saved."""
    if max_members is not None:
        members = members.take(np.arange(min(max_members, len(members))))
    members.save(directory / files[0])
    if nonmembers is not None:
        nonmembers.save(directory / files[1])
    return members
