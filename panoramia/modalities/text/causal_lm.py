"""Causal language models trained with Lightning: the text demo targets, the generator, h.

A model directory written here is a Hugging Face model directory (``config.json``,
``model.safetensors``, the tokenizer files) plus ``target.json`` (format ``hf-causal-lm``), so
:func:`panoramia.targets.load_target` and ``AutoModelForCausalLM.from_pretrained`` both open it.

Initial weights (:func:`new_causal_lm`): a local base model's (fine-tuning, as the paper's
GPT-2), else fresh weights of a template's architecture (a ``PretrainedConfig``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from panoramia.errors import InputError
from panoramia.hashing import KEY_AT_DEFAULT
from panoramia.modalities.text.causal_lm_losses import quiet_transformers, token_losses
from panoramia.models.device_settings import DeviceSettings, LoaderOptions
from panoramia.setting_bounds import BELOW_ONE, COUNT, RATE, Limit, Range, ranged
from panoramia.targets.manifest import MANIFEST

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

log = logging.getLogger(__name__)
VOLATILE_CONFIG_KEYS = ("_name_or_path", "transformers_version", "architectures", "dtype")
"""Config entries that do not change the architecture (left out of stage keys)."""
DROPOUT_FIELDS = ("resid_pdrop", "embd_pdrop", "attn_pdrop", "dropout", "attention_dropout")


@dataclass
class CausalLMConfig(DeviceSettings):
    """How Lightning trains a causal LM, and the weights it starts from."""

    base_model: str | None = None
    """A local causal-LM directory to start from (its weights and architecture); None: fresh
    weights (the demo GPT-2 for a demo target; the target's architecture for the generator and
    h)."""
    epochs: int = ranged(10, COUNT, limit=Limit.EPOCHS)
    batch_size: int = ranged(32, COUNT)
    learning_rate: float = ranged(1e-3, RATE)
    weight_decay: float = ranged(0.01, Range(0, 10))


@dataclass
class GPT2Size:
    """The demo targets' network from a config, no pretrained weights: GPT-2
    (``GPT2LMHeadModel``) or the Llama family (``LlamaForCausalLM``) of the same size."""

    architecture: str = field(default="gpt2", metadata={KEY_AT_DEFAULT: False})
    """``gpt2`` or ``llama`` (:func:`demo_architecture`)."""
    n_layer: int = ranged(2, COUNT, limit=Limit.LAYERS)
    n_embd: int = ranged(128, COUNT, limit=Limit.WIDTH)
    n_head: int = ranged(4, COUNT, limit=Limit.LAYERS)
    dropout: float = ranged(0.1, BELOW_ONE)
    """GPT-2's embedding, attention and residual dropout."""


def gpt2_architecture(
    config: GPT2Size, *, vocab_size: int, n_positions: int, eos_token_id: int
) -> PretrainedConfig:
    """A GPT-2 config of ``config``'s size for this tokenizer and context."""
    from transformers import GPT2Config

    if config.n_embd % config.n_head:
        raise InputError(f"n_embd: {config.n_embd} is not a multiple of n_head {config.n_head}")
    return GPT2Config(
        vocab_size=vocab_size, n_positions=n_positions, n_embd=config.n_embd,
        n_layer=config.n_layer, n_head=config.n_head, resid_pdrop=config.dropout,
        embd_pdrop=config.dropout, attn_pdrop=config.dropout, bos_token_id=eos_token_id,
        eos_token_id=eos_token_id, pad_token_id=eos_token_id,
    )  # fmt: skip


def llama_architecture(
    config: GPT2Size, *, vocab_size: int, n_positions: int, eos_token_id: int
) -> PretrainedConfig:
    """A Llama-family config (rotary positions, RMSNorm, SwiGLU) of ``config``'s width, depth
    and heads, its feed-forward 4 × wider, for this tokenizer and context."""
    from transformers import LlamaConfig

    if config.n_embd % config.n_head:
        raise InputError(f"n_embd: {config.n_embd} is not a multiple of n_head {config.n_head}")
    return LlamaConfig(
        vocab_size=vocab_size, hidden_size=config.n_embd, intermediate_size=4 * config.n_embd,
        num_hidden_layers=config.n_layer, num_attention_heads=config.n_head,
        num_key_value_heads=config.n_head, max_position_embeddings=n_positions,
        attention_dropout=config.dropout, bos_token_id=eos_token_id, eos_token_id=eos_token_id,
        pad_token_id=eos_token_id, tie_word_embeddings=True,
    )  # fmt: skip


def demo_architecture(
    config: GPT2Size, *, vocab_size: int, n_positions: int, eos_token_id: int
) -> PretrainedConfig:
    """The demo target's config: ``config.architecture`` (``gpt2`` or ``llama``) at its size."""
    build = {"gpt2": gpt2_architecture, "llama": llama_architecture}.get(config.architecture)
    if build is None:
        raise InputError(f"target.architecture: {config.architecture!r} is not gpt2 or llama")
    return build(config, vocab_size=vocab_size, n_positions=n_positions, eos_token_id=eos_token_id)


