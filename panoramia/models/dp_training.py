"""DP-SGD training of a classifier with Lightning and Opacus (demo targets with a guarantee).

Opacus provides the per-sample gradients (``GradSampleModule``), their clipping and the
Gaussian noise (``DPOptimizer``), Poisson sampling of the batches (``DPDataLoader``) and the
noise multiplier σ that reaches a target (ε, δ) over the planned steps (its PRV accountant).
Lightning runs the loop. What actually ran (σ, the sampling rate q, the steps T, δ) is
returned as a :class:`DpSgdRun`, from which an audit fills the target's claimed guarantee.

``epsilon = inf`` trains the same recipe (Poisson batches, clipping) without noise: the
control that shows what the noise costs and buys.
"""

from __future__ import annotations

import math
from dataclasses import replace

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import TensorDataset

from panoramia.errors import InputError
from panoramia.models.dp_settings import DpSgdRun, DpSgdSettings
from panoramia.models.training import TrainingConfig, device_count, make_trainer


class DpClassifierModule(L.LightningModule):
    """Cross-entropy classification with per-sample gradients (Opacus' GradSampleModule)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        super().__init__()
        from opacus import GradSampleModule

        self.model = GradSampleModule(model, loss_reduction="mean")
        self._optimizer = optimizer

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        features, labels = batch
        logits = self.model(features)
        # Poisson batches may be empty: sum / max(n, 1) is the mean, and 0 on an empty batch.
        loss = nn.functional.cross_entropy(logits, labels, reduction="sum") / max(len(labels), 1)
        self.log("train_loss", loss, on_epoch=True, on_step=False, batch_size=max(len(labels), 1))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self._optimizer


def fit_classifier_dpsgd(
    model: nn.Module,
    train: tuple[np.ndarray, np.ndarray],
    config: TrainingConfig,
    settings: DpSgdSettings,
) -> tuple[nn.Module, dict[str, float], DpSgdRun]:
    """Train ``model`` on (float32 features (N, d), int64 labels (N,)) with DP-SGD: Poisson
    batches of expected size ``config.batch_size``, ``config.epochs`` epochs, Adam on the
    clipped, noised gradients. Returns the model (CPU, eval), metrics and the run's facts."""
    from opacus.accountants.utils import get_noise_multiplier
    from opacus.data_loader import DPDataLoader

    settings.check()
    size = len(train[1])
    if not 1 <= config.batch_size <= size:
        raise InputError(f"target.batch_size: must be in [1, {size}], got {config.batch_size}")
    sample_rate = config.batch_size / size
    L.seed_everything(config.seed, workers=True, verbose=False)
    dataset = TensorDataset(torch.from_numpy(train[0]), torch.from_numpy(train[1]))
    loader = DPDataLoader(
        dataset, sample_rate=sample_rate, generator=torch.Generator().manual_seed(config.seed)
    )
    steps = config.epochs * len(loader)
    if math.isinf(settings.epsilon):
        sigma = 0.0
    else:
        sigma = get_noise_multiplier(
            target_epsilon=settings.epsilon, target_delta=settings.delta,
            sample_rate=sample_rate, steps=steps, accountant="prv",
        )  # fmt: skip
    module = DpClassifierModule(model, _dp_optimizer(model, config, settings, sigma))
    # Per-sample gradients in float32: Opacus' clipping is not made for mixed precision.
    if device_count(config.accelerator, config.devices) > 1:  # Opacus' privacy engine is local
        raise InputError("target.devices: DP-SGD training runs on one device (set devices=1)")
    trainer = make_trainer(replace(config, precision="32-true"), validate=False)
    trainer.fit(module, loader)
    run = DpSgdRun(
        noise_multiplier=float(sigma), sample_rate=sample_rate, steps=steps,
        delta=settings.delta, max_grad_norm=settings.max_grad_norm,
        epsilon=_spent(sigma, sample_rate, steps, settings.delta), dataset_size=size,
    )  # fmt: skip
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    module.model._close()  # removes Opacus' hooks from ``model``
    return model.cpu().eval(), metrics, run


def _dp_optimizer(
    model: nn.Module, config: TrainingConfig, settings: DpSgdSettings, sigma: float
) -> torch.optim.Optimizer:
    from opacus.optimizers import DPOptimizer

    adam = torch.optim.Adam(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    return DPOptimizer(
        adam, noise_multiplier=sigma, max_grad_norm=settings.max_grad_norm,
        expected_batch_size=config.batch_size, loss_reduction="mean",
    )  # fmt: skip


def _spent(sigma: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε(δ) of T steps of the subsampled Gaussian (Opacus' PRV accountant); inf for σ = 0."""
    if sigma == 0:
        return math.inf
    from opacus.accountants import PRVAccountant

    accountant = PRVAccountant()
    accountant.history = [(sigma, sample_rate, steps)]
    return float(accountant.get_epsilon(delta=delta))
