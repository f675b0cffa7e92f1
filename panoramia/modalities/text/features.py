"""What the text distinguisher reads off a chunk's per-token losses (``distinguisher.features``).

Both functions take losses in nats of shape (N, T) (one model) or (N, T, k) (k models, the
first in f's place: f for the attack, a stand-in f̂_j for the baseline; then h and any reference
models, docs/SPEC.md §2.7) and return float32 (N, F) features, standardised later on the
training split. Both sides of the game get the same function of their own losses, so the
mirrored null (SPEC §3.1) still holds.

- ``sequence`` (:func:`loss_sequence_features`, the paper's): per model, the losses, their logs,
  the mean loss and the mean log loss.
- ``calibrated`` (:func:`calibrated_features`, SPEC §2.9): the ``sequence`` features, then the
  first model's per-token losses calibrated by the others' (its loss minus their mean loss on
  the same token, as reference-model attacks compare), and per-chunk summaries: the mean of the
  calibrated losses, the mean of its lowest :data:`MIN_K` share (min-k %, Shi et al. 2024) of
  raw and of calibrated losses, the share of tokens where the first model's loss is below the
  others' mean, and the mean log-ratio. With one model only the min-k % summary is added.
"""

from __future__ import annotations

import numpy as np

from panoramia.mia.selection import LOSS_FLOOR

MIN_K = 0.2
"""The share of a chunk's tokens the min-k % summaries average (its lowest losses)."""


def loss_sequence_features(losses: np.ndarray) -> np.ndarray:
    """(N, T) per-token losses, or (N, T, k) for k models → (N, k(2T + 2)) float32: per
    model, the losses, their logs, the mean loss and the mean log loss."""
    losses = np.asarray(losses, np.float64)
    if losses.ndim == 3:
        return np.concatenate(
            [loss_sequence_features(losses[..., i]) for i in range(losses.shape[2])], axis=1
        )
    logs = np.log(np.maximum(losses, LOSS_FLOOR))
    summary = np.column_stack([losses.mean(axis=1), logs.mean(axis=1)])
    return np.concatenate([losses, logs, summary], axis=1).astype(np.float32)


def lowest_share_mean(values: np.ndarray, share: float = MIN_K) -> np.ndarray:
    """(N, T) → (N,): the mean of each row's ⌈share·T⌉ lowest values."""
    count = max(1, int(np.ceil(share * values.shape[1])))
    return np.sort(values, axis=1)[:, :count].mean(axis=1)


def calibrated_features(losses: np.ndarray) -> np.ndarray:
    """(N, T) or (N, T, k) per-token losses → float32 features: :func:`loss_sequence_features`,
    then (k ≥ 2) the first model's per-token losses minus the others' mean (T columns) and
    five summaries, or (k = 1) the first model's min-k % mean alone."""
    losses = np.asarray(losses, np.float64)
    sequence = loss_sequence_features(losses)
    own = losses[..., 0] if losses.ndim == 3 else losses
    if losses.ndim == 2 or losses.shape[2] == 1:
        return np.column_stack([sequence, lowest_share_mean(own)]).astype(np.float32)
    others = losses[..., 1:].mean(axis=2)
    calibrated = own - others
    log_ratio = np.log(np.maximum(own, LOSS_FLOOR)) - np.log(np.maximum(others, LOSS_FLOOR))
    summaries = np.column_stack([
        calibrated.mean(axis=1), lowest_share_mean(own), lowest_share_mean(calibrated),
        (calibrated < 0).mean(axis=1), log_ratio.mean(axis=1),
    ])  # fmt: skip
    return np.concatenate([sequence, calibrated, summaries], axis=1).astype(np.float32)


TEXT_FEATURES = {"sequence": loss_sequence_features, "calibrated": calibrated_features}
"""``distinguisher.features`` → the function of the losses."""