def architecture_of(directory: str | Path) -> PretrainedConfig:
    """The architecture (config) of a local model directory, without the network."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(
            str(directory), local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        raise InputError(f"model {str(directory)!r}: no loadable config.json ({first})") from None


def with_context(
    architecture: PretrainedConfig, n_positions: int, *, dropout: float | None = None
) -> PretrainedConfig:
    """A copy whose position table holds at least ``n_positions`` tokens, and whose dropout
    rates (GPT-2's embedding, attention and residual dropout, where the architecture has them)
    are ``dropout`` when it is given."""
    copy = architecture.__class__.from_dict(architecture.to_dict())
    for name in ("n_positions", "max_position_embeddings"):
        if hasattr(copy, name) and getattr(copy, name) < n_positions:
            setattr(copy, name, n_positions)
    if dropout is not None:
        for name in DROPOUT_FIELDS:
            if hasattr(copy, name):
                setattr(copy, name, dropout)
    return copy


def architecture_key(architecture: PretrainedConfig) -> dict:
    """The architecture as a JSON-able dict for stage keys (volatile entries removed)."""
    body = architecture.to_dict()
    return {k: v for k, v in sorted(body.items()) if k not in VOLATILE_CONFIG_KEYS}


def new_causal_lm(
    *,
    base_model: str | None,
    architecture: PretrainedConfig | None,
    seed: int,
    dropout: float | None = None,
) -> PreTrainedModel:
    """The base model's weights, else fresh weights (seeded) of ``architecture``; ``dropout``,
    where given, replaces the base's dropout rates (its config's :data:`DROPOUT_FIELDS`)."""
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM

    quiet_transformers()
    if base_model:
        try:
            config = None
            if dropout is not None:
                config = with_context(architecture_of(base_model), 0, dropout=dropout)
            model = AutoModelForCausalLM.from_pretrained(
                base_model, config=config, local_files_only=True, trust_remote_code=False
            )
        except (OSError, ValueError, RuntimeError, SafetensorError) as error:
            first = str(error).strip().splitlines()[0]
            raise InputError(f"base_model {base_model!r}: not a causal LM ({first})") from None
    elif architecture is None:
        raise InputError("base_model: required when no architecture is known")
    else:
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(architecture)
    if getattr(model, "loss_type", None) is None:
        model.loss_type = "ForCausalLM"  # what transformers falls back to, without its notice
    return model


def fit_causal_lm(
    model: PreTrainedModel,
    train: np.ndarray,
    config: CausalLMConfig,
    *,
    seed: int,
    validation: np.ndarray | None = None,
    callbacks: list | None = None,
) -> tuple[PreTrainedModel, dict[str, float]]:
    """Train on int token ids (N, T); with ``validation`` the best epoch's weights are kept.
    ``callbacks`` join the trainer's (a benchmark's step timer)."""
    import lightning as L
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from panoramia.modalities.text.causal_lm_module import CausalLMModule
    from panoramia.models.training import TrainingConfig, make_trainer

    if len(train) == 0:
        raise InputError("text: no training chunks")
    L.seed_everything(seed, workers=True, verbose=False)
    options: LoaderOptions = {
        "num_workers": config.num_workers,
        "pin_memory": torch.cuda.is_available(),
    }
    train_loader = DataLoader(
        TensorDataset(torch.tensor(train)), batch_size=config.batch_size, shuffle=True,
        generator=torch.Generator().manual_seed(seed), **options,
    )  # fmt: skip
    val_loader = None
    if validation is not None:
        val_loader = DataLoader(TensorDataset(torch.tensor(validation)), batch_size=256)
    module = CausalLMModule(
        model, learning_rate=config.learning_rate, weight_decay=config.weight_decay
    )
    training = TrainingConfig(
        epochs=config.epochs, seed=seed, **config.trainer_settings()
    )  # fmt: skip
    trainer = make_trainer(training, validate=validation is not None, callbacks=callbacks)
    trainer.fit(module, train_loader, val_loader)  # the best epoch's weights end in model
    metrics = {k: round(float(v), 5) for k, v in trainer.callback_metrics.items()}
    return model.cpu().float().eval(), metrics


def save_causal_lm(model: PreTrainedModel, tokenizer_dir: Path, directory: Path) -> None:
    """A Hugging Face model directory with the tokenizer and a ``hf-causal-lm`` manifest."""
    from panoramia.modalities.text.tokenizer import load_tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    load_tokenizer(tokenizer_dir).save_pretrained(directory)
    manifest = {"format": "hf-causal-lm", "modality": "text", "directory": "."}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1))


def mean_loss(model: PreTrainedModel, tokens: np.ndarray) -> float:
    """Mean per-token loss (nats) of chunks (N, L)."""
    return round(float(token_losses(model, tokens).mean()), 5) if len(tokens) else float("nan")
