"""Conversion of numbers to JSON-safe Python values (NaN and ±inf become None)."""

from __future__ import annotations

import math
from typing import Any, SupportsFloat, TypeAlias, cast

import numpy as np

JSONDict: TypeAlias = dict[str, Any]
"""A JSON object (a report document, or one section of it), as ``json.loads`` returns it."""


def number(value: object) -> float | int | bool | None:
    """A numpy or Python scalar as a JSON-safe Python scalar; NaN/inf and None become None."""
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    as_float = float(cast("SupportsFloat", value))  # any other value raises, as float() does
    return as_float if math.isfinite(as_float) else None


def numbers(values: np.ndarray) -> list[float | int | bool | None]:
    """A numpy vector as a list of JSON-safe scalars."""
    return [number(x) for x in np.asarray(values).tolist()]
