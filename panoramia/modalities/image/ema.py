"""The exponential moving average of a network's weights (the weights generators sample with)."""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def update_ema(average: nn.Module, current: nn.Module, decay: float) -> None:
    """average ← decay·average + (1 − decay)·current, parameter by parameter and for floating
    buffers (batch-norm statistics); integer buffers (batch counts) are copied."""
    means, values = [], []
    for mean, value in zip(
        average.state_dict().values(), current.state_dict().values(), strict=True
    ):
        if mean.dtype.is_floating_point:
            means.append(mean)
            values.append(value)
        else:
            mean.copy_(value)
    if means:  # one fused multi-tensor update, not one small kernel per parameter (GPU)
        torch._foreach_lerp_(means, values, 1.0 - decay)
