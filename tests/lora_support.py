"""A LoRA adapter that changes its model, for the tests of the ``peft`` target format."""

from __future__ import annotations

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
