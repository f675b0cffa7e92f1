"""The image distinguisher's network: CNN branch + loss branch + stacking head.

The image branch (conv blocks, global pooling) embeds the image; the loss branch (an MLP)
embeds the per-example loss features of f or h; the stacking head maps both embeddings to one
logit of "member". :class:`panoramia.mia.distinguisher_module.DistinguisherModule` trains it.
"""

from __future__ import annotations

import torch
from torch import nn


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
