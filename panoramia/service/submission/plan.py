"""An audit as the service plans it: typed, stored with the audit, and turned into a command
line only where one is needed (composing it at the door, launching its child).

The plan holds the service's own settings (``lines``: the primary config, the target, its
name, the data source, a table's columns, the claim; none names a file), the files the audit
reads (``files``: each an upload by id, or a path on the service's disk that the door
resolved and checked), her own overrides as checked (``overrides``, without ``seed``) and
the seed (``seed``: hers, or a repeat's). Nothing is parsed back out of a command line the
service wrote: a repeat changes :attr:`AuditPlan.seed`, the worker copies each of
:attr:`AuditPlan.files` and hands the child :meth:`AuditPlan.command_line` with the copies'
paths, and an upload stays a reference from the door to the copy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from panoramia.service.contributor_files import UPLOAD_PREFIX, UPLOADED_KEYS

PLAN_VERSION = 1
"""Raised where a stored plan's fields change meaning."""
SEED = "seed"
MAX_SEED = 2**32 - 1
"""The largest seed an audit takes (numpy's)."""


class PlanError(ValueError):
    """A seed in her overrides that is not a whole number in range (``position``: its index)."""

    def __init__(self, position: int, message: str):
        super().__init__(message)
        self.position = position


def quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value (backslashes and quotes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class PlannedFile:
    """What one file setting of :data:`~panoramia.service.contributor_files.UPLOADED_KEYS`
    reads: her upload (``upload``: its id) or a path on the service's disk (``path``: in her
    data folder or the shared models folder, resolved and checked at the door)."""

    upload: str | None = None
    path: str | None = None

    def __post_init__(self) -> None:
        if (self.upload is None) == (self.path is None):
            raise ValueError("a planned file is an upload or a path, exactly one")

    def portable(self) -> str:
        """As the audit's record names it: ``upload:<id>`` (never a server path), or its path."""
        return f"{UPLOAD_PREFIX}{self.upload}" if self.upload is not None else str(self.path)


@dataclass(frozen=True)
class AuditPlan:
    """One audit run as planned (see the module docstring). ``modality``: the plug-in whose
    primary config ``lines`` start with."""

    modality: str
    lines: tuple[str, ...]
    files: Mapping[str, PlannedFile] = field(default_factory=dict)
    overrides: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        unknown = set(self.files) - set(UPLOADED_KEYS)
        if unknown:
            raise ValueError(f"not file settings: {sorted(unknown)}")

    def command_line(self, paths: Mapping[str, str] | None = None) -> list[str]:
        """The child's overrides: :attr:`lines`, each file setting with ``paths[setting]``
        (the copy the worker made; default: the planned path, or ``upload:<id>`` for an
        upload, as the audit's record shows it), her overrides, then the seed."""
        given = paths or {}
        files = [
            f"{key}={quoted(given.get(key) or planned.portable())}"
            for key, planned in sorted(self.files.items(), key=lambda item: _ORDER[item[0]])
        ]
        seed = [f"{SEED}={self.seed}"] if self.seed is not None else []
        return [*self.lines, *files, *self.overrides, *seed]

    def with_seed(self, seed: int) -> AuditPlan:
        """The same plan at ``seed`` (a repeat)."""
        return replace(self, seed=seed)

    def with_files(self, files: Mapping[str, PlannedFile]) -> AuditPlan:
        """The same plan reading ``files`` (uploads by reference, where the door found them)."""
        return replace(self, files=dict(files))

    def as_json(self) -> dict[str, Any]:
        """What the audit's stored request keeps under ``plan``."""
        return {
            "version": PLAN_VERSION,
            "modality": self.modality,
            "lines": list(self.lines),
            "files": {
                key: {k: v for k, v in vars(f).items() if v is not None}
                for key, f in self.files.items()
            },
            "overrides": list(self.overrides),
            "seed": self.seed,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> AuditPlan:
        """A stored plan (:meth:`as_json`); ValueError where it is not one."""
        if stored.get("version") != PLAN_VERSION:
            raise ValueError(f"plan version {stored.get('version')!r} is not {PLAN_VERSION}")
        from panoramia.plugins import MODALITIES

        files = stored.get("files") or {}
        seed = stored.get("seed")
        if not (seed is None or (type(seed) is int and 0 <= seed <= MAX_SEED)):
            raise ValueError(f"plan seed {seed!r}")
        if stored.get("modality") not in MODALITIES:
            raise ValueError(f"plan modality {stored.get('modality')!r} is not installed")
        lines, overrides = stored.get("lines"), stored.get("overrides")
        if not (isinstance(lines, list) and isinstance(overrides, list)):
            raise ValueError("a plan's lines and overrides are lists")
        if not all(isinstance(text, str) for text in [*lines, *overrides]):
            raise ValueError("a plan's lines and overrides are strings")
        if not isinstance(files, dict):
            raise ValueError("a plan's files are a mapping")
        return cls(
            modality=str(stored["modality"]),
            lines=tuple(stored["lines"]),
            files={str(key): PlannedFile(**value) for key, value in files.items()},
            overrides=tuple(stored["overrides"]),
            seed=seed,
        )


_ORDER = {"target.path": 0, "data.members_path": 1, "data.nonmembers_path": 2}
"""The file settings in the order the command line gives them."""


def split_seed(overrides: list[str]) -> tuple[list[str], int | None, int]:
    """Her overrides without her ``seed=``, that seed (None without one) and its position
    (-1 without one). A seed that is not a whole number (up to ten digits) stays among her
    overrides (the composed config's check names it, as for any setting), its position given
    as ``-2 - position``, which :func:`repeated` refuses; one past :data:`MAX_SEED` is taken
    and refused by that check, or by :func:`repeated`'s count. Her text is read here once;
    it was checked (``check_overrides``)."""
    kept, seed, where = [], None, -1
    for position, line in enumerate(overrides):
        key, _, value = line.partition("=")
        if key.strip() != SEED:
            kept.append(line)
            continue
        if not re.fullmatch(r"[0-9]{1,10}", value.strip()):
            kept.append(line)
            where = -2 - position if where >= -1 else where  # the first unreadable one
            continue
        seed = int(value.strip())
        where = position if where >= -1 else where
    return kept, seed, where


def repeated(plan: AuditPlan, repeats: int, position: int = -1) -> list[AuditPlan]:
    """One plan per repeat: at her seed s (0 without one), s + 1, …; PlanError (naming her
    seed's position, :func:`split_seed`'s ``position``) where her seed is not a whole number
    or the last repeat's seed would pass :data:`MAX_SEED`."""
    if position < -1:
        raise PlanError(-2 - position, "seed: a whole number, 0 or more")
    base = plan.seed or 0
    if base + repeats - 1 > MAX_SEED:
        raise PlanError(
            position, f"seed: {repeats} repeats from {base} pass {MAX_SEED}, the largest seed"
        )
    return [plan.with_seed(base + index) for index in range(repeats)]
