"""The image distinguisher shared by the attack (losses of f) and the baseline (losses of h).

``ImageDistinguisher(config, seed=...).fit(x_train, side_train, y_train, x_val, side_val,
y_val)`` then ``.score(x, side)``: ``x_*`` are :class:`~panoramia.data.images.ImageSet` s,
``side_*`` per-example losses (nats, shape (n,)), ``y_*`` 1 = member, 0 = non-member. Scores
are continuous probabilities of "member" (float64, shape (n,)) — never hard 0/1 predictions,
whose precision–recall sweep collapses to a single point. The epoch is chosen by the
validation lower bound (see :mod:`mia.distinguisher_module`); ``candidates`` records every epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mia.tabular import CandidateRecord
from panoramia.data.images import ImageSet

LOSS_FLOOR = 1e-8
SCORE_BATCH = 4096


@dataclass
class ImageDistinguisherConfig:
    width: int = 16
    """Channels of the image branch's first conv layer."""
    hidden: int = 32
    """Width of the loss branch and the stacking head."""
    epochs: int = 20
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


def loss_features(losses: np.ndarray) -> np.ndarray:
    """(n,) losses → (n, 2) float32: [log loss, loss] (standardised later on training data)."""
    losses = np.asarray(losses, np.float64)
    return np.column_stack([np.log(np.maximum(losses, LOSS_FLOOR)), losses]).astype(np.float32)


class ImageDistinguisher:
    def __init__(self, config: ImageDistinguisherConfig, *, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.model = None
        self.normalization = None
        self.side_mean: np.ndarray | None = None
        self.side_std: np.ndarray | None = None
        self.candidates: list[CandidateRecord] = []

    def _side(self, losses: np.ndarray) -> np.ndarray:
        assert self.side_mean is not None
        assert self.side_std is not None
        return (loss_features(losses) - self.side_mean) / self.side_std

    def _dataset(self, x: ImageSet, side: np.ndarray, y: np.ndarray | None = None):
        import torch
        from torch.utils.data import TensorDataset

        assert self.normalization is not None
        tensors = [self.normalization.tensor(x.images), torch.from_numpy(self._side(side))]
        if y is not None:
            tensors.append(torch.from_numpy(np.asarray(y, np.float32)))
        return TensorDataset(*tensors)

    def fit(
        self,
        x_train: ImageSet,
        side_train: np.ndarray,
        y_train: np.ndarray,
        x_val: ImageSet,
        side_val: np.ndarray,
        y_val: np.ndarray,
    ) -> ImageDistinguisher:
        import lightning as L
        import torch
        from torch.utils.data import DataLoader

        from mia.distinguisher_module import DistinguisherModule
        from mia.image_module import ImageLossDistinguisher
        from panoramia.data.image_module import Normalization
        from panoramia.models.training import TrainingConfig, make_trainer

        self.normalization = Normalization.of(x_train.images)
        features = loss_features(side_train)
        self.side_mean = features.mean(axis=0)
        self.side_std = np.maximum(features.std(axis=0), 1e-6).astype(np.float32)
        L.seed_everything(self.seed, workers=True, verbose=False)
        network = ImageLossDistinguisher(
            x_train.shape[2], features.shape[1], self.config.width, self.config.hidden
        )
        module = DistinguisherModule(
            network, learning_rate=self.config.learning_rate,
            weight_decay=self.config.weight_decay, thresholds=self.config.selection_thresholds,
            confidence=self.config.selection_confidence,
        )  # fmt: skip
        loader_options = {
            "num_workers": self.config.num_workers,
            "pin_memory": torch.cuda.is_available(),
        }
        train = DataLoader(
            self._dataset(x_train, side_train, y_train), batch_size=self.config.batch_size,
            shuffle=True, generator=torch.Generator().manual_seed(self.seed), **loader_options,
        )  # fmt: skip
        val = DataLoader(self._dataset(x_val, side_val, y_val), batch_size=1024, **loader_options)
        training = TrainingConfig(
            epochs=self.config.epochs, seed=self.seed, accelerator=self.config.accelerator,
            devices=self.config.devices, precision=self.config.precision,
        )  # fmt: skip
        make_trainer(training, validate=True).fit(module, train, val)
        if module.best_state is not None:
            network.load_state_dict(module.best_state)
        self.model = network.cpu().float().eval()
        self.candidates = [
            CandidateRecord({"epoch": epoch + 1}, bound)
            for epoch, bound in enumerate(module.epoch_bounds)
        ]
        return self

    def score(self, x: ImageSet, side: np.ndarray) -> np.ndarray:
        """P(member) of each image given its loss, float64 of shape (n,)."""
        import torch

        assert self.model is not None
        images, features = self._dataset(x, side).tensors
        with torch.no_grad():
            logits = [
                self.model(images[i : i + SCORE_BATCH], features[i : i + SCORE_BATCH])
                for i in range(0, len(images), SCORE_BATCH)
            ]
        return torch.sigmoid(torch.cat(logits).double()).numpy()

    @property
    def chosen(self) -> CandidateRecord:
        """The first epoch with the largest validation θ_lb (the weights that score)."""
        return max(self.candidates, key=lambda c: c.validation_theta_lb)
