"""The text distinguisher shared by the attack (loss sequence of f) and the baseline (of h).

``TextDistinguisher(config, seed=..., vocab_size=...).fit(x_train, side_train, y_train, x_val,
side_val, y_val)`` then ``.score(x, side)``: ``x_*`` are
:class:`~panoramia.modalities.text.documents.TextSet` chunks (N, L), ``side_*`` per-token losses
(nats, shape (N, L−1), or (N, L−1, k) for k models), ``y_*`` 1 = member, 0 = non-member. Scores are
continuous probabilities of "member" (float64, (N,)).

Training follows the paper's two phases: ``head_epochs`` with the sequence encoder frozen (the
loss branch and the head learn), then ``epochs`` with everything trainable. After every epoch of
both phases the validation split is scored and rated by the validation lower bound; the best
epoch's weights are kept (``candidates`` records every epoch, phase and number).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from panoramia.hashing import KEY_AT_DEFAULT
from panoramia.mia.network import NetworkDistinguisher, NetworkDistinguisherConfig
from panoramia.modalities.text.blind import BlindTextClassifier
from panoramia.modalities.text.documents import TextSet
from panoramia.modalities.text.features import TEXT_FEATURES, loss_sequence_features
from panoramia.setting_bounds import BELOW_ONE, COUNT, Limit, ranged


@dataclass
class TextDistinguisherConfig(NetworkDistinguisherConfig):
    d_model: int = ranged(64, COUNT, limit=Limit.WIDTH)
    layers: int = ranged(2, COUNT)
    heads: int = ranged(4, COUNT)
    hidden: int = ranged(64, COUNT, limit=Limit.WIDTH)
    dropout: float = ranged(0.1, BELOW_ONE)
    head_epochs: int = ranged(5, COUNT, limit=Limit.EPOCHS)
    """Phase 1: the sequence encoder frozen."""
    epochs: int = ranged(15, COUNT, limit=Limit.EPOCHS)
    """Phase 2: everything trained."""
    features: str = field(default="sequence", metadata={KEY_AT_DEFAULT: False})
    """What the loss branch reads of the losses (:mod:`panoramia.modalities.text.features`):
    ``sequence`` (the paper's) or ``calibrated`` (the first model's losses against the
    others', min-k %; docs/SPEC.md §2.9)."""
    blind: bool = field(default=False, metadata={KEY_AT_DEFAULT: False})
    """Stack a blind classifier's logit (token n-grams, no model:
    :mod:`panoramia.modalities.text.blind`) as one more side feature, on both sides alike."""


class TextDistinguisher(NetworkDistinguisher):
    score_batch = 1024
    config: TextDistinguisherConfig

    def __init__(self, config: TextDistinguisherConfig, *, seed: int, vocab_size: int) -> None:
        super().__init__(config, seed=seed)
        self.vocab_size = vocab_size

    side_features = staticmethod(loss_sequence_features)
    blind_model: BlindTextClassifier | None = None
    _blind_train: TextSet | None = None

    def features_of(self, x: TextSet, side: np.ndarray) -> np.ndarray:
        """``distinguisher.features`` of the losses, then the blind logit where ``blind`` is
        set (out-of-fold on the training chunks, the full model's elsewhere)."""
        features = TEXT_FEATURES[self.config.features](side)
        if self.blind_model is None:
            return features
        if x is self._blind_train:
            assert self.blind_model.training_logits is not None
            logits = self.blind_model.training_logits
        else:
            logits = self.blind_model.logits(x.tokens)
        return np.column_stack([features, logits]).astype(np.float32)

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
        from panoramia.modalities.text.distinguisher_module import TextLossDistinguisher

        config = self.config
        if config.blind:
            self.blind_model = BlindTextClassifier(self.seed).fit(x_train.tokens, y_train)
            self._blind_train = x_train
        n_side = self._prepare(x_train, side_train)
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
