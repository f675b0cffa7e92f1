"""Image classifiers in plain torch (no torchvision): the demo targets, h, and the paper's WRN.

Every network maps normalised float images of shape (B, C, H, W) to class logits (B, K) and
is built from JSON-able keyword arguments, so a target directory can name it by import path.
Global average pooling makes each one accept any image size of at least 8×8.
"""

from __future__ import annotations

import torch
from torch import nn

from panoramia.modalities.image.settings import ImageArch


class SmallCNN(nn.Module):
    """Two conv blocks (conv-BN-ReLU ×2, max-pool) and a linear head; ~0.1 M parameters."""

    def __init__(self, in_channels: int = 1, n_classes: int = 10, width: int = 32) -> None:
        super().__init__()

        def block(c_in: int, c_out: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
                nn.ReLU(inplace=True),
                nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            )

        self.features = nn.Sequential(block(in_channels, width), block(width, 2 * width))
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, n_classes)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images))


class _Residual(nn.Module):
    """Pre-activation residual block (BN-ReLU-conv ×2), with dropout for wide networks."""

    def __init__(self, c_in: int, c_out: int, stride: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.shortcut = (
            nn.Conv2d(c_in, c_out, 1, stride, bias=False) if stride != 1 or c_in != c_out else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(x))
        shortcut = x if self.shortcut is None else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(self.dropout(torch.relu(self.bn2(out))))
        return out + shortcut


class ResNet(nn.Module):
    """CIFAR-style pre-activation (wide) ResNet: 3 stages of ``blocks`` residual blocks.

    ``ResNet(blocks=1, width=16)`` is the small demo ResNet (8 layers); ``blocks=4, width=16,
    widen=10`` is WRN-28-10 (the paper's CIFAR-10 target, 36.5 M parameters).
    """

    def __init__(
        self,
        in_channels: int = 3,
        n_classes: int = 10,
        blocks: int = 1,
        width: int = 16,
        widen: int = 1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        widths = [width * widen, 2 * width * widen, 4 * width * widen]
        layers: list[nn.Module] = [nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)]
        c_in = width
        for stage, c_out in enumerate(widths):
            for index in range(blocks):
                stride = 2 if stage > 0 and index == 0 else 1
                layers.append(_Residual(c_in, c_out, stride, dropout))
                c_in = c_out
        layers += [nn.BatchNorm2d(c_in), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1)]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c_in, n_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(images), 1))


ARCHITECTURES = {
    ImageArch.CNN.value: "panoramia.modalities.image.nets:SmallCNN",
    ImageArch.RESNET.value: "panoramia.modalities.image.nets:ResNet",
}
"""``target.arch`` / ``helper.arch`` names
(:class:`~panoramia.modalities.image.settings.ImageArch`) → import paths (stored in
target.json)."""
