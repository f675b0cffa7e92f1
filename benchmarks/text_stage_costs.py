"""What a text audit's stages cost per unit of work, at the demo's size and at GPT-2 small's.

The text audit's time goes to three kinds of work, each measured here on a causal LM of fresh
weights (costs do not depend on what the weights learned) with 64-token chunks:

- **training** (the target, the public base, the generator, h, the stand-ins): seconds per
  epoch over 1,600 chunks (the demo's pool), from a few optimizer steps of batch 32;
- **losses** (one stage per model: f, h and each stand-in): chunks scored per second, from the
  batched per-token losses the losses stage computes;
- **generation** (the synthetic stage): tokens per second, top-k 200, batch 64.

Each is printed with the process's peak resident memory after it (``ru_maxrss``, MB), then the
demo's counts turned into an estimate of each stage's time. ``--size demo``: GPT-2, 2 layers,
128 wide, 2,048-token vocabulary (the demo targets); ``--size gpt2-small``: 12 layers, 768 wide,
12 heads, 50,257 tokens (124 M parameters, from a config). Pass ``--llama`` for the Llama family
of the same size (the LoRA demo targets' base).

    .venv/bin/python benchmarks/text_stage_costs.py --size demo
    .venv/bin/python benchmarks/text_stage_costs.py --size gpt2-small --steps 3 --chunks 64
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import torch

from panoramia.modalities.text.causal_lm import (
    GPT2Size,
    demo_architecture,
    new_causal_lm,
    with_context,
)
from panoramia.modalities.text.causal_lm_losses import token_losses
from panoramia.modalities.text.documents import TextSet
from panoramia.modalities.text.generator import TextGenerator, TextGeneratorConfig

SIZES = {
    "demo": (GPT2Size(n_layer=2, n_embd=128, n_head=4, dropout=0.0), 2048),
    "gpt2-small": (GPT2Size(n_layer=12, n_embd=768, n_head=12, dropout=0.0), 50257),
}
LENGTH = 64
POOL = 1600
"""Chunks in the demo's pools (the target's members, each stand-in's training set)."""
# stage: (kind, units) at the demo's settings (the text plug-in's text.yaml, gpt2_many_epochs)
DEMO_WORK = {
    "target (40 epochs)": ("train", 40),
    "public base (3 epochs of 8,000 chunks as pairs)": ("train", 3 * 8000 / POOL * 2),
    "each stand-in (40 epochs, the target's recipe)": ("train", 40),
    "generator (10 epochs of ~1,100 pairs)": ("train", 10 * 1100 / POOL * 2),
    "h (10 epochs of 800 chunks)": ("train", 10 * 800 / POOL),
    "each losses stage (~3,700 chunks)": ("score", 3700),
    "synthetic (~2,500 chunks of 64 tokens)": ("generate", 2500 * LENGTH),
}


def peak_mb() -> float:
    """The process's peak resident memory so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def train_seconds_per_epoch(model: torch.nn.Module, vocab: int, steps: int) -> float:
    """Seconds for one epoch of :data:`POOL` chunks at batch 32 (AdamW), from ``steps`` steps."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    batch = torch.from_numpy(rng.integers(0, vocab, (32, LENGTH)))
    model.train()
    model(input_ids=batch, labels=batch).loss.backward()  # warm-up
    optimizer.zero_grad()
    started = time.perf_counter()
    for _ in range(steps):
        model(input_ids=batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    per_step = (time.perf_counter() - started) / steps
    model.eval()
    return per_step * POOL / 32


def chunks_scored_per_second(model: torch.nn.Module, vocab: int, chunks: int) -> float:
    """Chunks per second through the losses stage's batched per-token losses."""
    tokens = np.random.default_rng(1).integers(0, vocab, (chunks, LENGTH))
    token_losses(model, tokens[:8])  # warm-up
    started = time.perf_counter()
    token_losses(model, tokens)
    return chunks / (time.perf_counter() - started)


def tokens_generated_per_second(model: torch.nn.Module, vocab: int, samples: int) -> float:
    """Tokens per second of the synthetic stage's sampling (top-k 200, batch 64)."""
    rng = np.random.default_rng(2)
    prompts = TextSet(rng.integers(0, vocab, (samples, LENGTH)), np.arange(samples),
                      np.zeros(samples, int))  # fmt: skip
    generator = TextGenerator(TextGeneratorConfig(generation_batch=64, samples_per_prompt=1))
    generator.model = model
    generator.sample(prompts, samples, seed=0)
    return float(generator.tokens_per_second or 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="demo")
    parser.add_argument("--llama", action="store_true", help="the Llama family of that size")
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps timed")
    parser.add_argument("--chunks", type=int, default=512, help="chunks scored")
    parser.add_argument("--samples", type=int, default=64, help="chunks generated")
    arguments = parser.parse_args()
    size, vocab = SIZES[arguments.size]
    if arguments.llama:
        size = GPT2Size(**{**size.__dict__, "architecture": "llama"})
    architecture = demo_architecture(size, vocab_size=vocab, n_positions=LENGTH, eos_token_id=0)
    model = new_causal_lm(
        base_model=None, architecture=with_context(architecture, 2 * LENGTH), seed=0
    )
    parameters = sum(p.numel() for p in model.parameters())
    threads = torch.get_num_threads()
    print(f"{arguments.size} ({size.architecture}), {parameters:,} parameters, {threads} torch "
          f"threads, CPU; peak memory {peak_mb():,.0f} MB")  # fmt: skip
    unit = {
        "train": train_seconds_per_epoch(model, vocab, arguments.steps),
        "score": 1 / chunks_scored_per_second(model, vocab, arguments.chunks),
    }
    print(f"training: {unit['train']:,.1f} s per epoch of {POOL:,} chunks (batch 32); "
          f"peak memory {peak_mb():,.0f} MB")  # fmt: skip
    print(f"losses:   {1 / unit['score']:,.0f} chunks/s; peak memory {peak_mb():,.0f} MB")
    unit["generate"] = 1 / tokens_generated_per_second(model, vocab, arguments.samples)
    print(f"sampling: {1 / unit['generate']:,.0f} tokens/s (batch 64, top-k 200); "
          f"peak memory {peak_mb():,.0f} MB")  # fmt: skip
    print("\nthe demo's counts at these unit costs (a floor: Lightning's loop, validation and the")
    print("base's and generator's 128-token pairs add to them; one process, these threads):")
    for stage, (kind, units) in DEMO_WORK.items():
        print(f"  {stage:52s} {unit[kind] * units:10,.0f} s")


if __name__ == "__main__":
    main()
