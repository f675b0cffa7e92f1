"""A fitted, JSON-serialisable tabular encoder: one-hot categoricals, standardised numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.modalities.tabular.table import TabularSchema


@dataclass(frozen=True)
class TabularEncoder:
    """Maps conformed rows to a float32 matrix and the label to class indices.

    Unseen categories encode as all-zero one-hot blocks; an unseen label raises InputError.
    """

    schema: TabularSchema
    categories: dict[str, list[str]]
    means: dict[str, float]
    scales: dict[str, float]
    classes: list[str]
    """Label values, sorted; class index i is ``classes[i]``."""

    @classmethod
    def fit(cls, frame: pd.DataFrame, schema: TabularSchema) -> TabularEncoder:
        scales = {}
        for column in schema.continuous:
            std = float(frame[column].std(ddof=0))
            scales[column] = std if std > 0 else 1.0
        return cls(
            schema=schema,
            categories={c: sorted(frame[c].unique().tolist()) for c in schema.categorical},
            means={c: float(frame[c].mean()) for c in schema.continuous},
            scales=scales,
            classes=sorted(frame[schema.label].unique().tolist()),
        )

    @property
    def n_features(self) -> int:
        return sum(map(len, self.categories.values())) + len(self.schema.continuous)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def features(self, frame: pd.DataFrame) -> np.ndarray:
        """Encoded features, float32 array of shape (n_rows, n_features)."""
        blocks = []
        for column, values in self.categories.items():
            codes = pd.Categorical(frame[column], categories=values).codes
            block = np.zeros((len(frame), len(values)), dtype=np.float32)
            known = codes >= 0
            block[np.flatnonzero(known), codes[known]] = 1.0
            blocks.append(block)
        for column in self.schema.continuous:
            scaled = (frame[column].to_numpy(np.float64) - self.means[column]) / self.scales[column]
            blocks.append(scaled.astype(np.float32)[:, None])
        return np.concatenate(blocks, axis=1)

    def labels(self, frame: pd.DataFrame) -> np.ndarray:
        """Class indices, int64 array of shape (n_rows,)."""
        codes = pd.Categorical(frame[self.schema.label], categories=self.classes).codes
        if (codes < 0).any():
            unknown = frame[self.schema.label][codes < 0].iloc[0]
            raise InputError(f"label {self.schema.label!r}: value {unknown!r} unknown to the model")
        return codes.astype(np.int64)

    def matrix(self, frame: pd.DataFrame) -> np.ndarray:
        """Features with the label's class index as a last column, shape (n, n_features + 1).

        What classifiers of whole rows (real vs synthetic, member vs non-member) take as input.
        """
        return np.column_stack([self.features(frame), self.labels(frame)])

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": self.schema.to_dict(),
            "categories": self.categories,
            "means": self.means,
            "scales": self.scales,
            "classes": self.classes,
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: Path) -> TabularEncoder:
        try:
            document = json.loads(Path(path).read_text())
            return cls(
                schema=TabularSchema.from_dict(document["schema"]),
                categories={k: list(v) for k, v in document["categories"].items()},
                means={k: float(v) for k, v in document["means"].items()},
                scales={k: float(v) for k, v in document["scales"].items()},
                classes=list(document["classes"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise InputError(
                f"encoder file {str(path)!r}: not a panoramia encoder ({error})"
            ) from None
