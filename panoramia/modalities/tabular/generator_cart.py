"""Sequential CART synthesis for tables (Reiter 2005; the R package synthpop's default method).

The first column is drawn from D_G's values. Every later column is drawn given the columns
before it: a decision tree (scikit-learn; a classifier for a categorical column, a regressor
for a continuous one) is grown on D_G with at least ``min_leaf`` rows per leaf; a synthetic row
falls into one leaf of that tree and takes the column's value of a D_G row drawn uniformly
from that leaf (its *donors*). Every synthetic value is thus a value D_G holds in the same
context of earlier columns, and the dependence between columns is as deep as the trees.

Contract: ``fit`` sees D_G only (conformed rows); ``sample(n, seed)`` returns ``n`` rows with
D_G's columns, order and dtypes, reproducible for a seed. Categorical columns enter the trees
one-hot, continuous ones as they are. A whole synthetic row can equal a D_G row (about 1–5 %
on Adult's 6,000 rows, fewer with larger leaves): such a row is a training member of a target
that trained on D_G, which makes it harder for the attack, never easier.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from pandas.api.extensions import ExtensionDtype
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor


@dataclass
class _ColumnModel:
    """How one column is drawn: the tree over earlier columns and each leaf's donor values."""

    column: str
    tree: DecisionTreeClassifier | DecisionTreeRegressor
    """A fitted ``DecisionTreeClassifier``/``DecisionTreeRegressor`` (``apply`` gives leaves)."""
    leaf_ids: np.ndarray
    """Sorted leaf ids, shape (n_leaves,)."""
    starts: np.ndarray
    """Start of each leaf's donors in ``donors``, shape (n_leaves + 1,)."""
    donors: np.ndarray
    """The column's D_G values grouped by leaf, shape (n_rows,)."""


class SequentialCart:
    """Column-by-column CART synthesis; ``categorical`` names the columns drawn as categories
    (the label included)."""

    def __init__(self, categorical: set[str], *, min_leaf: int) -> None:
        if min_leaf < 1:
            raise ValueError("min_leaf must be at least 1")
        self.categorical = set(categorical)
        self.min_leaf = min_leaf
        self.columns: list[str] = []
        self.dtypes: dict[Hashable, np.dtype | ExtensionDtype] = {}  # D_G's, by column
        self.levels: dict[str, np.ndarray] = {}
        self.first: np.ndarray = np.empty(0)
        self.models: list[_ColumnModel] = []

    def _encoded(self, values: np.ndarray, column: str) -> np.ndarray:
        """One column as the trees see it, shape (n, width): one-hot categories (D_G's levels;
        an unseen level is all zeros) or the continuous value as float64. A tree's input is
        the earlier columns' blocks side by side, built up one column at a time."""
        if column in self.categorical:
            return (values[:, None] == self.levels[column][None, :]).astype(np.float32)
        return values.astype(np.float64)[:, None]

    def fit(self, rows: pd.DataFrame, *, seed: int) -> SequentialCart:
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        self.columns = [str(column) for column in rows.columns]
        self.dtypes = rows.dtypes.to_dict()
        self.levels = {
            column: np.asarray(pd.unique(rows[column]), dtype=object)
            for column in self.columns
            if column in self.categorical
        }
        self.first = rows[self.columns[0]].to_numpy()
        self.models = []
        blocks = [self._encoded(self.first, self.columns[0])]
        for column in self.columns[1:]:
            features = np.hstack(blocks)
            values = rows[column].to_numpy()
            if column in self.categorical:
                tree = DecisionTreeClassifier(min_samples_leaf=self.min_leaf, random_state=seed)
                tree.fit(features, pd.factorize(values)[0])
            else:
                tree = DecisionTreeRegressor(min_samples_leaf=self.min_leaf, random_state=seed)
                tree.fit(features, values.astype(np.float64))
            leaves = tree.apply(features)
            order = np.argsort(leaves, kind="stable")
            leaf_ids, starts = np.unique(leaves[order], return_index=True)
            self.models.append(
                _ColumnModel(column, tree, leaf_ids, np.r_[starts, len(order)], values[order])
            )
            blocks.append(self._encoded(values, column))
        return self

    def sample(self, n: int, *, seed: int) -> pd.DataFrame:
        if not self.columns:
            raise RuntimeError("fit the synthesizer before sampling")
        rng = np.random.default_rng(seed)
        out = pd.DataFrame({self.columns[0]: rng.choice(self.first, n)})
        blocks = [self._encoded(out[self.columns[0]].to_numpy(), self.columns[0])]
        for model in self.models:
            leaves = model.tree.apply(np.hstack(blocks))
            slot = np.searchsorted(model.leaf_ids, leaves)
            start, stop = model.starts[slot], model.starts[slot + 1]
            out[model.column] = model.donors[start + rng.integers(0, stop - start)]
            blocks.append(self._encoded(out[model.column].to_numpy(), model.column))
        return out.astype(self.dtypes)
