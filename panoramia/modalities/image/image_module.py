"""Images for torch: normalisation, augmentation on the device, and a Lightning DataModule.

Images enter as uint8 (N, H, W, C) and leave as float32 (N, C, H, W) normalised per channel
with a :class:`Normalization` (stored in every image target's manifest, so losses are
computed on exactly the inputs the model was trained on). Augmentation (random shifts by
zero-padded crops, optional horizontal flips) runs on whole batches after the transfer to the
device, so it costs the GPU, not the dataloader workers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from panoramia.modalities.image.images import AUGMENTATIONS, ImageSet


@dataclass(frozen=True)
class Normalization:
    """Per-channel mean and standard deviation of pixel values scaled to [0, 1]."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def of(cls, images: np.ndarray) -> Normalization:
        """Statistics of uint8 (N, H, W, C) ``images``."""
        scaled = images.reshape(-1, images.shape[-1]).astype(np.float64) / 255.0
        std = np.maximum(scaled.std(axis=0), 1e-3)
        return cls(tuple(float(x) for x in scaled.mean(axis=0)), tuple(float(x) for x in std))

    @classmethod
    def from_dict(cls, body: dict) -> Normalization:
        return cls(tuple(map(float, body["mean"])), tuple(map(float, body["std"])))

    def to_dict(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in asdict(self).items()}

    def tensor(self, images: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 (N, H, W, C) → normalised float32 (N, C, H, W), on the tensor's device."""
        if not isinstance(images, torch.Tensor):
            images = torch.from_numpy(np.ascontiguousarray(images))
        x = images.permute(0, 3, 1, 2).float() / 255.0
        mean = torch.tensor(self.mean, device=x.device).view(1, -1, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(1, -1, 1, 1)
        return (x - mean) / std


def augment_batch(
    images: torch.Tensor, kind: str, generator: torch.Generator, *, padding: int = 2
) -> torch.Tensor:
    """Random crops of the zero-padded (B, C, H, W) batch (shifts of up to ``padding``
    pixels), plus random horizontal flips for ``crop_flip``. Randomness comes from the CPU
    ``generator`` so that a run is reproducible on any device."""
    if kind == "none":
        return images
    if kind not in AUGMENTATIONS:
        raise ValueError(f"augmentation {kind!r} is not one of {AUGMENTATIONS}")
    b, _, h, w = images.shape
    padded = torch.nn.functional.pad(images, (padding,) * 4)
    shifts = torch.randint(0, 2 * padding + 1, (2, b), generator=generator).to(images.device)
    rows = (shifts[0][:, None] + torch.arange(h, device=images.device))[:, :, None]
    cols = (shifts[1][:, None] + torch.arange(w, device=images.device))[:, None, :]
    batch = torch.arange(b, device=images.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows, cols].permute(0, 3, 1, 2)
    if kind == "crop_flip":
        flip = (torch.rand(b, generator=generator) < 0.5).to(images.device)
        out = torch.where(flip[:, None, None, None], out.flip(-1), out)
    return out.contiguous()


class ImageDataModule(L.LightningDataModule):
    """Batches of (normalised images, int64 labels) for training and validation."""

    def __init__(
        self,
        train: ImageSet,
        validation: ImageSet | None,
        *,
        normalization: Normalization,
        batch_size: int,
        augment: str = "none",
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.train_set = train
        self.validation_set = validation
        self.normalization = normalization
        self.batch_size = batch_size
        self.augment = augment
        self.num_workers = num_workers
        self.seed = seed
        self._augment_generator = torch.Generator().manual_seed(seed)

    def _loader(self, images: ImageSet, *, shuffle: bool) -> DataLoader:
        dataset = TensorDataset(
            self.normalization.tensor(images.images), torch.from_numpy(images.labels)
        )
        return DataLoader(
            dataset,
            batch_size=self.batch_size if shuffle else max(self.batch_size, 1024),
            shuffle=shuffle,
            generator=torch.Generator().manual_seed(self.seed) if shuffle else None,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_set, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        assert self.validation_set is not None
        return self._loader(self.validation_set, shuffle=False)

    def on_after_batch_transfer(self, batch: tuple, dataloader_idx: int) -> tuple:
        images, labels = batch
        if self.trainer is not None and self.trainer.training and self.augment != "none":
            images = augment_batch(images, self.augment, self._augment_generator)
        if images.is_cuda:  # the layout the network's weights have there (channels_last_on_cuda)
            images = images.contiguous(memory_format=torch.channels_last)
        return images, labels
