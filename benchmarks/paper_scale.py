"""What a paper-scale audit costs: each stage's model at the real shapes, timed on a few
batches of generated data, and extrapolated to the full ``+experiment=cifar10`` and
``+experiment=wikitext_gpt2`` configs.

Image: WRN-28-10 (the cifar10 target, and h and the stand-ins, which share its recipe) and the
DDPM UNet (width 64) on 32×32×3 batches of CIFAR-10's shape; text: a GPT-2 small (124 M
parameters, built from its config: no download) on chunks of 64 tokens. Real data is not
needed: the cost of a forward or backward pass depends on the shapes, not on the pixels.

Per stage it prints the seconds measured, the throughput (images or tokens per second), the
peak memory of the process (and of the GPU where one is used), the share of the time spent in
the model's forward passes (a training step's forward, against its backward and optimiser),
and the extrapolated hours of the full config's stage (the counts it assumes are printed in
the table: epochs × examples of the config, audit sets of the paper's sizes). Run it on the
machine you would audit on:

    .venv/bin/python benchmarks/paper_scale.py                 # CPU, a few batches per stage
    .venv/bin/python benchmarks/paper_scale.py --device cuda --batches 20
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

CIFAR = (3, 32, 32)
CIFAR_TRAIN, CIFAR_TEST = 50_000, 10_000
WIKITEXT_CHUNKS = 100_000
"""Member chunks of 64 tokens the wikitext config's data gives (articles × ≤ 50 chunks)."""


@dataclass
class Stage:
    """One stage of a full audit: what is timed and how many units the full config needs."""

    audit: str
    name: str
    unit: str  # "images" or "tokens"
    full_units: float
    """Units (examples × epochs, or tokens) the full config's stage processes."""
    assumption: str


@dataclass
class Measured:
    seconds: float
    units: int
    forward_share: float
    peak_mb: float
    gpu_peak_mb: float | None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_reset(device: torch.device) -> None:
    with contextlib.suppress(OSError):  # Linux: reset the peak resident size
        Path("/proc/self/clear_refs").write_text("5")
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak(device: torch.device) -> tuple[float, float | None]:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    except OSError:
        pass
    gpu = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    return rss, gpu


