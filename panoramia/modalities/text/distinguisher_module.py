"""The text distinguisher's network: transformer sequence encoder + loss-sequence branch + head.

The sequence branch embeds the chunk's tokens (token + learned position embeddings, a small
pre-norm ``nn.TransformerEncoder``, mean pooling); the loss branch (an MLP) embeds the
per-token loss sequence of f (attack) or h (baseline); both embeddings are concatenated before
a small head that gives one logit of "member" (PANORAMIA App. C.2).
"""

from __future__ import annotations

import torch
from torch import nn


class TextLossDistinguisher(nn.Module):
    """(token ids (B, L), loss-sequence features (B, F)) → member logits (B,)."""

    def __init__(
        self,
        vocab_size: int,
        length: int,
        n_side: int,
        *,
        d_model: int = 64,
        layers: int = 2,
        heads: int = 4,
        hidden: int = 64,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.position = nn.Parameter(torch.zeros(1, length, d_model))
        nn.init.normal_(self.position, std=0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, 2 * d_model, dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.loss_branch = nn.Sequential(
            nn.Linear(n_side, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
            nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Sequential(
            nn.Linear(d_model + hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def sequence_parameters(self) -> list[nn.Parameter]:
        """The sequence encoder's parameters (frozen in the first training phase)."""
        return [self.position, *self.embedding.parameters(), *self.encoder.parameters()]

    def forward(self, tokens: torch.Tensor, side: torch.Tensor) -> torch.Tensor:
        encoded = self.encoder(self.embedding(tokens) + self.position[:, : tokens.shape[1]])
        joint = torch.cat([encoded.mean(dim=1), self.loss_branch(side)], dim=1)
        return self.head(joint).squeeze(1)
