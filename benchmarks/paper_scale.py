"""What a paper-scale audit costs: each stage of the ``+experiment=cifar10`` and
``+experiment=wikitext_gpt2`` audits, timed through the audit's own code on a few batches of
generated data at the real shapes and batch sizes, and extrapolated to the full configs.

Each stage runs the function the audit runs: ``train_image_directory`` (WRN-28-10 with
Lightning, its augmentation and precision), ``load_target(...).per_example_loss``,
``ImageGenerator.fit`` / ``.sample`` (the DDPM at width 64, classifier-free guidance, 100 DDIM
steps), ``fit_causal_lm`` (GPT-2 small, 124 M parameters, built from its config: no
download), ``token_losses`` and ``TextGenerator.sample`` (top-k 200, KV cache). Batch sizes,
widths and steps are read from the plug-ins' ``conf/experiment/*.yaml`` (and the DDPM's base
config), so
they are the ones an audit uses. Real data is not needed: a step's cost depends on the
shapes, not on the pixels or tokens.

Training stages are timed by a Lightning callback over the steps after a warm-up (CUDA
synchronised at both ends); the rest over whole calls after a warm-up call. Per stage it
prints the seconds timed, the batch size, the throughput (images or tokens per second), the
peak memory of the process (and of the GPU), the GPU's mean utilisation over the timed window
(NVML's share of time a kernel ran), and the hours of the full config's stage (the counts it
assumes are printed beside them). ``--compare-determinism`` also times the WRN's training
with Lightning's ``deterministic=False`` (cuDNN's fastest algorithms). Run it on the machine
you would audit on:

    .venv/bin/python benchmarks/paper_scale.py --smoke          # CPU: tiny shapes, checks it runs
    .venv/bin/python benchmarks/paper_scale.py --device cuda --batches 40
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import resource
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CIFAR_SHAPE = (32, 32, 3)
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
    batch: int
    peak_mb: float
    gpu_peak_mb: float | None
    gpu_busy: float | None
    """Mean GPU utilisation (0–1) over the timed window; None on the CPU or without NVML."""


class GpuMonitor:
    """Samples the GPU's utilisation (NVML, through torch or nvidia-smi) every ``period`` s in
    a thread; :meth:`mean` averages the samples of a time window (``time.perf_counter``)."""

    def __init__(self, device: torch.device, period: float = 0.1) -> None:
        self.device, self.period = device, period
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if device.type == "cuda" and self._read() is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _read(self) -> float | None:
        try:
            return float(torch.cuda.utilization(self.device))
        except Exception:  # no NVML binding in torch: ask nvidia-smi
            index = self.device.index or 0
            try:
                out = subprocess.run(
                    ["nvidia-smi", "-i", str(index), "--query-gpu=utilization.gpu",
                     "--format=csv,noheader,nounits"],
                    capture_output=True, text=True, timeout=5, check=True,
                )  # fmt: skip
                return float(out.stdout.strip().splitlines()[0])
            except (OSError, subprocess.SubprocessError, ValueError, IndexError):
                return None

    def _run(self) -> None:
        while not self._stop.is_set():
            value = self._read()
            if value is not None:
                self.samples.append((time.perf_counter(), value))
            time.sleep(self.period)

    def mean(self, started: float, ended: float) -> float | None:
        inside = [value for at, value in self.samples if started <= at <= ended]
        return float(np.mean(inside)) / 100 if inside else None

    def stop(self) -> None:
        self._stop.set()


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
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    gpu = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    return rss, gpu


def step_timer(device: torch.device, warmup: int):
    """A Lightning callback timing the training steps after the first ``warmup`` (CUDA
    synchronised at the first timed step's start and the last step's end)."""
    import lightning as L

    class StepTimer(L.Callback):
        def __init__(self) -> None:
            self.started: float | None = None
            self.ended: float | None = None
            self.steps = 0
            self.timed = 0

        def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
            if self.steps == warmup:
                _sync(device)
                _peak_reset(device)
                self.started = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
            self.steps += 1
            last = batch_idx + 1 == trainer.num_training_batches
            if self.steps > warmup and last and trainer.current_epoch + 1 == trainer.max_epochs:
                _sync(device)
                self.ended = time.perf_counter()
                self.timed = self.steps - warmup

    return StepTimer()


def timed_training(
    train: Callable[[list], object], *, batch: int, units_per_example: int,
    device: torch.device, warmup: int, monitor: GpuMonitor,
) -> Measured:  # fmt: skip
    """Run ``train(callbacks)`` (one epoch of warmup + timed steps) and time its steps."""
    timer = step_timer(device, warmup)
    train([timer])
    if timer.started is None or timer.ended is None:
        raise RuntimeError("the training ran fewer steps than its warm-up")
    rss, gpu = _peak(device)
    units = timer.timed * batch * units_per_example
    return Measured(timer.ended - timer.started, units, batch, rss, gpu,
                    monitor.mean(timer.started, timer.ended))  # fmt: skip


def timed_calls(
    run: Callable[[], object], *, calls: int, units: int, batch: int, device: torch.device,
    monitor: GpuMonitor,
) -> Measured:  # fmt: skip
    """``run()`` once to warm up, then ``calls`` times, timed; ``units`` per call."""
    run()
    _peak_reset(device)
    _sync(device)
    started = time.perf_counter()
    for _ in range(calls):
        run()
    _sync(device)
    ended = time.perf_counter()
    rss, gpu = _peak(device)
    return Measured(ended - started, calls * units, batch, rss, gpu, monitor.mean(started, ended))


def experiment(name: str) -> dict:
    """An experiment's overrides (``experiment/NAME.yaml`` of a plug-in's config folder) as a
    plain dict."""
    from panoramia.pipeline.registry import existing_config_file

    return OmegaConf.to_container(OmegaConf.load(existing_config_file(f"experiment/{name}.yaml")))


def known_fields(cls: type, settings: dict) -> dict:
    """The entries of ``settings`` that are fields of the dataclass ``cls``."""
    names = {field.name for field in dataclasses.fields(cls)}
    return {key: value for key, value in settings.items() if key in names}


def fake_images(n: int, rng: np.random.Generator):
    from panoramia.modalities.image.images import ImageSet

    images = rng.integers(0, 256, (n, *CIFAR_SHAPE), dtype=np.uint8)
    return ImageSet(images, rng.integers(0, 10, n).astype(np.int64))


def image_stages(
    args: argparse.Namespace, device: torch.device, monitor: GpuMonitor
) -> list[tuple[Stage, Measured]]:
    from panoramia.modalities.image.generator import ImageGenerator, ImageGeneratorConfig
    from panoramia.modalities.image.training import ImageModelConfig, train_image_directory
    from panoramia.targets import load_target

    cifar = experiment("cifar10")
    rng = np.random.default_rng(0)
    accelerator = "gpu" if device.type == "cuda" else "cpu"
    on_device = {"accelerator": accelerator, "devices": "1"}
    if args.num_workers is not None:
        on_device["num_workers"] = args.num_workers
    target = {**known_fields(ImageModelConfig, cifar["target"]), **on_device, "epochs": 1}
    if args.smoke:
        target.update(widen=1, batch_size=16)
    config = ImageModelConfig(**target)
    batch = config.batch_size
    found = []
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "wrn"
        train = fake_images((args.warmup + args.batches) * batch, rng)

        def fit_target(callbacks: list) -> None:
            train_image_directory(train, config, directory, seed=0, n_classes=10,
                                  callbacks=callbacks)  # fmt: skip

        measured = timed_training(fit_target, batch=batch, units_per_example=1, device=device,
                                  warmup=args.warmup, monitor=monitor)  # fmt: skip
        name = f"WRN-{6 * config.blocks + 4}-{config.widen} training"
        found.append((Stage("image", f"target {name}", "images", 200 * CIFAR_TRAIN,
                            "200 epochs × 50,000"), measured))  # fmt: skip
        found.append((Stage("image", "h + 3 stand-ins (same recipe) training", "images",
                            60 * 20_000 + 3 * 60 * 30_000,
                            "h 60 epochs × 20,000; stand-ins 60 × 30,000 each"),
                      measured))  # fmt: skip
        if args.compare_determinism:
            from panoramia.modalities.image.image_module import ImageDataModule, Normalization
            from panoramia.modalities.image.nets import ResNet
            from panoramia.models.training import TrainingConfig, fit_classifier_on

            def fit_fast(callbacks: list) -> None:
                data = ImageDataModule(train, None, normalization=Normalization.of(train.images),
                                       batch_size=batch, augment=config.augment,
                                       num_workers=config.num_workers)  # fmt: skip
                network = ResNet(
                    in_channels=3, n_classes=10, blocks=config.blocks, width=config.width,
                    widen=config.widen, dropout=config.dropout,
                )  # fmt: skip
                settings = TrainingConfig(
                    epochs=1, batch_size=batch, learning_rate=config.learning_rate,
                    weight_decay=config.weight_decay, optimizer=config.optimizer,
                    deterministic=False, **config.trainer_settings(),
                )  # fmt: skip
                fit_classifier_on(network, data, settings, validate=False, callbacks=callbacks)

            fast = timed_training(fit_fast, batch=batch, units_per_example=1, device=device,
                                  warmup=args.warmup, monitor=monitor)  # fmt: skip
            found.append((Stage("image", f"target {name}, deterministic=False", "images",
                                200 * CIFAR_TRAIN, "200 epochs × 50,000"), fast))  # fmt: skip
        model = load_target(directory, device=device)
        scored = fake_images(4 * 1024 if not args.smoke else 64, rng)
        losses = timed_calls(lambda: model.per_example_loss(scored), calls=args.calls,
                             units=len(scored), batch=1024, device=device,
                             monitor=monitor)  # fmt: skip
        found.append((Stage("image", "losses under f, h, 3 stand-ins", "images",
                            5 * (CIFAR_TRAIN + CIFAR_TEST + 20_000),
                            "5 models × (50,000 members + 10,000 real + 20,000 synthetic)"),
                      losses))  # fmt: skip

    from panoramia.pipeline.registry import existing_config_file

    ddpm = OmegaConf.to_container(OmegaConf.load(existing_config_file("generator/ddpm.yaml")))
    settings = {**known_fields(ImageGeneratorConfig, {**ddpm, **cifar["generator"]}),
                **on_device, "epochs": 1}  # fmt: skip
    if args.smoke:
        settings.update(width=8, batch_size=16, sampling_steps=2)
    generator = ImageGenerator(ImageGeneratorConfig(**settings))
    members = fake_images((args.warmup + args.batches) * generator.config.batch_size + 1, rng)
    diffusion = timed_training(
        lambda callbacks: generator.fit(members, seed=0, callbacks=callbacks),
        batch=generator.config.batch_size, units_per_example=1, device=device,
        warmup=args.warmup, monitor=monitor,
    )  # fmt: skip
    found.append((Stage("image", f"generator DDPM (width {generator.config.width}) training",
                        "images", 200 * 20_000, "200 epochs × 20,000 (40 % of the members)"),
                  diffusion))  # fmt: skip
    from panoramia.modalities.image.generator import SAMPLE_BATCH

    per_call = SAMPLE_BATCH.get(device.type, SAMPLE_BATCH["cpu"]) if not args.smoke else 8
    sampling = timed_calls(lambda: generator.sample(per_call, seed=1), calls=args.calls,
                           units=per_call, batch=per_call, device=device,
                           monitor=monitor)  # fmt: skip
    cfg = generator.config
    found.append((Stage("image", f"DDPM sampling ({cfg.sampling_steps} DDIM steps, guidance "
                        f"{cfg.guidance:g})", "images", 60_000,
                        "60,000 drawn for a pool the filter keeps 20,000+ of"),
                  sampling))  # fmt: skip
    return found


def text_stages(
    args: argparse.Namespace, device: torch.device, monitor: GpuMonitor
) -> list[tuple[Stage, Measured]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    from panoramia.modalities.text.causal_lm import CausalLMConfig, fit_causal_lm
    from panoramia.modalities.text.causal_lm_losses import LOSS_BATCH, token_losses
    from panoramia.modalities.text.documents import TextSet
    from panoramia.modalities.text.generator import TextGenerator, TextGeneratorConfig

    wikitext = experiment("wikitext_gpt2")
    length = int(wikitext["data"]["chunk_length"])
    accelerator = "gpu" if device.type == "cuda" else "cpu"
    on_device = {"accelerator": accelerator, "devices": "1"}
    if args.num_workers is not None:
        on_device["num_workers"] = args.num_workers
    size = {"n_layer": 12, "n_embd": 768, "n_head": 12} if not args.smoke else {
        "n_layer": 2, "n_embd": 64, "n_head": 2}  # fmt: skip
    architecture = GPT2Config(**size, vocab_size=50_257, n_positions=1024)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(architecture)
    parameters = sum(p.numel() for p in model.parameters()) / 1e6
    rng = np.random.default_rng(0)
    found = []

    def fine_tuning(section: str, tokens_per_example: int) -> Measured:
        model.train()  # as a fresh model arrives (fit_causal_lm returns it in eval mode)
        settings = {**known_fields(CausalLMConfig, wikitext[section]), **on_device, "epochs": 1}
        settings.pop("base_model", None)
        if args.smoke:
            settings["batch_size"] = 4
        config = CausalLMConfig(**settings)
        n = (args.warmup + args.batches) * config.batch_size
        sequences = rng.integers(0, 50_257, (n, tokens_per_example))
        return timed_training(
            lambda callbacks: fit_causal_lm(model, sequences, config, seed=0,
                                            callbacks=callbacks),
            batch=config.batch_size, units_per_example=tokens_per_example, device=device,
            warmup=args.warmup, monitor=monitor,
        )  # fmt: skip

    generator_training = fine_tuning("generator", 2 * length)
    found.append((Stage("text", f"generator GPT-2 ({parameters:.0f} M) fine-tuning", "tokens",
                        10 * WIKITEXT_CHUNKS // 2 * 2 * length,
                        "10 epochs × 50,000 pairs of 2 × 64 tokens"),
                  generator_training))  # fmt: skip
    helper_training = fine_tuning("helper", length)
    found.append((Stage("text", "h + 3 stand-ins fine-tuning", "tokens",
                        4 * 10 * 50_000 * length, "4 models × 10 epochs × 50,000 chunks"),
                  helper_training))  # fmt: skip
    model = model.to(device)
    chunks = rng.integers(0, 50_257, (4 * LOSS_BATCH if not args.smoke else 8, length))
    losses = timed_calls(lambda: token_losses(model, chunks), calls=args.calls,
                         units=chunks.size, batch=LOSS_BATCH, device=device,
                         monitor=monitor)  # fmt: skip
    found.append((Stage("text", "per-token losses under f, h, 3 stand-ins", "tokens",
                        5 * 2 * WIKITEXT_CHUNKS * length,
                        "5 models × 200,000 chunks (members, real, synthetic)"),
                  losses))  # fmt: skip
    sampling = known_fields(TextGeneratorConfig, wikitext["generator"])
    sampling.pop("base_model", None)
    config = TextGeneratorConfig(**{**sampling, **on_device})
    if args.smoke:
        config = dataclasses.replace(config, generation_batch=4)
    text_generator = TextGenerator(config)
    text_generator.model = model
    n = config.generation_batch
    prompts = TextSet(rng.integers(0, 50_257, (max(1, n // config.samples_per_prompt), length)),
                      np.arange(max(1, n // config.samples_per_prompt)),
                      np.zeros(max(1, n // config.samples_per_prompt), np.int64))  # fmt: skip
    generation = timed_calls(lambda: text_generator.sample(prompts, n, seed=1),
                             calls=args.calls, units=n * length, batch=n, device=device,
                             monitor=monitor)  # fmt: skip
    found.append((Stage("text", f"generation (top-k {config.top_k}, {length} new tokens)",
                        "tokens", 8 * 50_000 * length, "8 samples × 50,000 prompts × 64 tokens"),
                  generation))  # fmt: skip
    return found


@contextlib.contextmanager
def monitoring(device: torch.device) -> Iterator[GpuMonitor]:
    monitor = GpuMonitor(device)
    try:
        yield monitor
    finally:
        monitor.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--batches", type=int, default=2, help="timed steps per training")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed steps first (default: 5 on CUDA, 1 on the CPU)")  # fmt: skip
    parser.add_argument("--calls", type=int, default=2, help="timed calls per inference stage")
    parser.add_argument(
        "--num-workers", type=int, default=None,
        help="DataLoader workers (default: the config's on CUDA, 0 on the CPU)",
    )  # fmt: skip
    parser.add_argument("--only", choices=("image", "text"), default=None)
    parser.add_argument("--compare-determinism", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes: checks the script")
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.warmup is None:
        args.warmup = 5 if device.type == "cuda" else 1
    if args.num_workers is None and device.type != "cuda":
        args.num_workers = 0
    torch.manual_seed(0)
    started = time.perf_counter()
    rows = []
    with monitoring(device) as monitor:
        if args.only in (None, "image"):
            rows += image_stages(args, device, monitor)
        if args.only in (None, "text"):
            rows += text_stages(args, device, monitor)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device {device} ({name}; {torch.get_num_threads()} CPU threads; torch "
          f"{torch.__version__}); {args.batches} timed steps per training, {args.calls} timed "
          f"calls per inference stage; {time.perf_counter() - started:.0f} s in all")  # fmt: skip
    print("| stage | batch | timed s | throughput | peak MB (GPU) | GPU busy | "
          "full config: units (assumed) | full config h |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    totals: dict[str, float] = {}
    for stage, measured in rows:
        rate = measured.units / measured.seconds
        hours = stage.full_units / rate / 3600
        if "deterministic=False" not in stage.name:
            totals[stage.audit] = totals.get(stage.audit, 0.0) + hours
        memory = f"{measured.peak_mb:,.0f}"
        if measured.gpu_peak_mb is not None:
            memory += f" ({measured.gpu_peak_mb:,.0f})"
        busy = "–" if measured.gpu_busy is None else f"{measured.gpu_busy:.0%}"
        print(f"| {stage.audit}: {stage.name} | {measured.batch} | {measured.seconds:.2f} | "
              f"{rate:,.0f} {stage.unit}/s | {memory} | {busy} | "
              f"{stage.full_units:,.0f} ({stage.assumption}) | {hours:,.2f} |")  # fmt: skip
    for audit, hours in totals.items():
        print(f"extrapolated {audit} audit (+experiment="
              f"{'cifar10' if audit == 'image' else 'wikitext_gpt2'}) on {name}: "
              f"{hours:,.1f} h, one seed")  # fmt: skip


if __name__ == "__main__":
    main()
