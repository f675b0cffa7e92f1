"""Where and how Lightning runs a training: the settings every trainable model's config has.

Kept free of torch and Lightning imports: configs are built at start-up, before any training.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypedDict

from panoramia.setting_bounds import Limit, Range, ranged


@dataclass
class DeviceSettings:
    accelerator: str = "auto"
    devices: str = "auto"
    strategy: str = "auto"
    """Lightning strategy (``ddp`` for several GPUs)."""
    precision: str | None = None
    """None: 32-true on CPU, bf16-mixed on CUDA."""
    num_workers: int = ranged(0, Range(0, 256, integer=True), limit=Limit.THREADS)
    """DataLoader worker processes."""

    def device_settings(self) -> dict:
        """These settings alone, as keyword arguments (to give another config the same)."""
        return {field.name: getattr(self, field.name) for field in fields(DeviceSettings)}

    def trainer_settings(self) -> dict:
        """The keyword arguments of :class:`panoramia.models.training.TrainingConfig` these
        settings fill (all but ``num_workers``, which the data loaders take)."""
        settings = self.device_settings()
        del settings["num_workers"]
        return settings


class LoaderOptions(TypedDict):
    """What a training's DataLoaders take besides the data (``**options``)."""

    num_workers: int
    pin_memory: bool
