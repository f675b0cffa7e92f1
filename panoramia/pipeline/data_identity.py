"""Content hashes of the user's input files, for the data stage's key (images, text)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from panoramia.errors import InputError
from panoramia.hashing import tree_sha256

if TYPE_CHECKING:
    from panoramia.pipeline.config import DataConfigBase


def input_paths_identity(config: DataConfigBase) -> dict[str, object]:
    """``{members_path_sha256, nonmembers_path_sha256}`` of a ``data.source=files`` config,
    with each path cut to its last name (:func:`by_name`); InputError naming the setting when
    members_path is unset or a path does not exist."""
    if not config.members_path:
        raise InputError("data.members_path: required for data.source=files")
    identity: dict[str, object] = {}
    for name, value in (("members_path", config.members_path),
                        ("nonmembers_path", config.nonmembers_path)):  # fmt: skip
        if value is None:
            continue
        if not Path(value).exists():
            raise InputError(f"data.{name}: {value!r} does not exist")
        identity[f"{name}_sha256"] = tree_sha256(Path(value))
        identity[name] = by_name(value)
    return identity


def by_name(path: str) -> str:
    """What a data stage's key keeps of an input path: its last name (the readers go by its
    suffix), not where it lies. The content is hashed beside it, so the same files copied
    elsewhere (the service copies a contributor's files into each audit's run directory)
    reuse the same stages."""
    return Path(path).name
