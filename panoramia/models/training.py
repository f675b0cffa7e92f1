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
from typing import TYPE_CHECKING

import lightning as L
import numpy as np
import torch
from lightning.pytorch.plugins.environments import LightningEnvironment
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from panoramia.devices import listed_devices
from panoramia.errors import InputError

if TYPE_CHECKING:
    from lightning.pytorch.utilities.types import OptimizerLRSchedulerConfig

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
    deterministic: bool = True
    """Deterministic kernels (Lightning's ``deterministic``): the same seed gives the same
    weights on the same device. False lets cuDNN pick its fastest (non-deterministic)
    convolution algorithms on a GPU."""


class BestEpochModule(L.LightningModule):
    """A module that keeps the weights of its epoch with the lowest validation loss.

    The validation loss is synced over every device (sum and count all-reduced), so each rank
    picks the same epoch. At the end of ``fit`` the kept weights are loaded into ``self.model``
    (when ``keep_best``) and ``best_val_loss`` joins the trainer's metrics: both survive the
    return from spawned ranks (Lightning hands rank 0's weights and metrics back to the main
    process), so the caller never reads ``best_state`` itself.
    """

    model: nn.Module
    """The network trained (a subclass sets it)."""

    def __init__(self, keep_best: bool = True) -> None:
        super().__init__()
        self.keep_best = keep_best
        self.best_val_loss = float("inf")
        self.best_state: dict[str, torch.Tensor] | None = None
        self._val_losses: list[torch.Tensor] = []

    def synced_mean(self, losses: list[torch.Tensor]) -> torch.Tensor:
        """The mean of every device's ``losses`` (float32)."""
        local = torch.cat(losses).float() if losses else torch.zeros(0, device=self.device)
        totals = torch.stack([local.sum(), torch.tensor(float(local.numel()), device=local.device)])
        totals = self.trainer.strategy.reduce(totals, reduce_op="sum")
        return totals[0] / totals[1].clamp_min(1.0)

    def on_validation_epoch_end(self) -> None:
        val_loss = self.synced_mean(self._val_losses)
        self._val_losses.clear()
        self.log("val_loss", val_loss, prog_bar=True, sync_dist=True)  # equal on every rank
        if not self.trainer.sanity_checking and float(val_loss) < self.best_val_loss:
            self.best_val_loss = float(val_loss)
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def on_fit_end(self) -> None:
        if self.keep_best and self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        if self.best_val_loss < float("inf"):
            self.trainer.callback_metrics["best_val_loss"] = torch.tensor(self.best_val_loss)


def channels_last_on_cuda(module: L.LightningModule, network: nn.Module) -> None:
    """Convolution weights in channels-last memory when ``module`` trains on CUDA (the layout
    the GPU's tensor cores read without transposes); call it from ``configure_model``, which
    runs before the strategy moves the module to its device (``.to`` keeps the layout) and
    before data-parallel wrapping. A no-op on the CPU and for networks without 4-D weights."""
    if module.trainer.strategy.root_device.type == "cuda":
        # torch's Module.to stub lacks memory_format
        network.to(memory_format=torch.channels_last)  # type: ignore[call-overload]


