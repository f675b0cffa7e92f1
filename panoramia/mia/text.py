"""The text distinguisher shared by the attack (loss sequence of f) and the baseline (of h).

``TextDistinguisher(config, seed=..., vocab_size=...).fit(x_train, side_train, y_train, x_val,
side_val, y_val)`` then ``.score(x, side)``: ``x_*`` are :class:`~panoramia.data.text.TextSet`
chunks (N, L), ``side_*`` per-token losses (nats, shape (N, L−1), or (N, L−1, k) for k
models), ``y_*`` 1 = member, 0 = non-member. Scores are continuous probabilities of "member"
(float64, (N,)).

Training follows the paper's two phases: ``head_epochs`` with the sequence encoder frozen (the
loss branch and the head learn), then ``epochs`` with everything trainable. After every epoch of
both phases the validation split is scored and rated by the validation lower bound; the best
epoch's weights are kept (``candidates`` records every epoch, phase and number).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.data.text import TextSet
from panoramia.mia.network import NetworkDistinguisher, NetworkDistinguisherConfig
from panoramia.mia.selection import LOSS_FLOOR


@dataclass
class TextDistinguisherConfig(NetworkDistinguisherConfig):
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    hidden: int = 64
    dropout: float = 0.1
    head_epochs: int = 5
    """Phase 1: the sequence encoder frozen."""
    epochs: int = 15
    """Phase 2: everything trained."""


def loss_sequence_features(losses: np.ndarray) -> np.ndarray:
    """(N, T) per-token losses, or (N, T, k) for k models → (N, k(2T + 2)) float32: per
    model, the losses, their logs, the mean loss and the mean log loss (standardised later on
    training data)."""
    losses = np.asarray(losses, np.float64)
    if losses.ndim == 3:
        return np.concatenate(
            [loss_sequence_features(losses[..., i]) for i in range(losses.shape[2])], axis=1
        )
    logs = np.log(np.maximum(losses, LOSS_FLOOR))
    summary = np.column_stack([losses.mean(axis=1), logs.mean(axis=1)])
    return np.concatenate([losses, logs, summary], axis=1).astype(np.float32)


class TextDistinguisher(NetworkDistinguisher):
    score_batch = 1024
    config: TextDistinguisherConfig

    def __init__(self, config: TextDistinguisherConfig, *, seed: int, vocab_size: int) -> None:
        super().__init__(config, seed=seed)
        self.vocab_size = vocab_size

    side_features = staticmethod(loss_sequence_features)

    def _inputs(self, x: TextSet):
        import torch

        return torch.from_numpy(x.tokens)

    def _dataset(self, x: TextSet, side: np.ndarray, y: np.ndarray | None = None):
        if side.shape[:2] != (len(x), x.length - 1):
            raise ValueError(f"side: shape {side.shape}, expected ({len(x)}, {x.length - 1}, …)")
        return super()._dataset(x, side, y)

    def fit(
        self,
        x_train: TextSet,
        side_train: np.ndarray,
        y_train: np.ndarray,
        x_val: TextSet,
        side_val: np.ndarray,
        y_val: np.ndarray,
    ) -> TextDistinguisher:
        from panoramia.mia.text_module import TextLossDistinguisher

        config = self.config
        n_side = self._prepare(side_train)
        network = TextLossDistinguisher(
            self.vocab_size, x_train.length, n_side, d_model=config.d_model,
            layers=config.layers, heads=config.heads, hidden=config.hidden,
            dropout=config.dropout,
        )  # fmt: skip
        phases = [
            ({"phase": "head"}, config.head_epochs, network.sequence_parameters()),
            ({"phase": "all"}, config.epochs, []),
        ]
        self._train(network, (x_train, side_train, y_train), (x_val, side_val, y_val), phases)
        return self
