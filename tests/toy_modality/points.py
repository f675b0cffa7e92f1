"""The toy's examples: points ``x`` (n, d) float64 with a class ``y`` (n,) int64."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class PointSet:
    x: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return int(self.y.size)

    def take(self, indices: np.ndarray) -> PointSet:
        return PointSet(self.x[indices], self.y[indices])

    def save(self, path: Path) -> None:
        with open(path, "wb") as handle:
            np.savez(handle, x=self.x, y=self.y)

    @staticmethod
    def read(path: Path) -> PointSet:
        with np.load(path, allow_pickle=False) as arrays:
            return PointSet(arrays["x"], arrays["y"])

    @staticmethod
    def concat(first: PointSet, second: PointSet) -> PointSet:
        return PointSet(np.concatenate([first.x, second.x]), np.concatenate([first.y, second.y]))
