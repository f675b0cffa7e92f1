"""LoRA fine-tuning of a causal LM (Hugging Face ``peft``), as people adapt a public base.

:func:`with_new_lora` wraps a base model in a fresh LoRA adapter over every linear layer of its
blocks (``target_modules="all-linear"``: attention and feed-forward; the embeddings and the
output head stay frozen), whose weights alone then train. :func:`save_peft_target` writes the
``peft`` target format that :func:`panoramia.modalities.text.targets.load_peft_target` opens:
``base/`` (the base's weights, config and tokenizer), ``adapter/`` (``adapter_config.json`` and
``adapter_model.safetensors``) and ``target.json`` ``{"format": "peft", "base": "base",
"adapter": "adapter", "merge": true}``.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from panoramia.hashing import KEY_AT_DEFAULT
from panoramia.setting_bounds import COUNT, Range, ranged
from panoramia.targets.manifest import MANIFEST

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass
class LoraSettings:
    """``target.adapter`` (``none``: the whole network trains; ``lora``: an adapter over the
    public base) and the adapter's rank and scale (its update: ``lora_alpha / lora_rank · BA``)."""

    adapter: str = field(default="none", metadata={KEY_AT_DEFAULT: False})
    lora_rank: int = ranged(16, COUNT, metadata={KEY_AT_DEFAULT: False})
    lora_alpha: int = ranged(32, Range(1, 10**4, integer=True), metadata={KEY_AT_DEFAULT: False})


RECIPE_VERSION = 2
"""The recipe of a Llama or LoRA target, in its key: 2 applies ``target.dropout`` over the
base's (1 kept the public base's, the generator's dropout)."""


def recipe_key(settings: dict) -> dict:
    """A text target's key settings (:func:`panoramia.hashing.settings_key`: the architecture
    and LoRA settings left out at their defaults, a GPT-2 trained whole keeping the key it
    always had), with :data:`RECIPE_VERSION` where the target is a Llama or a LoRA adapter."""
    if "architecture" in settings or "adapter" in settings:
        return {**settings, "recipe_version": RECIPE_VERSION}
    return settings


def with_new_lora(model: PreTrainedModel, settings: LoraSettings, *, seed: int) -> Any:
    """``model`` wrapped in a new trainable LoRA adapter (peft's ``PeftModel``; its base frozen).
    peft starts B at zero, so the wrapped model computes what ``model`` does until trained."""
    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    config = LoraConfig(
        r=settings.lora_rank, lora_alpha=settings.lora_alpha, target_modules="all-linear",
        lora_dropout=0.0, task_type="CAUSAL_LM",
    )  # fmt: skip
    return get_peft_model(model, config)


def save_peft_target(wrapped: Any, base: Path, tokenizer_dir: Path, directory: Path) -> None:
    """Write the ``peft`` target format into ``directory``: the base model folder ``base``'s
    weights and config, the tokenizer of ``tokenizer_dir``, the adapter of ``wrapped``."""
    from panoramia.modalities.text.tokenizer import load_tokenizer

    base_out, adapter_out = directory / "base", directory / "adapter"
    base_out.mkdir(parents=True, exist_ok=True)
    for path in sorted(base.iterdir()):  # its weights (sharded too), config and the rest
        if path.is_file() and path.name != MANIFEST:
            shutil.copyfile(path, base_out / path.name)
    load_tokenizer(tokenizer_dir).save_pretrained(base_out)
    for config in wrapped.peft_config.values():  # the folder names its own base, not this store
        config.base_model_name_or_path = "../base"
    with warnings.catch_warnings():  # peft looks for that base from the working directory
        warnings.filterwarnings("ignore", message="Could not find a config file")
        wrapped.save_pretrained(adapter_out, safe_serialization=True)
    (adapter_out / "README.md").unlink(missing_ok=True)  # peft's model card template
    manifest = {"format": "peft", "modality": "text", "base": "base", "adapter": "adapter",
                "merge": True}  # fmt: skip
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1))
