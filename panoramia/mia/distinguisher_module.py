"""Training a distinguisher network with Lightning, selected by the validation lower bound.

The network maps (inputs (B, …), side features (B, F)) to one logit of "member" per example
(an image CNN, a text encoder). After every validation epoch the module scores the validation
split and rates it by the validation lower bound
(:func:`panoramia.mia.selection.validation_lower_bound`);
the weights of the best epoch so far are kept in ``best_state`` (checkpoint selection never sees
the audit set). ``epoch_bounds`` accumulates over several ``fit`` calls (training in phases).
"""

from __future__ import annotations

import lightning as L
import numpy as np
import torch
from torch import nn

from panoramia.mia.selection import validation_lower_bound


class DistinguisherModule(L.LightningModule):
    """Binary cross-entropy training; keeps the epoch with the best validation θ_lb."""

    def __init__(
        self,
        model: nn.Module,
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
        inputs, side, labels = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self.model(inputs, side), labels)
        self.log("train_bce", loss, prog_bar=True, on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, ...], _: int) -> None:
        inputs, side, labels = batch
        self._scores.append(torch.sigmoid(self.model(inputs, side).float()).detach().cpu())
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
        """AdamW over the parameters that require gradients (a frozen branch is left out)."""
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        return torch.optim.AdamW(trainable, lr=self.learning_rate, weight_decay=self.weight_decay)
