"""Synthetic labels drawn from a labeler's predicted class probabilities (not its arg-max,
which would make synthetic labels easier than real ones), for every modality's labeler; and
the size of the held-out split that chooses h's (and the stand-in's) epoch."""

from __future__ import annotations

import numpy as np


def draw_classes(probabilities: np.ndarray, *, seed: int) -> np.ndarray:
    """One class index per row of (n, K) ``probabilities``, drawn from that row."""
    cumulative = np.cumsum(probabilities, axis=1)
    draws = np.random.default_rng(seed).random((len(probabilities), 1))
    return np.minimum((draws > cumulative).sum(axis=1), probabilities.shape[1] - 1)


def held_out(fraction: float, n: int) -> int:
    """Examples held out to choose the epoch: ``round(fraction * n)``, at least 1 when
    ``fraction`` > 0, none when it is 0."""
    return max(1, round(fraction * n)) if fraction > 0 else 0
