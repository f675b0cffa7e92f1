"""What the network distinguishers (image, text) share, whatever their inputs.

A subclass says how examples become a tensor (``_inputs``), how losses become side features
(``side_features``) and builds its network; this base standardises the side features on the
training split, trains with :class:`panoramia.mia.distinguisher_module.DistinguisherModule` in one
or more phases (keeping the epoch with the best validation lower bound, recorded in ``candidates``),
and scores continuous probabilities of "member".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from panoramia.mia.selection import CandidateRecord
from panoramia.setting_bounds import COUNT, LEVEL, RATE, Limit, Range, ranged

if TYPE_CHECKING:
    from panoramia.models.device_settings import LoaderOptions

SIDE_STD_FLOOR = 1e-6
VALIDATION_BATCH = 1024


@dataclass
class NetworkDistinguisherConfig:
    """Training and selection settings every network distinguisher has; a subclass adds its
    architecture and epochs."""

    batch_size: int = ranged(64, COUNT)
    learning_rate: float = ranged(1e-3, RATE)
    weight_decay: float = ranged(1e-4, Range(0, 10))
    selection_thresholds: str = ranged("grid:100", limit=Limit.THRESHOLDS)
    selection_confidence: float = ranged(0.95, LEVEL)
    accelerator: str = "auto"
    devices: str = "1"
    """One device: the per-epoch selection scores the whole validation split in one process."""
    precision: str | None = None
    num_workers: int = ranged(0, Range(0, 256, integer=True), limit=Limit.THREADS)


class NetworkDistinguisher(ABC):
    """``fit(x_train, side_train, y_train, x_val, side_val, y_val)``, ``score(x, side)``,
    ``candidates``, ``chosen``; y: 1 = member, 0 = non-member."""

    score_batch: int = 4096

    def __init__(self, config: NetworkDistinguisherConfig, *, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.model = None
        self.side_mean: np.ndarray | None = None
        self.side_std: np.ndarray | None = None
        self.candidates: list[CandidateRecord] = []

    @staticmethod
    @abstractmethod
    def side_features(losses: np.ndarray) -> np.ndarray:
        """float32 (n, F) features of the losses (before standardisation)."""

    @abstractmethod
    def _inputs(self, x: Any):  # -> torch.Tensor
        """The network's first input for examples ``x``."""

    def features_of(self, x: Any, side: np.ndarray) -> np.ndarray:
        """float32 (n, F) side features of examples ``x`` with losses ``side`` (before
        standardisation): :meth:`side_features` of the losses; a subclass may add columns read
        off the examples themselves (text's blind column)."""
        return self.side_features(side)

    def _prepare(self, x_train: Any, side_train: np.ndarray) -> int:
        """Standardise side features on the training split and seed everything; returns F."""
        import lightning as L

        features = self.features_of(x_train, side_train)
        self.side_mean = features.mean(axis=0)
        self.side_std = np.maximum(features.std(axis=0), SIDE_STD_FLOOR).astype(np.float32)
        L.seed_everything(self.seed, workers=True, verbose=False)
        return int(features.shape[1])

    def _dataset(self, x: Any, side: np.ndarray, y: np.ndarray | None = None):
        import torch
        from torch.utils.data import TensorDataset

        assert self.side_mean is not None
        assert self.side_std is not None
        standardised = (self.features_of(x, side) - self.side_mean) / self.side_std
        tensors = [self._inputs(x), torch.from_numpy(standardised)]
        if y is not None:
            tensors.append(torch.from_numpy(np.asarray(y, np.float32)))
        return TensorDataset(*tensors)

    def _train(
        self,
        network,  # torch.nn.Module: (inputs, side) -> member logits
        train: tuple[Any, np.ndarray, np.ndarray],
        validation: tuple[Any, np.ndarray, np.ndarray],
        phases: list[tuple[dict, int, list]],
    ) -> None:
        """Train ``network`` phase after phase, then keep its best epoch as ``self.model``.

        ``phases``: (label, epochs, frozen parameters); a phase of 0 epochs is skipped, and
        each epoch's candidate record holds ``{**label, "epoch": n}`` (n counted per phase).
        """
        import torch
        from torch.utils.data import DataLoader

        from panoramia.errors import InputError
        from panoramia.mia.distinguisher_module import DistinguisherModule
        from panoramia.models.training import TrainingConfig, device_count, make_trainer

        config = self.config
        module = DistinguisherModule(
            network, learning_rate=config.learning_rate, weight_decay=config.weight_decay,
            thresholds=config.selection_thresholds, confidence=config.selection_confidence,
        )  # fmt: skip
        options: LoaderOptions = {
            "num_workers": config.num_workers,
            "pin_memory": torch.cuda.is_available(),
        }
        train_loader = DataLoader(
            self._dataset(*train), batch_size=config.batch_size, shuffle=True,
            generator=torch.Generator().manual_seed(self.seed), **options,
        )  # fmt: skip
        val_loader = DataLoader(self._dataset(*validation), batch_size=VALIDATION_BATCH, **options)
        for label, epochs, frozen in phases:
            if epochs <= 0:
                continue
            for parameter in network.parameters():
                parameter.requires_grad_(True)
            for parameter in frozen:
                parameter.requires_grad_(False)
            training = TrainingConfig(
                epochs=epochs, seed=self.seed, accelerator=config.accelerator,
                devices=config.devices, precision=config.precision,
            )  # fmt: skip
            if device_count(training.accelerator, training.devices) > 1:
                raise InputError(
                    "distinguisher.devices: a distinguisher trains on one device (its epoch "
                    "is chosen on the whole validation split in one process)"
                )
            before = len(module.epoch_bounds)
            make_trainer(training, validate=True).fit(module, train_loader, val_loader)
            self.candidates += [
                CandidateRecord({**label, "epoch": epoch + 1}, bound)
                for epoch, bound in enumerate(module.epoch_bounds[before:])
            ]
        if module.best_state is not None:
            network.load_state_dict(module.best_state)
        self.model = network.cpu().float().eval()

    def score(self, x: Any, side: np.ndarray) -> np.ndarray:
        """P(member) of each example given its side losses, float64 of shape (n,)."""
        import torch

        assert self.model is not None
        inputs, features = self._dataset(x, side).tensors
        step = self.score_batch
        with torch.no_grad():
            logits = [
                self.model(inputs[i : i + step], features[i : i + step])
                for i in range(0, len(inputs), step)
            ]
        return torch.sigmoid(torch.cat(logits).double()).numpy()

    @property
    def chosen(self) -> CandidateRecord:
        """The first epoch with the largest validation θ_lb (the weights that score)."""
        return max(self.candidates, key=lambda c: c.validation_theta_lb)