def _autocast(device: torch.device):  # bf16 on CUDA, as the audit trains and scores there
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def time_training(
    step_inputs: Callable[[], tuple], model: torch.nn.Module, loss_of: Callable, *,
    batches: int, batch: int, units_per_example: int, device: torch.device,
) -> Measured:  # fmt: skip
    """Training steps (forward, backward, Adam): seconds, and the forward's share."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    model.train()
    inputs = step_inputs()
    with _autocast(device):  # one warm-up step (allocations, kernels)
        loss_of(model, *inputs).backward()
    optimizer.step()
    optimizer.zero_grad()
    _peak_reset(device)
    forward = total = 0.0
    for _ in range(batches):
        inputs = step_inputs()
        _sync(device)
        started = time.perf_counter()
        with _autocast(device):
            loss = loss_of(model, *inputs)
        _sync(device)
        middle = time.perf_counter()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        _sync(device)
        forward += middle - started
        total += time.perf_counter() - started
    rss, gpu = _peak(device)
    return Measured(total, batches * batch * units_per_example, forward / total, rss, gpu)


def time_inference(
    run: Callable[[], object], *, batches: int, units: int, device: torch.device
) -> Measured:
    """Forward passes only (inference mode): seconds for ``batches`` calls of ``run``."""
    with torch.inference_mode(), _autocast(device):
        run()  # warm-up
        _peak_reset(device)
        _sync(device)
        started = time.perf_counter()
        for _ in range(batches):
            run()
        _sync(device)
    seconds = time.perf_counter() - started
    rss, gpu = _peak(device)
    return Measured(seconds, batches * units, 1.0, rss, gpu)


def image_stages(args: argparse.Namespace, device: torch.device) -> list[tuple[Stage, Measured]]:
    from generators.ddpm import ConditionalUNet
    from panoramia.models.image_nets import ResNet

    batch = args.image_batch

    def images() -> tuple:
        x = torch.randn(batch, *CIFAR, device=device)
        return x.contiguous(memory_format=torch.channels_last), torch.randint(
            0, 10, (batch,), device=device
        )

    wrn = ResNet(in_channels=3, n_classes=10, blocks=4, width=16, widen=10, dropout=0.3)
    wrn = wrn.to(device).to(memory_format=torch.channels_last)
    parameters = sum(p.numel() for p in wrn.parameters()) / 1e6

    def classify(model, x, y):  # type: ignore[no-untyped-def]
        return torch.nn.functional.cross_entropy(model(x).float(), y)

    found = []
    train = time_training(images, wrn, classify, batches=args.batches, batch=batch,
                          units_per_example=1, device=device)  # fmt: skip
    found.append((Stage("image", f"target WRN-28-10 ({parameters:.1f} M) training", "images",
                        200 * CIFAR_TRAIN, "200 epochs × 50,000"), train))  # fmt: skip
    found.append((Stage("image", "h + 3 stand-ins (WRN-28-10) training", "images",
                        60 * 20_000 + 3 * 60 * 30_000,
                        "h 60 epochs × 20,000; stand-ins 60 × 30,000 each"), train))  # fmt: skip
    x, _ = images()
    scores = time_inference(lambda: wrn.eval()(x), batches=args.batches, units=batch,
                            device=device)  # fmt: skip
    found.append((Stage("image", "losses under f, h, 3 stand-ins", "images",
                        5 * (CIFAR_TRAIN + CIFAR_TEST + 20_000),
                        "5 models × (50,000 members + 10,000 real + 20,000 synthetic)"),
                  scores))  # fmt: skip
    unet = ConditionalUNet(3, 10, width=64).to(device).to(memory_format=torch.channels_last)
    steps_total = 1000

    def denoise(model, x, y):  # type: ignore[no-untyped-def]
        steps = torch.randint(0, steps_total, (x.shape[0],), device=device)
        return torch.nn.functional.mse_loss(model(x, steps, y).float(), x)

    diffusion = time_training(images, unet, denoise, batches=args.batches, batch=batch,
                              units_per_example=1, device=device)  # fmt: skip
    found.append((Stage("image", "generator DDPM (width 64) training", "images",
                        200 * 20_000, "200 epochs × 20,000 (40 % of the members)"),
                  diffusion))  # fmt: skip
    labels = torch.randint(0, 10, (batch,), device=device)
    noise = torch.randn(batch, *CIFAR, device=device)
    steps = torch.full((batch,), 10, device=device)
    one_step = time_inference(lambda: unet.eval()(noise, steps, labels), batches=args.batches,
                              units=batch, device=device)  # fmt: skip
    sampling = Measured(one_step.seconds * 100, one_step.units, 1.0, one_step.peak_mb,
                        one_step.gpu_peak_mb)  # 100 DDIM steps per image  # fmt: skip
    found.append((Stage("image", "DDPM sampling (100 DDIM steps)", "images", 60_000,
                        "60,000 drawn for a pool the filter keeps 20,000+ of"),
                  sampling))  # fmt: skip
    return found


def text_stages(args: argparse.Namespace, device: torch.device) -> list[tuple[Stage, Measured]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50_257, n_positions=1024)
    model = GPT2LMHeadModel(config).to(device)
    parameters = sum(p.numel() for p in model.parameters()) / 1e6
    batch, length = args.text_batch, 64

    def pairs() -> tuple:  # the generator trains on prompt + continuation (2 × 64 tokens)
        return (torch.randint(0, 50_257, (batch, 2 * length), device=device),)

    def chunks() -> tuple:
        return (torch.randint(0, 50_257, (batch, length), device=device),)

    def lm_loss(model, tokens):  # type: ignore[no-untyped-def]
        return model(input_ids=tokens, labels=tokens).loss

    found = []
    generator = time_training(pairs, model, lm_loss, batches=args.batches, batch=batch,
                              units_per_example=2 * length, device=device)  # fmt: skip
    found.append((Stage("text", f"generator GPT-2 small ({parameters:.0f} M) fine-tuning",
                        "tokens", 10 * WIKITEXT_CHUNKS // 2 * 2 * length,
                        "10 epochs × 50,000 pairs of 2 × 64 tokens"), generator))  # fmt: skip
    helper = time_training(chunks, model, lm_loss, batches=args.batches, batch=batch,
                           units_per_example=length, device=device)  # fmt: skip
    found.append((Stage("text", "h + 3 stand-ins fine-tuning", "tokens",
                        4 * 10 * 50_000 * length, "4 models × 10 epochs × 50,000 chunks"),
                  helper))  # fmt: skip
    tokens = chunks()[0]
    losses = time_inference(lambda: model.eval()(input_ids=tokens).logits.float(),
                            batches=args.batches, units=batch * length, device=device)  # fmt: skip
    found.append((Stage("text", "per-token losses under f, h, 3 stand-ins", "tokens",
                        5 * 2 * WIKITEXT_CHUNKS * length,
                        "5 models × 200,000 chunks (members, real, synthetic)"),
                  losses))  # fmt: skip
    prompts = tokens[: max(1, batch // 2)]
    generation = time_inference(
        lambda: model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts),
                               do_sample=True, top_k=200, max_new_tokens=length,
                               min_new_tokens=length, pad_token_id=0),
        batches=max(1, args.batches // 2), units=len(prompts) * length, device=device,
    )  # fmt: skip
    found.append((Stage("text", "generation (top-k 200, 64 new tokens)", "tokens",
                        8 * 50_000 * length, "8 samples × 50,000 prompts × 64 tokens"),
                  generation))  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--batches", type=int, default=2, help="timed batches per stage")
    parser.add_argument("--image-batch", type=int, default=8)
    parser.add_argument("--text-batch", type=int, default=4)
    parser.add_argument("--only", choices=("image", "text"), default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    started = time.perf_counter()
    rows = []
    if args.only in (None, "image"):
        rows += image_stages(args, device)
    if args.only in (None, "text"):
        rows += text_stages(args, device)
    print(f"device {device} ({torch.get_num_threads()} CPU threads); {args.batches} timed "
          f"batches per stage; {time.perf_counter() - started:.0f} s in all")  # fmt: skip
    header = (f"| stage | measured s | {'throughput':>12} | peak MB | forward share | "
              "full config: units (assumed) | full config h |")  # fmt: skip
    print(header)
    print("|---|---|---|---|---|---|---|")
    totals: dict[str, float] = {}
    for stage, measured in rows:
        rate = measured.units / measured.seconds
        hours = stage.full_units / rate / 3600
        totals[stage.audit] = totals.get(stage.audit, 0.0) + hours
        memory = f"{measured.peak_mb:,.0f}"
        if measured.gpu_peak_mb is not None:
            memory += f" (GPU {measured.gpu_peak_mb:,.0f})"
        print(f"| {stage.audit}: {stage.name} | {measured.seconds:.2f} | "
              f"{rate:,.0f} {stage.unit}/s | {memory} | {measured.forward_share:.0%} | "
              f"{stage.full_units:,.0f} ({stage.assumption}) | {hours:,.1f} |")  # fmt: skip
    for audit, hours in totals.items():
        print(f"extrapolated {audit} audit (+experiment="
              f"{'cifar10' if audit == 'image' else 'wikitext_gpt2'}) on {device}: "
              f"{hours:,.0f} h ({hours / 24:,.1f} days), one seed")  # fmt: skip


if __name__ == "__main__":
    main()
