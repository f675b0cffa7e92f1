"""The toy's models: a logistic regression over (optionally random Fourier features of) the
points, stored as plain arrays with ``target.json`` ``{"format": "toy-linear"}``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from panoramia.hashing import file_sha256
from panoramia.targets.manifest import MANIFEST, manifest_file
from tests.toy_modality.points import PointSet


def _features(x: np.ndarray, projection: np.ndarray | None) -> np.ndarray:
    return x if projection is None else np.cos(x @ projection)


class LinearTarget:
    def __init__(self, weights: np.ndarray, bias: np.ndarray, projection: np.ndarray | None,
                 sha256: str) -> None:  # fmt: skip
        self.weights, self.bias, self.projection, self.sha256 = weights, bias, projection, sha256

    def per_example_loss(self, points: PointSet) -> np.ndarray:
        """Cross-entropy (nats) of each point's class, float64 (n,)."""
        logits = _features(points.x, self.projection) @ self.weights + self.bias
        logits = np.c_[np.zeros(len(points)), logits]  # class 0's logit is 0
        log_norm = np.logaddexp(logits[:, 0], logits[:, 1])
        return log_norm - logits[np.arange(len(points)), points.y]

    def identity(self) -> dict[str, object]:
        return {"format": "toy-linear", "sha256": {"weights": self.sha256}}


def load_toy_target(
    directory: Path, manifest: dict, trusted_modules: Iterable[str] = (), device: object = None
) -> LinearTarget:
    path = manifest_file(Path(directory), manifest, "weights")
    with np.load(path, allow_pickle=False) as arrays:
        projection = arrays["projection"] if arrays["projection"].size else None
        return LinearTarget(arrays["weights"], arrays["bias"], projection, file_sha256(path))


def train_linear_directory(
    points: PointSet, directory: Path, *, inverse_penalty: float, features: int, seed: int
) -> dict:
    """Fit the logistic regression on ``points`` and write it as a toy target directory."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    projection = rng.normal(size=(points.x.shape[1], features)) * 2.0 if features else None
    model = LogisticRegression(C=inverse_penalty, max_iter=2000)
    model.fit(_features(points.x, projection), points.y)
    directory.mkdir(parents=True, exist_ok=True)
    np.savez(
        directory / "weights.npz", weights=model.coef_[0], bias=model.intercept_,
        projection=np.zeros(0) if projection is None else projection,
    )  # fmt: skip
    (directory / MANIFEST).write_text(
        json.dumps({"format": "toy-linear", "modality": "toy", "weights": "weights.npz"})
    )
    accuracy = float(model.score(_features(points.x, projection), points.y))
    return {"train_accuracy": accuracy, "trained_on": len(points)}
