"""The Lightning module that trains a causal LM (imported only when training: Lightning is slow
to import)."""

from __future__ import annotations

import lightning as L
import torch
from transformers import PreTrainedModel

from panoramia.targets.causal_lm_losses import sequence_losses


class CausalLMModule(L.LightningModule):
    """Next-token cross-entropy on batches of token ids (B, T); AdamW.

    After every validation epoch the mean per-token validation loss is logged and, when it is
    the lowest so far, the weights are copied into ``best_state``.
    """

    def __init__(self, model: PreTrainedModel, *, learning_rate: float, weight_decay: float):
        super().__init__()
        self.model = model
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.best_val_loss = float("inf")
        self.best_state: dict[str, torch.Tensor] | None = None
        self._val_losses: list[torch.Tensor] = []

    def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
        (tokens,) = batch
        loss = self.model(input_ids=tokens, labels=tokens).loss
        self.log("train_loss", loss, prog_bar=True, on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch: list[torch.Tensor], _: int) -> None:
        (tokens,) = batch
        self._val_losses.append(sequence_losses(self.model, tokens).mean(dim=1).float())

    def on_validation_epoch_end(self) -> None:
        val_loss = torch.cat(self._val_losses).mean()
        self._val_losses.clear()
        self.log("val_loss", val_loss, prog_bar=True)
        if float(val_loss) < self.best_val_loss:
            self.best_val_loss = float(val_loss)
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(
            self.model.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay
        )