class ClassifierModule(BestEpochModule):
    """Cross-entropy classification of (features, label) batches."""

    def __init__(
        self,
        model: nn.Module,
        learning_rate: float,
        weight_decay: float,
        optimizer: str = "adam",
        keep_best: bool = False,
    ) -> None:
        super().__init__(keep_best)
        self.model = model
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.optimizer = optimizer

    def configure_model(self) -> None:
        channels_last_on_cuda(self, self.model)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        features, labels = batch
        loss = nn.functional.cross_entropy(self.model(features), labels)
        self.log("train_loss", loss, prog_bar=True, on_epoch=True, on_step=False, sync_dist=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        features, labels = batch
        losses = nn.functional.cross_entropy(self.model(features), labels, reduction="none")
        self._val_losses.append(losses.detach().float())

    def configure_optimizers(self) -> torch.optim.Optimizer | OptimizerLRSchedulerConfig:
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
        assert self.trainer.max_epochs is not None  # make_trainer sets it
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(sgd, T_max=self.trainer.max_epochs)
        return {"optimizer": sgd, "lr_scheduler": cosine}


def _loader(
    data: tuple[np.ndarray, np.ndarray], batch: int, generator: torch.Generator | None = None
) -> DataLoader:
    """Shuffled (when ``generator`` is given) batches of (features, labels)."""
    # torch-owned copies: a spawned rank receives tensors through shared memory, which a
    # numpy-backed storage cannot be moved to
    dataset = TensorDataset(torch.tensor(data[0]), torch.tensor(data[1]))
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


class SpawnedRanks(L.Callback):
    """What a spawned rank needs besides its data: this process's thread count (part of every
    stage key; Lightning would give each rank cpu_count / ranks threads), and, at the end of
    ``fit``, leaving the process group (barrier, then destroy) — a rank that exits with gloo's
    threads still running aborts ("terminate called without an active exception")."""

    def __init__(self) -> None:
        self.threads = torch.get_num_threads()

    def setup(self, trainer: L.Trainer, _module: L.LightningModule, stage: str) -> None:
        torch.set_num_threads(self.threads)

    def on_fit_end(self, trainer: L.Trainer, _module: L.LightningModule) -> None:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.barrier()
            torch.distributed.destroy_process_group()


def device_count(accelerator: str, devices: int | str | list) -> int:
    """How many devices Lightning will train on for these settings (``auto``: every GPU where
    CUDA is present and the accelerator allows it, else one CPU process)."""
    ids = listed_devices(devices)
    if ids is not None:
        return len(ids)
    text = str(devices).strip()
    gpu = accelerator in ("gpu", "cuda") or (accelerator == "auto" and torch.cuda.is_available())
    if text in ("auto", "-1"):
        return max(torch.cuda.device_count(), 1) if gpu else 1
    if not text.isdigit() or int(text) < 1:
        raise InputError(
            f"devices: {devices!r} is not a count ≥ 1, -1, auto or a list of device ids"
        )
    return int(text)


ONE_PROCESS_STRATEGIES = ("auto", "ddp", "ddp_spawn")
"""Strategies an audit accepts: several devices always train as ``ddp_spawn``."""


def parallel_strategy(config: TrainingConfig) -> str:
    """The Lightning strategy for these settings: with several devices, ``ddp_spawn`` — the
    ranks are processes started for ``fit`` alone, and rank 0's weights and metrics come back
    to the calling process, so the rest of the audit runs once (``ddp``, Lightning's default
    for several devices, would re-run the whole command in every rank). Other multi-device
    strategies are refused (InputError)."""
    several = device_count(config.accelerator, config.devices) > 1
    if not several:
        return "auto" if config.strategy in ONE_PROCESS_STRATEGIES else config.strategy
    if config.strategy not in ONE_PROCESS_STRATEGIES:
        raise InputError(
            f"strategy {config.strategy!r}: with several devices an audit trains with ddp "
            "(run as ddp_spawn, so that each stage runs once); use strategy=ddp or auto"
        )
    return "ddp_spawn"


def make_trainer(
    config: TrainingConfig, *, validate: bool, callbacks: list | None = None
) -> L.Trainer:
    """A quiet, deterministic Trainer on the configured devices (no logger or checkpoints);
    several devices train as ``ddp_spawn`` (:func:`parallel_strategy`)."""
    _quiet_lightning()
    if _several(config):
        # tensors reach spawned ranks through shared-memory files: passing their descriptors
        # fails here ("unable to resize file"), and file names work wherever /dev/shm does
        torch.multiprocessing.set_sharing_strategy("file_system")
    return L.Trainer(
        max_epochs=config.epochs,
        accelerator=config.accelerator,
        devices=config.devices,
        strategy=parallel_strategy(config),
        # a configured string, which Lightning checks; its type lists the literal values
        precision=default_precision(config.precision),  # type: ignore[arg-type]
        deterministic=config.deterministic,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=False if _several(config) else None,
        num_sanity_val_steps=0,
        limit_val_batches=1.0 if validate else 0,
        callbacks=[
            *(callbacks or []),
            *([SpawnedRanks()] if _several(config) else [progress_bar()]),
        ],
        # the ranks are this machine's processes, whatever cluster runs the job (under SLURM,
        # Lightning would otherwise expect one SLURM task per device)
        plugins=[LightningEnvironment()] if _several(config) else None,
    )


def progress_bar() -> L.Callback:
    """Lightning's epoch bars on stderr: they are progress, and stdout carries results (a run
    piped to a file keeps its verdict there, not the bars)."""
    from lightning.pytorch.callbacks import RichProgressBar

    return RichProgressBar(console_kwargs={"stderr": True})


def _several(config: TrainingConfig) -> bool:
    return device_count(config.accelerator, config.devices) > 1


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
    model: nn.Module,
    datamodule: L.LightningDataModule,
    config: TrainingConfig,
    *,
    validate: bool,
    callbacks: list[L.Callback] | None = None,
) -> tuple[nn.Module, dict[str, float]]:
    """Train ``model`` on a DataModule's batches (image data with augmentation); ``callbacks``
    join the trainer's (a benchmark's step timer)."""
    return _fit(model, config, validate, datamodule=datamodule, callbacks=callbacks)


def _fit(
    model: nn.Module,
    config: TrainingConfig,
    validate: bool,
    train_loader: DataLoader | None = None,
    val_loader: DataLoader | None = None,
    datamodule: L.LightningDataModule | None = None,
    callbacks: list[L.Callback] | None = None,
) -> tuple[nn.Module, dict[str, float]]:
    L.seed_everything(config.seed, workers=True, verbose=False)
    module = ClassifierModule(
        model, config.learning_rate, config.weight_decay, config.optimizer,
        keep_best=config.select_best_on_validation,
    )  # fmt: skip
    trainer = make_trainer(config, validate=validate, callbacks=callbacks)
    if datamodule is not None:
        trainer.fit(module, datamodule=datamodule)
    else:
        trainer.fit(module, train_loader, val_loader)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    return model.cpu().eval(), metrics
