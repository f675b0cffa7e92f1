"""Tables with a declared schema: a label column plus categorical and continuous features."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from panoramia.data.files import read_frame
from panoramia.errors import InputError


@dataclass(frozen=True)
class TabularSchema:
    """Which columns an audit uses. The label is the model's task (classification)."""

    label: str
    categorical: tuple[str, ...] = field(default_factory=tuple)
    continuous: tuple[str, ...] = field(default_factory=tuple)

    @property
    def features(self) -> tuple[str, ...]:
        return (*self.categorical, *self.continuous)

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.features, self.label)

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "categorical": list(self.categorical),
            "continuous": list(self.continuous),
        }

    @classmethod
    def from_dict(cls, document: dict) -> TabularSchema:
        return cls(
            label=str(document["label"]),
            categorical=tuple(document.get("categorical", ())),
            continuous=tuple(document.get("continuous", ())),
        )


def conform(frame: pd.DataFrame, schema: TabularSchema, *, source: str) -> pd.DataFrame:
    """Check and normalise ``frame`` to ``schema``: the declared columns only, clean types.

    Categorical columns and the label become strings; continuous columns float64. Raises
    InputError naming ``source`` when a declared column is missing, a continuous column is not
    numeric, or a value is missing.
    """
    missing = [column for column in schema.columns if column not in frame.columns]
    if missing:
        raise InputError(
            f"{source}: missing declared column(s) {', '.join(map(repr, missing))}; "
            f"has: {', '.join(map(str, frame.columns))}"
        )
    if frame.empty:
        raise InputError(f"{source}: no rows")
    out = pd.DataFrame(index=pd.RangeIndex(len(frame)))
    for column in (*schema.categorical, schema.label):
        values = frame[column].reset_index(drop=True)
        if values.isna().any():
            raise InputError(f"{source}: column {column!r} has {int(values.isna().sum())} missing")
        out[column] = values.astype(str).str.strip()
    for column in schema.continuous:
        values = pd.to_numeric(frame[column].reset_index(drop=True), errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=np.float64))
        if bad.any():
            raise InputError(
                f"{source}: continuous column {column!r} has {int(bad.sum())} missing or "
                "non-numeric values"
            )
        out[column] = values.astype(np.float64)
    return out[list(schema.columns)]


def infer_schema(frame: pd.DataFrame, label: str, *, source: str) -> TabularSchema:
    """A schema read off the columns' types: every column but ``label`` that pandas reads as
    numbers (not booleans) is continuous, every other one categorical. InputError naming
    ``source`` when the label is missing or takes one value only, or no feature is left."""
    if label not in frame.columns:
        raise InputError(
            f"{source}: no label column {label!r}; has: {', '.join(map(str, frame.columns))}"
        )
    continuous: list[str] = []
    categorical: list[str] = []
    for column in frame.columns:
        if column == label:
            continue
        values = frame[column]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        (continuous if numeric else categorical).append(str(column))
    if not continuous and not categorical:
        raise InputError(f"{source}: no feature column besides the label {label!r}")
    return TabularSchema(label, tuple(categorical), tuple(continuous))


def check_label(frame: pd.DataFrame, label: str, *, source: str) -> None:
    """InputError naming ``source`` when the label takes a single value (no classifier)."""
    values = frame[label].astype(str).str.strip().unique()
    if len(values) < 2:
        raise InputError(
            f"{source}: label {label!r} takes one value only ({values[0]!r}); an audit "
            "needs a classification task with at least two classes"
        )


def read_table(path: str | Path, schema: TabularSchema) -> pd.DataFrame:
    """Read a CSV (optionally compressed) or Parquet file and conform it to ``schema``."""
    frame = read_frame(path, what="data file")
    return conform(frame, schema, source=f"data file {str(path)!r}")
