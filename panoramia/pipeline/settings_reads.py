"""Which of a job's settings are read while a stage is built, recorded by dotted path.

:func:`recording` records every read of a field of the job's settings dataclasses (the job
and each section under it, found by walking its fields) for as long as it is open: the
classes' attribute lookup is wrapped meanwhile, and a read counts where it is made on one of
*this* job's section objects (copies made with :func:`dataclasses.replace` and other jobs'
settings are not recorded). Reading a section records nothing by itself; reading its fields
(one by one, or all of them through :func:`dataclasses.asdict`) records each. Nothing about
the objects changes: they keep their class, pickle and compare as before.

The graph (:meth:`panoramia.pipeline.graph.AuditPipeline.run`) records each stage's build
and holds what it read against what its key declares
(:class:`~panoramia.pipeline.stages.stage_key.StageKey`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any

_lock = threading.Lock()
_sections: dict[int, tuple[str, set[str]]] = {}
"""id of a recorded job's section → (its dotted path, the set its reads go to)."""
_wrapped: dict[type, int] = {}
"""Classes whose lookup is wrapped now → how many open recordings hold them."""


def _sections_of(job: Any) -> dict[int, tuple[Any, str]]:
    """Every settings dataclass object under ``job`` (itself included), by id: (it, path)."""
    found: dict[int, tuple[Any, str]] = {}
    pending = [(job, "")]
    while pending:
        node, path = pending.pop()
        if id(node) in found:
            continue
        found[id(node)] = (node, path)
        for entry in fields(node):
            child = getattr(node, entry.name)
            if is_dataclass(child) and not isinstance(child, type):
                pending.append((child, f"{path}.{entry.name}" if path else entry.name))
    return found


def _wrap(cls: type) -> None:
    """Wrap ``cls``'s attribute lookup so that reads of recorded sections' fields count."""
    names = frozenset(entry.name for entry in fields(cls))
    original: Any = cls.__getattribute__

    def lookup(self: Any, name: str) -> Any:
        value = original(self, name)
        if name in names:
            where = _sections.get(id(self))
            if where is not None and not (is_dataclass(value) and not isinstance(value, type)):
                path, reads = where
                reads.add(f"{path}.{name}" if path else name)
        return value

    lookup.__wrapped_lookup__ = True  # type: ignore[attr-defined]
    cls.__getattribute__ = lookup  # type: ignore[method-assign,assignment]


def _unwrap(cls: type) -> None:
    """Give ``cls`` its own attribute lookup back."""
    own = cls.__dict__.get("__getattribute__")
    if own is not None and getattr(own, "__wrapped_lookup__", False):
        delattr(cls, "__getattribute__")


@contextmanager
def recording(job: Any) -> Iterator[set[str]]:
    """Record the dotted paths of ``job``'s settings read while it is open (see the module
    docstring); yields the set they go to. Recordings of different jobs may be open at once
    (in threads); one job is recorded by one recording at a time."""
    reads: set[str] = set()
    if not (is_dataclass(job) and not isinstance(job, type)):
        yield reads
        return
    sections = _sections_of(job)
    classes = {type(node) for node, _ in sections.values()}
    held: set[type] = set()
    try:
        with _lock:
            for cls in classes:
                if cls.__dict__.get("__getattribute__") is not None and cls not in _wrapped:
                    continue  # a class with a lookup of its own: left alone, not recorded
                if _wrapped.get(cls, 0) == 0:
                    _wrap(cls)
                _wrapped[cls] = _wrapped.get(cls, 0) + 1
                held.add(cls)
            for key, (_, path) in sections.items():
                _sections[key] = (path, reads)
        yield reads
    finally:
        with _lock:
            for key in sections:
                _sections.pop(key, None)
            for cls in held:
                _wrapped[cls] -= 1
                if _wrapped[cls] == 0:
                    del _wrapped[cls]
                    _unwrap(cls)
