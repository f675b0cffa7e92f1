"""The text distinguisher shared by the attack (loss sequence of f) and the baseline (of h).

``TextDistinguisher(config, seed=..., vocab_size=...).fit(x_train, side_train, y_train, x_val,
side_val, y_val)`` then ``.score(x, side)``: ``x_*`` are :class:`~panoramia.data.text.TextSet`
chunks (N, L), ``side_*`` per-token losses (nats, shape (N, L−1)), ``y_*`` 1 = member,
0 = non-member. Scores are continuous probabilities of "member" (float64, (N,)).

Training follows the paper's two phases: ``head_epochs`` with the sequence encoder frozen (the
loss branch and the head learn), then ``epochs`` with everything trainable. After every epoch of
both phases the validation split is scored and rated by the validation lower bound; the best
epoch's weights are kept (``candidates`` records every epoch, phase and number).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mia.tabular import CandidateRecord
from panoramia.data.text import TextSet

LOSS_FLOOR = 1e-8
SCORE_BATCH = 1024


@dataclass
class TextDistinguisherConfig:
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    hidden: int = 64
    dropout: float = 0.1
    head_epochs: int = 5
    """Phase 1: the sequence encoder frozen."""
    epochs: int = 15
    """Phase 2: everything trained."""
    batch_size: int = 64
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    selection_thresholds: str = "grid:100"
    selection_confidence: float = 0.95
    accelerator: str = "auto"
    devices: str = "1"
    """One device: the per-epoch selection scores the whole validation split in one process."""
    precision: str | None = None
    num_workers: int = 0


def loss_sequence_features(losses: np.ndarray) -> np.ndarray:
    """(N, T) per-token losses → (N, 2T + 2) float32: the losses, their logs, the mean loss and
    the mean log loss (standardised later on training data)."""
    losses = np.asarray(losses, np.float64)
    logs = np.log(np.maximum(losses, LOSS_FLOOR))
    summary = np.column_stack([losses.mean(axis=1), logs.mean(axis=1)])
    return np.concatenate([losses, logs, summary], axis=1).astype(np.float32)


class TextDistinguisher:
    def __init__(self, config: TextDistinguisherConfig, *, seed: int, vocab_size: int) -> None:
        self.config = config
        self.seed = seed
        self.vocab_size = vocab_size
        self.model = None
        self.side_mean: np.ndarray | None = None
        self.side_std: np.ndarray | None = None
        self.candidates: list[CandidateRecord] = []

    def _side(self, losses: np.ndarray) -> np.ndarray:
        assert self.side_mean is not None
        assert self.side_std is not None
        return (loss_sequence_features(losses) - self.side_mean) / self.side_std

    def _dataset(self, x: TextSet, side: np.ndarray, y: np.ndarray | None = None):
        import torch
        from torch.utils.data import TensorDataset

        if side.shape != (len(x), x.length - 1):
            raise ValueError(f"side: shape {side.shape}, expected ({len(x)}, {x.length - 1})")
        tensors = [torch.from_numpy(x.tokens), torch.from_numpy(self._side(side))]
        if y is not None:
            tensors.append(torch.from_numpy(np.asarray(y, np.float32)))
        return TensorDataset(*tensors)

    def fit(
        self,
        x_train: TextSet,
        side_train: np.ndarray,
        y_train: np.ndarray,
        x_val: TextSet,
        side_val: np.ndarray,
        y_val: np.ndarray,
    ) -> TextDistinguisher:
        import lightning as L
        import torch
        from torch.utils.data import DataLoader

        from mia.distinguisher_module import DistinguisherModule
        from mia.text_module import TextLossDistinguisher
        from panoramia.models.training import TrainingConfig, make_trainer

        features = loss_sequence_features(side_train)
        self.side_mean = features.mean(axis=0)
        self.side_std = np.maximum(features.std(axis=0), 1e-6).astype(np.float32)
        L.seed_everything(self.seed, workers=True, verbose=False)
        config = self.config
        network = TextLossDistinguisher(
            self.vocab_size, x_train.length, features.shape[1], d_model=config.d_model,
            layers=config.layers, heads=config.heads, hidden=config.hidden,
            dropout=config.dropout,
        )  # fmt: skip
        module = DistinguisherModule(
            network, learning_rate=config.learning_rate, weight_decay=config.weight_decay,
            thresholds=config.selection_thresholds, confidence=config.selection_confidence,
        )  # fmt: skip
        options = {"num_workers": config.num_workers, "pin_memory": torch.cuda.is_available()}
        train = DataLoader(
            self._dataset(x_train, side_train, y_train), batch_size=config.batch_size,
            shuffle=True, generator=torch.Generator().manual_seed(self.seed), **options,
        )  # fmt: skip
        val = DataLoader(self._dataset(x_val, side_val, y_val), batch_size=1024, **options)
        phases = [("head", config.head_epochs, False), ("all", config.epochs, True)]
        for phase, epochs, encoder_trains in phases:
            if epochs <= 0:
                continue
            for parameter in network.sequence_parameters():
                parameter.requires_grad_(encoder_trains)
            training = TrainingConfig(
                epochs=epochs, seed=self.seed, accelerator=config.accelerator,
                devices=config.devices, precision=config.precision,
            )  # fmt: skip
            before = len(module.epoch_bounds)
            make_trainer(training, validate=True).fit(module, train, val)
            self.candidates += [
                CandidateRecord({"phase": phase, "epoch": epoch + 1}, bound)
                for epoch, bound in enumerate(module.epoch_bounds[before:])
            ]
        if module.best_state is not None:
            network.load_state_dict(module.best_state)
        self.model = network.cpu().float().eval()
        return self

    def score(self, x: TextSet, side: np.ndarray) -> np.ndarray:
        """P(member) of each chunk given its loss sequence, float64 of shape (N,)."""
        import torch

        assert self.model is not None
        tokens, features = self._dataset(x, side).tensors
        with torch.no_grad():
            logits = [
                self.model(tokens[i : i + SCORE_BATCH], features[i : i + SCORE_BATCH])
                for i in range(0, len(tokens), SCORE_BATCH)
            ]
        return torch.sigmoid(torch.cat(logits).double()).numpy()

    @property
    def chosen(self) -> CandidateRecord:
        """The first epoch with the largest validation θ_lb (the weights that score)."""
        return max(self.candidates, key=lambda c: c.validation_theta_lb)
