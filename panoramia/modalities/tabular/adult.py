"""The Adult census-income data (UCI), shipped with the package (see PROVENANCE.md)."""

from __future__ import annotations

import pandas as pd

from panoramia.datasets import path_of
from panoramia.modalities.tabular.table import TabularSchema, conform

COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
)  # fmt: skip
SCHEMA = TabularSchema(
    label="income",
    categorical=(
        "workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
        "native-country",
    ),
    continuous=(
        "age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week",
    ),
)  # fmt: skip


def _read(name: str, *, skiprows: int) -> pd.DataFrame:
    frame = pd.read_csv(
        path_of(name), header=None, names=list(COLUMNS), skipinitialspace=True,
        skiprows=skiprows, na_values="?",
    )  # fmt: skip
    frame = frame.dropna().reset_index(drop=True)  # rows with unknown values ('?'), as usual
    frame["income"] = frame["income"].str.rstrip(".")  # the test file ends labels with '.'
    return conform(frame, SCHEMA, source=name)


def load_adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) frames: 30,162 and 15,060 complete rows; label ``income`` ('>50K'/'<=50K')."""
    return _read("adult.data.gz", skiprows=0), _read("adult.test.gz", skiprows=1)
