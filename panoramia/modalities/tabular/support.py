"""The support screen for tables: drop synthetic rows that show a value, or a pair of values,
that the real table never shows where real rows themselves almost never do.

A generator that models columns separately (a Gaussian copula, say) writes rows no real table
holds: a ``Husband`` who is ``Female``, an ``education`` of ``Bachelors`` beside an
``education-num`` of 3. Such a row is a certain non-member for any distinguisher, whatever the
target leaks. The screen learns from D_G alone which checks are safe: it splits D_G in two
halves and keeps a column (or pair of columns) only when rows of one half show a value (pair)
unseen in the other half less often than ``novelty`` — so a real row would fail it about that
rarely — and then checks candidates against every value (pair) of the whole D_G. Columns with
more than ``max_levels`` distinct values in D_G (continuous ones) are left alone.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

SEPARATOR = "\x1f"
"""Joins the values of a pair into one key (a character no table value is expected to hold)."""


def _keys(rows: pd.DataFrame, columns: tuple[str, ...]) -> pd.Series:
    keys = rows[columns[0]].astype(str)
    for column in columns[1:]:
        keys = keys + SEPARATOR + rows[column].astype(str)
    return keys


@dataclass(frozen=True)
class SupportScreen:
    """The checks kept on D_G: each a tuple of one or two columns and the keys D_G shows."""

    checks: dict[tuple[str, ...], frozenset[str]]

    @classmethod
    def fit(
        cls, real: pd.DataFrame, *, novelty: float, seed: int, max_levels: int = 100
    ) -> SupportScreen:
        """Checks whose novelty between two seeded halves of ``real`` is below ``novelty``
        (a share in [0, 1]); none when ``novelty`` is 0."""
        if novelty <= 0 or len(real) < 2:
            return cls({})
        order = np.random.default_rng(seed).permutation(len(real))
        first = real.iloc[order[: len(real) // 2]]
        second = real.iloc[order[len(real) // 2 :]]
        columns = [c for c in real.columns if real[c].nunique() <= max_levels]
        candidates = [(c,) for c in columns] + list(itertools.combinations(columns, 2))
        checks: dict[tuple[str, ...], frozenset[str]] = {}
        for group in candidates:
            unseen = ~_keys(second, group).isin(set(_keys(first, group)))
            if unseen.mean() < novelty:
                checks[group] = frozenset(_keys(real, group))
        return cls(checks)

    def passes(self, rows: pd.DataFrame) -> np.ndarray:
        """True for each row that shows only values (pairs) D_G shows; shape (len(rows),)."""
        keep = np.ones(len(rows), dtype=bool)
        for group, seen in self.checks.items():
            keep &= _keys(rows, group).isin(seen).to_numpy()
        return keep

    def screen(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The rows that pass, in their order."""
        return rows[self.passes(rows)].reset_index(drop=True)
