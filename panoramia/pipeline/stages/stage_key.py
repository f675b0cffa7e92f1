"""Each stage's key declared once: what its result depends on besides its input stages.

A :class:`StageKey` names the stage, its version, the settings its key holds as they are
(``settings``: an entry of the key → the setting's dotted path in the job), the seeds it
reads (each an entry under its own name) and the settings it reads otherwise
(``also_reads``: those its caller folds into an entry it computes, such as the stand-in's
training files). :meth:`StageRunner.run <panoramia.pipeline.stages.runner.StageRunner.run>`
derives the key's settings and seeds from it; the caller gives only what it computes.

What a stage declares is checked where it matters: while a stage is built, every setting its
build reads is recorded (:mod:`panoramia.pipeline.settings_reads`), and a read that neither
it nor a stage it builds on declares (nor one that cannot change a result, such as the thread
count) is an undeclared dependency: a change to that setting would silently reuse a stale
artifact. The suite fails on one (``PANORAMIA_CHECK_READS=1``); an audit logs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from panoramia.hashing import settings_key

SEED = "seed"
"""The audit seed (which members, coins and distinguishers' training)."""
GENERATION_SEED = "generation_seed"
"""The generation seed (D_G, the generator, the synthetic pool, h, the stand-ins)."""
SEEDS = (SEED, GENERATION_SEED)


@dataclass(frozen=True)
class StageKey:
    """One stage's key declaration (see the module docstring). ``settings``' values enter
    the key as :func:`~panoramia.hashing.settings_key` of a section, or a leaf's value."""

    name: str
    version: int = 1
    settings: Mapping[str, str] = field(default_factory=dict)
    seeds: tuple[str, ...] = ()
    also_reads: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [seed for seed in self.seeds if seed not in SEEDS]
        if unknown:
            raise ValueError(f"stage {self.name}: {unknown} are not seeds ({SEEDS})")
        clash = set(self.settings) & set(self.seeds)
        if clash:
            raise ValueError(f"stage {self.name}: {sorted(clash)} both a setting and a seed")

    def reads(self) -> frozenset[str]:
        """Every setting path it declares it depends on (its ``settings``, seeds and
        ``also_reads``)."""
        return frozenset((*self.settings.values(), *self.seeds, *self.also_reads))

    def config(self, job: Any, seeds: Mapping[str, int], given: object) -> object:
        """The key's config: its ``settings`` read from ``job`` and its ``seeds``, with what
        the caller computed (``given``: a mapping, or any value where it declares neither).
        ValueError where ``given`` repeats a derived entry."""
        derived: dict[str, Any] = {e: _value(job, path) for e, path in self.settings.items()}
        derived.update({seed: seeds[seed] for seed in self.seeds})
        if not derived:
            return given
        if given is None:
            return derived
        if not isinstance(given, Mapping):
            raise ValueError(f"stage {self.name}: a derived key needs a mapping, not {given!r}")
        repeated = set(derived) & set(given)
        if repeated:
            raise ValueError(f"stage {self.name}: {sorted(repeated)} are derived from its key")
        return {**given, **derived}


def fields_of(section: str, schema: type, *, but: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The dotted paths of ``schema``'s fields under ``section``, less those named in ``but``:
    a declaration of a section's settings but some (a data stage's, without the split that
    later stages read and key themselves)."""
    return tuple(f"{section}.{entry.name}" for entry in fields(schema) if entry.name not in but)


def _value(job: Any, path: str) -> Any:
    """The setting at ``path`` (dotted) of ``job``: a section as its settings key, a leaf."""
    value = job
    for part in path.split("."):
        value = getattr(value, part)
    return settings_key(value) if is_dataclass(value) and not isinstance(value, type) else value


def covered(path: str, declared: frozenset[str] | set[str]) -> bool:
    """Whether the setting ``path`` is ``declared`` itself or lies in a declared section."""
    parts = path.split(".")
    return any(".".join(parts[:n]) in declared for n in range(1, len(parts) + 1))
