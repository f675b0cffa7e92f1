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


def read_table(path: str | Path, schema: TabularSchema) -> pd.DataFrame:
    """Read a CSV (optionally compressed) or Parquet file and conform it to ``schema``."""
    frame = read_frame(path, what="data file")
    return conform(frame, schema, source=f"data file {str(path)!r}")
