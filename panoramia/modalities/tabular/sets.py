"""A tabular audit's example sets: rows in parquet files (pandas DataFrames)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from panoramia.modalities.tabular.data import MEMBERS, NONMEMBERS
from panoramia.pipeline.stages.example_sets import ExampleSets


def write_rows(rows: pd.DataFrame, indices: np.ndarray, path: Path) -> None:
    """Store ``rows.iloc[indices]`` (renumbered from 0) as parquet."""
    rows.iloc[indices].reset_index(drop=True).to_parquet(path)


def stack_rows(members: pd.DataFrame, others: pd.DataFrame) -> pd.DataFrame:
    """Members' rows then the others', renumbered from 0."""
    return pd.concat([members, others], ignore_index=True)


def fill_rows(members: pd.DataFrame, others: pd.DataFrame, take: np.ndarray) -> pd.DataFrame:
    """Row i: member i where ``take[i]``, else other i (``take.size`` rows)."""
    m = take.size
    rows = pd.concat([members.iloc[:m][take], others.iloc[:m][~take]])
    return rows.sort_index(kind="stable").reset_index(drop=True)


TABULAR_SETS = ExampleSets(
    suffix=".parquet", members_file=MEMBERS, nonmembers_file=NONMEMBERS,
    read=pd.read_parquet, write=write_rows, stack=stack_rows, fill=fill_rows,
)  # fmt: skip
