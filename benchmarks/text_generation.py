"""Generation throughput of the text generator (tokens/s), on CPU or GPU.

Builds the demo's GPT-2 (2 layers, 128 wide, 2,048-token BPE vocabulary; or the size given)
with fresh weights — throughput does not depend on what the weights learned — and samples
64-token continuations of 64-token prompts from the whole vocabulary, as the synthetic stage
does, in batches of each size given. Prints tokens/s per batch size and device.

    .venv/bin/python benchmarks/text_generation.py [--batch 1 16 64 256] [--samples 512]
        [--layers 2 --width 128 --vocab 2048] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from panoramia.modalities.text.causal_lm import (
    GPT2Size,
    gpt2_architecture,
    new_causal_lm,
    with_context,
)
from panoramia.modalities.text.documents import TextSet
from panoramia.modalities.text.generator import TextGenerator, TextGeneratorConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    arguments = parser.parse_args()
    size = GPT2Size(n_layer=arguments.layers, n_embd=arguments.width, n_head=arguments.heads)
    architecture = gpt2_architecture(
        size, vocab_size=arguments.vocab, n_positions=arguments.length, eos_token_id=0
    )
    model = new_causal_lm(
        base_model=None, architecture=with_context(architecture, 2 * arguments.length), seed=0
    )
    model = model.to(arguments.device).eval()
    rng = np.random.default_rng(0)
    n = arguments.samples
    prompts = TextSet(
        rng.integers(0, arguments.vocab, (n, arguments.length)), np.arange(n), np.zeros(n, int)
    )
    print(f"device {arguments.device}, torch threads {torch.get_num_threads()}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters")  # fmt: skip
    for batch in arguments.batch:
        generator = TextGenerator(TextGeneratorConfig(generation_batch=batch, samples_per_prompt=1))
        generator.model = model
        generator.sample(prompts.take(np.arange(min(batch, n))), min(batch, n), seed=0)  # warm-up
        generator.sample(prompts, n, seed=1)
        print(f"batch {batch:4d}: {generator.tokens_per_second:10,.0f} tokens/s ({n} samples)")


if __name__ == "__main__":
    main()
