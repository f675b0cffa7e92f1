"""The text helper h: the target's causal-LM architecture trained on synthetic chunks only.

h never sees real text. It starts from ``base_model`` when given (the paper fine-tunes GPT-2),
else from fresh weights of the target's architecture; its epoch is the one with the lowest loss
on a synthetic validation split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from panoramia.baselines.labels import held_out
from panoramia.modalities.text.causal_lm import CausalLMConfig
from panoramia.modalities.text.documents import TextSet
from panoramia.setting_bounds import AMOUNT, BELOW_ONE, ranged

if TYPE_CHECKING:
    from transformers import PretrainedConfig


@dataclass
class TextHelperConfig(CausalLMConfig):
    """h: trained on this many synthetic chunks (disjoint from the audit's synthetic chunks)."""

    n_chunks: int = ranged(1000, AMOUNT)
    validation_fraction: float = ranged(0.2, BELOW_ONE)
    dropout: float | None = ranged(0.1, BELOW_ONE)
    """Dropout of h; None: the target's."""


def train_text_helper(
    synthetic: TextSet,
    config: TextHelperConfig,
    directory: Path,
    *,
    architecture: PretrainedConfig,
    tokenizer_dir: Path,
    seed: int,
) -> dict[str, float]:
    """Train h on synthetic chunks (a synthetic validation split picks the epoch); save it."""
    from panoramia.modalities.text.causal_lm import (
        fit_causal_lm,
        mean_loss,
        new_causal_lm,
        save_causal_lm,
        with_context,
    )

    order = np.random.default_rng(seed).permutation(len(synthetic))
    n_val = held_out(config.validation_fraction, len(synthetic))
    train, validation = synthetic.take(order[n_val:]), synthetic.take(order[:n_val])
    model = new_causal_lm(
        base_model=config.base_model,
        architecture=with_context(architecture, synthetic.length, dropout=config.dropout),
        seed=seed,
    )
    model, metrics = fit_causal_lm(
        model, train.tokens, config, seed=seed, validation=validation.tokens if n_val else None
    )
    save_causal_lm(model, tokenizer_dir, directory)
    metrics["train_loss_per_token"] = mean_loss(model, train.tokens)
    return metrics
