"""Training a classifier with Lightning (CPU or GPU): the demo targets and the helper model.

``fit_classifier`` trains any ``nn.Module`` that maps a feature tensor to class logits with
cross-entropy (Adam, or SGD with momentum and a cosine schedule), optionally keeping the epoch
with the lowest validation loss. ``make_trainer`` is the one place that turns the device
settings (accelerator, devices, strategy, precision) into a Lightning ``Trainer``.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingConfig:
    epochs: int = 10
    batch_size: int = 256
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 0
    accelerator: str = "auto"
    devices: int | str = "auto"
    strategy: str = "auto"
    """Lightning strategy (``ddp`` for several GPUs)."""
    precision: str | None = None
    """None: 32-true on CPU, bf16-mixed on CUDA."""
    optimizer: str = "adam"
    """``adam``, or ``sgd`` (momentum 0.9, Nesterov, cosine learning rate over the epochs)."""
    select_best_on_validation: bool = False
    """Keep the weights of the epoch with the lowest validation loss (helper models)."""


class ClassifierModule(L.LightningModule):
    """Cross-entropy classification of (features, label) batches."""

    def __init__(
        self,
        model: nn.Module,
        learning_rate: float,
        weight_decay: float,
        optimizer: str = "adam",
    ) -> None:
        super().__init__()
        self.model = model
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.best_val_loss = float("inf")
        self.best_state: dict[str, torch.Tensor] | None = None
        self._val_losses: list[torch.Tensor] = []

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        features, labels = batch
        loss = nn.functional.cross_entropy(self.model(features), labels)
        self.log("train_loss", loss, prog_bar=True, on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        features, labels = batch
        losses = nn.functional.cross_entropy(self.model(features), labels, reduction="none")
        self._val_losses.append(losses.detach().float())

    def on_validation_epoch_end(self) -> None:
        val_loss = torch.cat(self._val_losses).mean()
        self._val_losses.clear()
        self.log("val_loss", val_loss, prog_bar=True)
        if not self.trainer.sanity_checking and float(val_loss) < self.best_val_loss:
            self.best_val_loss = float(val_loss)
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def configure_optimizers(self) -> object:
        parameters = self.model.parameters()
        if self.optimizer == "adam":
            return torch.optim.Adam(
                parameters, lr=self.learning_rate, weight_decay=self.weight_decay
            )
        if self.optimizer != "sgd":
            raise ValueError(f"optimizer {self.optimizer!r} is not adam or sgd")
        sgd = torch.optim.SGD(
            parameters, lr=self.learning_rate, momentum=0.9, nesterov=True,
            weight_decay=self.weight_decay,
        )  # fmt: skip
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(sgd, T_max=self.trainer.max_epochs)
        return {"optimizer": sgd, "lr_scheduler": cosine}


def _loader(
    data: tuple[np.ndarray, np.ndarray], batch: int, generator: torch.Generator | None = None
) -> DataLoader:
    """Shuffled (when ``generator`` is given) batches of (features, labels)."""
    dataset = TensorDataset(torch.from_numpy(data[0]), torch.from_numpy(data[1]))
    return DataLoader(
        dataset,
        batch_size=batch,
        shuffle=generator is not None,
        generator=generator,
        pin_memory=torch.cuda.is_available(),
    )


def _quiet_lightning() -> None:
    """Keep Lightning's tips and notices in the log file, not on the console."""
    for name in ("lightning.pytorch", "lightning.fabric", "lightning.pytorch.utilities.rank_zero"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*no `val_dataloader`.*")


def default_precision(precision: str | None) -> str:
    """``precision``, else bf16-mixed on CUDA (16-mixed where bf16 is missing), else 32-true."""
    if precision:
        return precision
    if not torch.cuda.is_available():
        return "32-true"
    return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"


def make_trainer(
    config: TrainingConfig, *, validate: bool, callbacks: list | None = None
) -> L.Trainer:
    """A quiet, deterministic Trainer on the configured devices (no logger or checkpoints)."""
    _quiet_lightning()
    return L.Trainer(
        max_epochs=config.epochs,
        accelerator=config.accelerator,
        devices=config.devices,
        strategy=config.strategy,
        precision=default_precision(config.precision),
        deterministic=True,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=1.0 if validate else 0,
        callbacks=callbacks,
    )


def fit_classifier(
    model: nn.Module,
    train: tuple[np.ndarray, np.ndarray],
    config: TrainingConfig,
    validation: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[nn.Module, dict[str, float]]:
    """Train ``model`` on (float32 features, int64 labels); returns it on the CPU and metrics."""
    train_loader = _loader(train, config.batch_size, torch.Generator().manual_seed(config.seed))
    val_loader = _loader(validation, 4096) if validation is not None else None
    return _fit(model, config, validation is not None, train_loader, val_loader)


def fit_classifier_on(
    model: nn.Module, datamodule: L.LightningDataModule, config: TrainingConfig, *, validate: bool
) -> tuple[nn.Module, dict[str, float]]:
    """Train ``model`` on a DataModule's batches (image data with augmentation)."""
    return _fit(model, config, validate, datamodule=datamodule)


def _fit(
    model: nn.Module,
    config: TrainingConfig,
    validate: bool,
    train_loader: DataLoader | None = None,
    val_loader: DataLoader | None = None,
    datamodule: L.LightningDataModule | None = None,
) -> tuple[nn.Module, dict[str, float]]:
    L.seed_everything(config.seed, workers=True, verbose=False)
    module = ClassifierModule(model, config.learning_rate, config.weight_decay, config.optimizer)
    trainer = make_trainer(config, validate=validate)
    if datamodule is not None:
        trainer.fit(module, datamodule=datamodule)
    else:
        trainer.fit(module, train_loader, val_loader)
    if config.select_best_on_validation and module.best_state is not None:
        model.load_state_dict(module.best_state)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    if validate:
        metrics["best_val_loss"] = module.best_val_loss
    return model.cpu().eval(), metrics
