"""The paper's tabular target: an MLP with hidden layers 150-100-50-10 and ReLU."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class TabularMLP(nn.Module):
    """Maps encoded rows (batch, n_features) to class logits (batch, n_classes)."""

    def __init__(
        self, n_features: int, n_classes: int, hidden: Sequence[int] = (150, 100, 50, 10)
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = n_features
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, n_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)
