"""Training image classifiers into target directories (demo targets, the labeler, the helper h).

A directory written here holds ``model.safetensors`` and ``target.json`` (format
``torch-safetensors``, ``"modality": "image"``, the import path and keyword arguments of the
network, and the per-channel normalisation); :func:`panoramia.targets.load_target` opens it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from panoramia.audit_settings import Optimizer
from panoramia.devices import inference_device
from panoramia.errors import InputError
from panoramia.modalities.image.images import ImageSet
from panoramia.modalities.image.settings import Augmentation, ImageArch
from panoramia.models.device_settings import DeviceSettings
from panoramia.setting_bounds import BELOW_ONE, COUNT, RATE, Limit, Range, ranged
from panoramia.targets.manifest import MANIFEST


@dataclass
class ImageModelConfig(DeviceSettings):
    """A network of ``panoramia.modalities.image.nets`` and how Lightning trains it."""

    arch: str = ImageArch.CNN.value
    """``cnn`` (SmallCNN) or ``resnet`` (pre-activation ResNet; WRN with ``widen``)."""
    width: int = ranged(32, COUNT, limit=Limit.WIDTH)
    blocks: int = ranged(1, COUNT)
    """resnet: residual blocks per stage (4 with widen=10: WRN-28-10)."""
    widen: int = ranged(1, COUNT)
    dropout: float = ranged(0.0, BELOW_ONE)
    epochs: int = ranged(10, COUNT, limit=Limit.EPOCHS)
    batch_size: int = ranged(128, COUNT)
    learning_rate: float = ranged(1e-3, RATE)
    weight_decay: float = ranged(0.0, Range(0, 10))
    optimizer: str = Optimizer.ADAM.value
    augment: str = Augmentation.NONE.value
    """``none``, ``crop`` (random shifts) or ``crop_flip`` (and horizontal flips)."""


def network_kwargs(config: ImageModelConfig, *, channels: int, n_classes: int) -> dict:
    """Keyword arguments of the network that ``config.arch`` names (stored in target.json)."""
    if config.arch == "cnn":
        return {"in_channels": channels, "n_classes": n_classes, "width": config.width}
    if config.arch == "resnet":
        return {
            "in_channels": channels, "n_classes": n_classes, "blocks": config.blocks,
            "width": config.width, "widen": config.widen, "dropout": config.dropout,
        }  # fmt: skip
    raise InputError(f"arch: {config.arch!r} is not cnn or resnet")


def train_image_directory(
    train: ImageSet,
    config: ImageModelConfig,
    directory: Path,
    *,
    seed: int,
    n_classes: int,
    validation: ImageSet | None = None,
    holdout: ImageSet | None = None,
    callbacks: list | None = None,
) -> dict[str, float]:
    """Train ``config``'s network on ``train`` and save it as an image target directory.

    With ``validation``, the epoch with the lowest validation loss is kept. Returns training
    metrics: final losses, and accuracy / mean loss on the training set and on ``holdout``
    (images the model never saw) when given. ``callbacks`` join the trainer's.
    """
    import torch
    from safetensors.torch import save_file

    from panoramia.modalities.image.image_module import ImageDataModule, Normalization
    from panoramia.modalities.image.nets import ARCHITECTURES
    from panoramia.models.training import TrainingConfig, fit_classifier_on
    from panoramia.targets import load_target
    from panoramia.targets.trust import import_model_class

    kwargs = network_kwargs(config, channels=train.shape[2], n_classes=n_classes)
    normalization = Normalization.of(train.images)
    data = ImageDataModule(
        train, validation, normalization=normalization, batch_size=config.batch_size,
        augment=config.augment, num_workers=config.num_workers, seed=seed,
    )  # fmt: skip
    training = TrainingConfig(
        epochs=config.epochs, batch_size=config.batch_size, learning_rate=config.learning_rate,
        weight_decay=config.weight_decay, seed=seed, **config.trainer_settings(),
        optimizer=config.optimizer, select_best_on_validation=validation is not None,
    )  # fmt: skip
    torch.manual_seed(seed)  # initial weights follow the seed too
    model = import_model_class(ARCHITECTURES[config.arch])(**kwargs)  # image_nets: trusted
    model, metrics = fit_classifier_on(
        model, data, training, validate=validation is not None, callbacks=callbacks
    )
    directory.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()}, directory / "model.safetensors"
    )
    manifest = {
        "format": "torch-safetensors",
        "modality": "image",
        "module": ARCHITECTURES[config.arch],
        "kwargs": kwargs,
        "weights": "model.safetensors",
        "normalization": normalization.to_dict(),
        "input": dict(zip(("height", "width", "channels"), train.shape, strict=True)),
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1))
    target = load_target(directory, device=inference_device(config.accelerator, config.devices))
    for name, images in (("train", train), ("holdout", holdout)):
        if images is not None:
            metrics.update(_evaluate(target, images, name))
    return metrics


def _evaluate(target: object, images: ImageSet, name: str) -> dict[str, float]:
    predictions = target.logits(images.images).argmax(axis=1)  # type: ignore[attr-defined]
    return {
        f"{name}_accuracy": round(float(np.mean(predictions == images.labels)), 5),
        f"{name}_loss": round(float(target.per_example_loss(images).mean()), 5),  # type: ignore[attr-defined]
    }
