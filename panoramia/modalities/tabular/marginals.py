"""Marginal matching for tables: map each continuous column of synthetic rows onto D_G's
empirical distribution by its quantile, keeping the generator's order of values (up to the
resolution of a reference draw), so its dependence between columns is kept.

sdv's Gaussian copula fits a parametric marginal (a beta distribution by default) to each
continuous column, so its rows show values real rows do not have and miss the heaps real rows
do have: hours-per-week of 45, 50 or 60, the few capital-gain amounts the census records. A
distinguisher finds real rows by such values at high precision, whatever the target leaks.
A value x of column c is mapped to Q_G(F_S(x)), where F_S is the generator's distribution
function (estimated on a reference draw, ties broken at random) and Q_G the quantile function
of D_G's values: D_G's own values on heaped columns (at least ``HEAPED`` of D_G's rows share
their value with another row: ages, hours, amounts), linear interpolation between D_G's order
statistics on the others (so that no row copies a real row's unique value), rounded to whole
numbers where D_G holds only whole numbers. Inputs are conformed rows: continuous columns are
finite float64 (``panoramia.modalities.tabular.table.conform``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

HEAPED = 0.5
"""A column is mapped onto D_G's own values when at least this share of D_G's rows share their
value with another row; a share rather than a count of levels, so the choice does not move
with the size of D_G."""


@dataclass(frozen=True)
class ColumnMap:
    reference: np.ndarray
    """The generator's values of the column on the reference draw, sorted, shape (n_s,)."""
    real: np.ndarray
    """D_G's values of the column, sorted, shape (n_r,)."""
    discrete: bool
    """True: map onto D_G's own values; False: interpolate between them."""
    integral: bool
    """D_G holds only whole numbers: interpolated values are rounded."""


@dataclass(frozen=True)
class MarginalMatch:
    """One :class:`ColumnMap` per continuous column."""

    columns: dict[str, ColumnMap]

    @classmethod
    def fit(
        cls,
        real: pd.DataFrame,
        reference: pd.DataFrame,
        continuous: tuple[str, ...] | list[str],
    ) -> MarginalMatch:
        """Maps for the ``continuous`` columns, from D_G rows ``real`` and the generator's rows
        ``reference`` (a draw kept for this only); ValueError when either is empty."""
        if len(real) == 0 or len(reference) == 0:
            raise ValueError("marginal matching needs D_G rows and a reference draw")
        maps = {}
        for column in continuous:
            values = real[column]
            real_values = np.sort(values.to_numpy(np.float64))
            maps[column] = ColumnMap(
                np.sort(reference[column].to_numpy(np.float64)),
                real_values,
                discrete=bool(values.duplicated(keep=False).mean() >= HEAPED),
                integral=bool(np.all(real_values == np.rint(real_values))),
            )
        return cls(maps)

    def apply(self, rows: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` (conformed: finite float64 or integer continuous columns) with every mapped
        column replaced by its matched values, in the same dtype."""
        out = rows.copy()
        for column, mapping in self.columns.items():
            values = out[column].to_numpy(np.float64)
            n = len(mapping.reference)
            below = np.searchsorted(mapping.reference, values, side="left")
            ties = np.searchsorted(mapping.reference, values, side="right") - below
            # A uniform draw over the value's span of the generator's distribution function.
            u = (below + rng.random(len(values)) * (ties + 1)) / (n + 1)
            real = mapping.real
            if mapping.discrete:
                matched = real[np.minimum((u * len(real)).astype(np.int64), len(real) - 1)]
            else:
                matched = np.interp(u * (len(real) - 1), np.arange(len(real)), real)
            if mapping.integral or pd.api.types.is_integer_dtype(out[column].dtype):
                matched = np.rint(matched)
            # conformed continuous columns have numpy dtypes (float64 or an integer type)
            out[column] = matched.astype(cast(np.dtype, out[column].dtype))
        return out
