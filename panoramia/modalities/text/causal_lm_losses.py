"""Per-token losses of a causal LM, shared by the text target adapter (what the audit
measures) and the LM training (its validation loss): one definition of the loss on both sides."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

LOSS_BATCH = 256
"""Chunks per forward pass when computing losses."""


def quiet_transformers() -> None:
    """No weight-loading bars or config notices on the console (stage progress stays readable)."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()


def sequence_losses(model: PreTrainedModel, tokens: torch.Tensor) -> torch.Tensor:
    """Per-token next-token cross-entropy (nats), shape (B, L−1): token t+1 given tokens ≤ t."""
    import torch

    logits = model(input_ids=tokens).logits[:, :-1].float()
    return torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), tokens[:, 1:], reduction="none"
    )


def token_losses(model: PreTrainedModel, tokens: np.ndarray, *, batch: int = LOSS_BATCH):
    """float64 (N, L−1) per-token losses of int token ids (N, L), on the model's device."""
    import torch

    from panoramia.devices import forward_passes, to_device

    device = next(model.parameters()).device
    model.eval()
    parts = []
    with forward_passes(device):  # float32 losses from the logits, bf16 autocast on CUDA
        for start in range(0, len(tokens), batch):
            chunk = to_device(tokens[start : start + batch], device)
            parts.append(sequence_losses(model, chunk).double().cpu())
    if not parts:
        return np.zeros((0, max(0, tokens.shape[1] - 1)))
    return torch.cat(parts).numpy()
