"""Conversion of numbers to JSON-safe Python values (NaN and ±inf become None)."""

from __future__ import annotations

import math

import numpy as np


def number(value: object) -> float | int | bool | None:
    """A numpy or Python scalar as a JSON-safe Python scalar; NaN/inf and None become None."""
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    as_float = float(value)  # type: ignore[arg-type]
    return as_float if math.isfinite(as_float) else None


def numbers(values: np.ndarray) -> list[float | int | bool | None]:
    """A numpy vector as a list of JSON-safe scalars."""
    return [number(x) for x in np.asarray(values).tolist()]
