"""A LoRA adapter that changes its model, for the tests of the ``peft`` target format."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def with_lora(model: Any, modules: list[str], *, scale: float, seed: int) -> Any:
    """``model`` wrapped in a LoRA (peft; r=2, alpha 4) over ``modules``, whose B matrices are
    drawn with standard deviation ``scale`` from ``seed``: peft starts them at zero, and such
    an adapter would change nothing."""
    import torch
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=2, lora_alpha=4, target_modules=modules, task_type="CAUSAL_LM")
    adapted = get_peft_model(model, lora)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in adapted.named_parameters():
            if "lora_B" in name:
                parameter.copy_(scale * torch.randn(parameter.shape, generator=generator))
    return adapted


def tiny_peft_target(directory: Path, documents: list[str], *, seed: int = 0) -> Path:
    """A contributor's LoRA adapter as she would ship it: a small Llama-family base of fresh
    weights with its own BPE tokenizer (trained on ``documents``), a non-zero LoRA adapter over
    it, written in the ``peft`` target format into ``directory``; returns ``directory``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from panoramia.modalities.text.lora import save_peft_target
    from panoramia.modalities.text.tokenizer import train_bpe_tokenizer

    base = directory.parent / f"{directory.name}-base"
    vocab = train_bpe_tokenizer(documents, vocab_size=512, directory=base)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(base)
    adapted = with_lora(model, ["q_proj", "v_proj"], scale=0.05, seed=seed)
    save_peft_target(adapted, base, base, directory)
    return directory


def tiny_llama_base(directory: Path, documents: list[str], *, vocab_size: int = 300) -> Path:
    """A pre-trained model as ``panoramia smollm2`` writes one, in miniature: a plain Llama
    folder of fresh weights (1 layer, 32 wide) with its own BPE tokenizer of ``vocab_size``
    tokens trained on ``documents``; returns ``directory``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from panoramia.modalities.text.tokenizer import train_bpe_tokenizer

    vocab = train_bpe_tokenizer(documents, vocab_size=vocab_size, directory=directory)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
    )  # fmt: skip
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    return directory
