"""The Lightning module that trains a causal LM (imported only when training: Lightning is slow
to import)."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from panoramia.modalities.text.causal_lm_losses import sequence_losses
from panoramia.models.training import BestEpochModule


class CausalLMModule(BestEpochModule):
    """Next-token cross-entropy on batches of token ids (B, T); AdamW.

    After every validation epoch the mean per-token validation loss (synced over devices) is
    logged and, when it is the lowest so far, the weights are kept; they are the model's at the
    end of ``fit`` (:class:`~panoramia.models.training.BestEpochModule`).
    """

    model: PreTrainedModel

    def __init__(self, model: PreTrainedModel, *, learning_rate: float, weight_decay: float):
        super().__init__(keep_best=True)
        self.model = model
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay

    def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
        (tokens,) = batch
        loss = self.model(input_ids=tokens, labels=tokens).loss
        self.log("train_loss", loss, prog_bar=True, on_epoch=True, on_step=False, sync_dist=True)
        return loss

    def validation_step(self, batch: list[torch.Tensor], _: int) -> None:
        (tokens,) = batch
        self._val_losses.append(sequence_losses(self.model, tokens).mean(dim=1).float())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        trained = [p for p in self.model.parameters() if p.requires_grad]  # a LoRA's alone
        return torch.optim.AdamW(trained, lr=self.learning_rate, weight_decay=self.weight_decay)
