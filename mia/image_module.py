"""The image distinguisher as a Lightning module: CNN branch + loss branch + stacking head.

The image branch (conv blocks, global pooling) embeds the image; the loss branch (an MLP)
embeds the per-example loss features of f or h; the stacking head maps both embeddings to one
logit of "member". After every validation epoch the module scores the validation split and
rates it by the validation lower bound (:func:`mia.selection.validation_lower_bound`); the
weights of the best epoch are kept (checkpoint selection never sees the audit set).
"""

from __future__ import annotations

import lightning as L
import numpy as np
import torch
from torch import nn

from mia.selection import validation_lower_bound


class ImageLossDistinguisher(nn.Module):
    """(images (B, C, H, W), loss features (B, F)) → member logits (B,)."""

    def __init__(self, channels: int, n_side: int, width: int = 16, hidden: int = 32) -> None:
        super().__init__()
        self.image_branch = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.loss_branch = nn.Sequential(
            nn.Linear(n_side, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.stack = nn.Sequential(
            nn.Linear(2 * width + hidden, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, 1)
        )

    def forward(self, images: torch.Tensor, side: torch.Tensor) -> torch.Tensor:
        joint = torch.cat([self.image_branch(images), self.loss_branch(side)], dim=1)
        return self.stack(joint).squeeze(1)


class DistinguisherModule(L.LightningModule):
    """Binary cross-entropy training; keeps the epoch with the best validation θ_lb."""

    def __init__(
        self,
        model: ImageLossDistinguisher,
        *,
        learning_rate: float,
        weight_decay: float,
        thresholds: str,
        confidence: float,
    ) -> None:
        super().__init__()
        self.model = model
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.thresholds = thresholds
        self.confidence = confidence
        self.epoch_bounds: list[float] = []
        self.best_state: dict[str, torch.Tensor] | None = None
        self._scores: list[torch.Tensor] = []
        self._labels: list[torch.Tensor] = []

    def training_step(self, batch: tuple[torch.Tensor, ...], _: int) -> torch.Tensor:
        images, side, labels = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self.model(images, side), labels)
        self.log("train_bce", loss, prog_bar=True, on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, ...], _: int) -> None:
        images, side, labels = batch
        self._scores.append(torch.sigmoid(self.model(images, side).float()).detach().cpu())
        self._labels.append(labels.detach().cpu())

    def on_validation_epoch_end(self) -> None:
        scores = torch.cat(self._scores).double().numpy()
        labels = torch.cat(self._labels).numpy().astype(np.int8)
        self._scores.clear()
        self._labels.clear()
        bound = validation_lower_bound(
            scores, labels, thresholds=self.thresholds, confidence=self.confidence
        )
        self.log("val_theta_lb", bound, prog_bar=True)
        self.epoch_bounds.append(bound)
        if bound > max(self.epoch_bounds[:-1], default=-np.inf):
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(
            self.model.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay
        )
