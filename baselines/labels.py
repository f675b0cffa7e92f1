"""Synthetic labels drawn from a labeler's predicted class probabilities (not its arg-max,
which would make synthetic labels easier than real ones), for every modality's labeler."""

from __future__ import annotations

import numpy as np


def draw_classes(probabilities: np.ndarray, *, seed: int) -> np.ndarray:
    """One class index per row of (n, K) ``probabilities``, drawn from that row."""
    cumulative = np.cumsum(probabilities, axis=1)
    draws = np.random.default_rng(seed).random((len(probabilities), 1))
    return np.minimum((draws > cumulative).sum(axis=1), probabilities.shape[1] - 1)
