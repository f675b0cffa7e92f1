"""A setting's bounds, declared beside its field in the schema that holds it.

A numeric field of a job schema says its range (:class:`Range`) and, where the service
limits it apart from other counts, which of the service's limits applies (:class:`Limit`); a
list field says how many entries it may hold. They are written with :func:`ranged` and
:func:`ranged_list`, which return a :func:`dataclasses.field` carrying a :class:`Bound` in
its metadata, so the declaration is the only place a bound is written::

    epochs: int = ranged(100, COUNT, limit=Limit.EPOCHS)
    hidden: list[int] = ranged_list(lambda: [64, 64], each=COUNT, most=32, limit=Limit.WIDTH)

:func:`declared_bounds` reads them back from a schema class by whole key (``target.epochs``,
``helper.hidden``), walking the nested sections. The settings engine
(:mod:`panoramia.audit_settings`) checks a composed config against the bounds of its
modality's schema, the service's resource limits (:mod:`panoramia.service.resource_limits`)
take the limit kind from them, and ``docs/RANGES.md`` lists them.

This module imports nothing of the project but the standard library: every schema may
import it.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar, cast

T = TypeVar("T")

BOUND = "panoramia.bound"
"""The key of a field's metadata that holds its :class:`Bound`."""


@dataclass(frozen=True)
class Range:
    """``low`` ≤ value ≤ ``high`` (strict where ``open_low``/``open_high``); ``integer``: a
    whole number."""

    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False
    integer: bool = False

    def holds(self, value: float) -> bool:
        """Whether ``value`` (an int of any size, or a float) lies in the range."""
        if isinstance(value, float) and math.isnan(value):
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    def __str__(self) -> str:
        left = "(" if self.open_low else "["
        right = ")" if self.open_high else "]"
        low, high = _bound(self.low), _bound(self.high)
        return f"{'an integer in ' if self.integer else ''}{left}{low}, {high}{right}"


def _bound(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


COUNT = Range(1, 10**9, integer=True)
"""Epochs, batch sizes, widths, steps, sizes: at least 1."""
AMOUNT = Range(0, 10**9, integer=True)
"""Numbers of examples drawn for h (0: none)."""
FRACTION = Range(0, 1)
BELOW_ONE = Range(0, 1, open_high=True)
LEVEL = Range(0, 1, open_low=True, open_high=True)
RATE = Range(0, 10, open_low=True)
SEED = Range(0, 2**32 - 1, integer=True)
"""A seed: numpy's and torch's generators take 32 bits."""


class Limit(StrEnum):
    """Which of the service's resource limits bounds a numeric setting
    (:class:`panoramia.service.resource_limits.AuditLimits`); an integer setting that
    declares none is a count (``max_count``)."""

    EPOCHS = "epochs"
    THREADS = "threads"
    ESTIMATORS = "estimators"
    WIDTH = "width"
    LAYERS = "layers"
    ENSEMBLE = "ensemble"
    THRESHOLDS = "thresholds"
    """A threshold strategy's text: the K of ``grid:K``."""
    SEED = "seed"
    """Any 64-bit integer (the range above holds it to 32 bits)."""


@dataclass(frozen=True)
class Bound:
    """What a setting may hold: its range (each entry's, for a list), the service's limit
    that applies to it, and a list's fewest and most entries."""

    allowed: Range | None = None
    limit: Limit | None = None
    most: int | None = None
    fewest: int = 0
    entries: tuple[tuple[str, Bound], ...] = ()
    """For a mapping handed on as keyword arguments (``generator.options``): the bounds of
    the entries it may hold by name, each read as its own setting
    (``generator.options.epochs``)."""


def ranged(
    default: T,
    allowed: Range | None = None,
    *,
    limit: Limit | None = None,
    metadata: Mapping[str, object] | None = None,
) -> T:
    """A dataclass field with ``default``, whose value must lie in ``allowed`` and which the
    service bounds by ``limit`` (typed as the default, for the schema's annotations);
    ``metadata``: the field's other metadata (``panoramia.hashing.KEY_AT_DEFAULT``)."""
    held = {**(metadata or {}), BOUND: Bound(allowed=allowed, limit=limit)}
    return cast("T", dataclasses.field(default=default, metadata=held))


def ranged_list(
    factory: Callable[[], list[T]],
    *,
    most: int,
    each: Range | None = None,
    fewest: int = 0,
    limit: Limit | None = None,
) -> list[T]:
    """A list field made by ``factory`` of ``fewest`` to ``most`` entries, each in ``each``
    and bounded by the service's ``limit``."""
    bound = Bound(allowed=each, limit=limit, most=most, fewest=fewest)
    return cast("list[T]", dataclasses.field(default_factory=factory, metadata={BOUND: bound}))


def ranged_dict(
    factory: Callable[[], dict[str, Any]], *, entries: Mapping[str, Bound]
) -> dict[str, Any]:
    """A mapping field made by ``factory`` whose entries named in ``entries`` are bounded as
    settings of their own (the rest are the library's to check)."""
    bound = Bound(entries=tuple(entries.items()))
    return cast(
        "dict[str, Any]", dataclasses.field(default_factory=factory, metadata={BOUND: bound})
    )


def declared_bounds(schema: type, where: str = "") -> dict[str, Bound]:
    """Every bound declared in the dataclass ``schema`` and the sections it nests, by whole
    key (``audit.null.draws``); a list's bound under the list's key."""
    found: dict[str, Bound] = {}
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        key = f"{where}.{field.name}" if where else field.name
        bound = field.metadata.get(BOUND)
        if isinstance(bound, Bound):
            found[key] = bound
            found |= {f"{key}.{name}": entry for name, entry in bound.entries}
        section = _section_type(hints[field.name])
        if section is not None:
            found |= declared_bounds(section, key)
    return found


def _section_type(annotation: Any) -> type | None:
    """The dataclass a field holds (``X`` or ``X | None``), else None."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return annotation
    held = [arg for arg in typing.get_args(annotation) if dataclasses.is_dataclass(arg)]
    return cast("type", held[0]) if held else None
