"""The image generator, trained with Lightning on D_G only: a class-conditional DDPM or DCGAN.

``ImageGenerator(config).fit(members, seed=...)`` / ``.sample(n, seed=...)`` (an
:class:`~panoramia.modalities.image.images.ImageSet` of uint8 images with the classes they were
drawn for, in proportion to D_G's class frequencies) / ``.save(dir)`` /
``ImageGenerator.load(dir)``.

``model: ddpm`` (:mod:`panoramia.modalities.image.ddpm`, the image audit's default) or ``dcgan``
(:mod:`panoramia.modalities.image.dcgan`, cheaper). A CNN separates the DCGAN's samples from real
images completely, whatever its variant, which pins the baseline's c_lb at its ceiling; the DDPM's,
with the black level below, it does not, which is why the DDPM is the image audit's default.

With the DDPM the audit's weak point moves to the losses: a target trained on real images rates
the samples differently from real images whether or not it saw the members (guided samples are
easier), and the attack reads that gap. The plug-in's ``conf/generator/ddpm.yaml`` therefore
turns on loss matching (:mod:`panoramia.modalities.image.loss_matching`, in the synthetic
stage). The DDPM costs far more than the DCGAN to train and to sample (``sampling_steps`` guided
network evaluations per sample); ``generation_seed`` lets repeated seeds reuse its stages.
``benchmarks/image_generator_quality.py`` prints the separability figures and
``benchmarks/image_throughput.py`` the training and sampling throughput.

Measured figures: docs/RESULTS.md §1.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from panoramia.audit_settings import values
from panoramia.devices import forward_passes, inference_device, prepare
from panoramia.errors import InputError
from panoramia.generators.seeding import chunked_noise
from panoramia.modalities.image.images import ImageSet
from panoramia.modalities.image.settings import ImageGeneratorModel, check_image_generator
from panoramia.models.device_settings import DeviceSettings
from panoramia.setting_bounds import BELOW_ONE, COUNT, FRACTION, RATE, Limit, Range, ranged

WEIGHTS = "generator.safetensors"
SETTINGS = "generator.json"
MODELS = values(ImageGeneratorModel)
SAMPLE_BATCH = {"cpu": 256, "cuda": 2048}
"""Images per sampling call, by device type (multiples of
``panoramia.generators.seeding.NOISE_CHUNK``:
the same images for a seed on either); a GPU takes larger batches to stay busy."""
MAX_BLACK_LEVEL = 32
BLACK_TOLERANCE = 0.015


@dataclass
class ImageGeneratorConfig(DeviceSettings):
    """The generative model and its training (Lightning, Adam, EMA of the weights)."""

    model: str = ImageGeneratorModel.DCGAN.value
    """``dcgan`` or ``ddpm`` (defaults below are the DCGAN's; the plug-in's
    ``conf/generator/ddpm.yaml`` has the DDPM's)."""
    epochs: int = ranged(100, COUNT, limit=Limit.EPOCHS)
    batch_size: int = ranged(64, COUNT)
    width: int = ranged(32, COUNT, limit=Limit.WIDTH)
    """Channels of the networks' first layer (ddpm: a multiple of 8)."""
    learning_rate: float = ranged(2e-4, RATE)
    ema_decay: float = ranged(0.995, BELOW_ONE)
    latent: int = ranged(64, COUNT)
    """dcgan: the noise's dimension."""
    diffusion_steps: int = ranged(1000, COUNT)
    """ddpm: steps of the noise schedule."""
    label_dropout: float = ranged(0.1, BELOW_ONE)
    """ddpm: share of training labels dropped (for classifier-free guidance)."""
    offset_noise: float = ranged(0.1, FRACTION)
    """ddpm: standard deviation of a per-image, per-channel constant added to the training noise
    (lets the model correct an image's overall brightness)."""
    sampling_steps: int = ranged(50, COUNT)
    """ddpm: DDIM steps per sample."""
    guidance: float = ranged(1.0, Range(0, 100))
    """ddpm: classifier-free guidance weight (1: none)."""
    black_level: int | None = None
    """Sampled pixel values up to this level (0–255) are set to 0. None: from D_G at fit
    (:func:`black_level_of`): MNIST's background is exactly black, and a generator's faint
    haze there is what a distinguisher spots first; natural images get 0 (no change)."""

    def __post_init__(self) -> None:
        check_image_generator(asdict(self))  # the job's own rule (its settings module)


def black_level_of(images: np.ndarray) -> int:
    """The largest level v ≤ MAX_BLACK_LEVEL such that the pixels of ``images`` (uint8) in
    (0, v] are at most BLACK_TOLERANCE times as many as the pixels that are exactly 0: a
    background of pure black with next to nothing just above it (MNIST: 16), else 0."""
    counts = np.bincount(images.ravel(), minlength=256)
    if counts[0] == 0:
        return 0
    dark = np.cumsum(counts[1 : MAX_BLACK_LEVEL + 1]) / counts[0]
    return int(np.count_nonzero(dark <= BLACK_TOLERANCE))


def check_shape(shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """``shape`` (H, W, C) if both generators can make such images, else an InputError."""
    height, width, _ = shape
    if height != width or height % 4 or height < 8:
        raise InputError(
            f"generator: images must be square with a side divisible by 4 (≥ 8), got {shape}"
        )
    return shape


class ImageGenerator:
    def __init__(self, config: ImageGeneratorConfig) -> None:
        self.config = config
        self.network = None
        self.shape: tuple[int, int, int] | None = None
        self.class_prior: np.ndarray | None = None

    def _build(self, shape: tuple[int, int, int], n_classes: int):
        """The sampling network for images of ``shape`` (H, W, C)."""
        height, _, channels = check_shape(shape)
        if self.config.model == "ddpm":
            from panoramia.modalities.image.ddpm import ConditionalUNet

            return ConditionalUNet(channels, n_classes, self.config.width)
        from panoramia.modalities.image.dcgan import ConditionalGenerator

        return ConditionalGenerator(
            channels, height, n_classes, self.config.latent, self.config.width
        )

    def _lightning_module(self, n_classes: int):
        config = self.config
        channels, size = self.shape[2], self.shape[0]  # type: ignore[index]
        if config.model == "ddpm":
            from panoramia.modalities.image.ddpm import ConditionalDDPM

            return ConditionalDDPM(
                channels, n_classes, width=config.width, diffusion_steps=config.diffusion_steps,
                label_dropout=config.label_dropout, offset_noise=config.offset_noise,
                learning_rate=config.learning_rate, ema_decay=config.ema_decay,
            )  # fmt: skip
        from panoramia.modalities.image.dcgan import ConditionalDCGAN

        return ConditionalDCGAN(
            channels, size, n_classes, latent=config.latent, width=config.width,
            learning_rate=config.learning_rate, ema_decay=config.ema_decay,
        )  # fmt: skip

    def fit(self, members: ImageSet, *, seed: int, callbacks: list | None = None) -> ImageGenerator:
        """Train on ``members`` (D_G); the EMA weights are kept for sampling. ``callbacks``
        join the trainer's (a benchmark's step timer)."""
        import lightning as L
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        from panoramia.models.training import TrainingConfig, device_count, make_trainer

        self.shape = members.shape
        n_classes = int(members.labels.max()) + 1
        self.class_prior = np.bincount(members.labels, minlength=n_classes) / len(members)
        check_shape(self.shape)
        if self.config.black_level is None:
            self.config = replace(self.config, black_level=black_level_of(members.images))
        L.seed_everything(seed, workers=True, verbose=False)
        model = self._lightning_module(n_classes)
        images = torch.from_numpy(members.images).permute(0, 3, 1, 2).float() / 127.5 - 1.0
        loader = DataLoader(
            TensorDataset(images, torch.from_numpy(members.labels)),
            batch_size=self.config.batch_size, shuffle=True,
            drop_last=len(members) > self.config.batch_size,
            generator=torch.Generator().manual_seed(seed), num_workers=self.config.num_workers,
            pin_memory=torch.cuda.is_available(),
        )  # fmt: skip
        training = TrainingConfig(
            epochs=self.config.epochs, seed=seed, **self.config.trainer_settings()
        )  # fmt: skip
        if (
            self.config.model == "dcgan"
            and device_count(training.accelerator, training.devices) > 1
        ):
            raise InputError(
                "generator.devices: the DCGAN trains on one device (its two optimisers step "
                "by hand, which data-parallel training does not support); the DDPM trains on "
                "several"
            )
        make_trainer(training, validate=False, callbacks=callbacks).fit(model, loader)
        self.network = model.ema.cpu().eval()
        return self

    def sample(self, n: int, *, seed: int) -> ImageSet:
        """``n`` uint8 images with their classes, reproducible for a given ``seed``."""
        import torch

        if self.network is None or self.class_prior is None or self.shape is None:
            raise RuntimeError("fit or load the generator first")
        rng = np.random.default_rng(seed)
        labels = rng.choice(self.class_prior.size, size=n, p=self.class_prior).astype(np.int64)
        generator = torch.Generator().manual_seed(seed)
        device = inference_device(self.config.accelerator, self.config.devices)
        network = prepare(self.network, device)
        parts, per_call = [], SAMPLE_BATCH.get(device.type, SAMPLE_BATCH["cpu"])
        with forward_passes(device):  # bf16 autocast on a GPU; the images end as uint8
            for start in range(0, n, per_call):
                classes = torch.from_numpy(labels[start : start + per_call])
                batch = self._sample_batch(network, classes, generator).float().cpu()
                parts.append(((batch + 1.0) * 127.5).round().clamp(0, 255).byte())
        self.network = network.cpu()
        images = (
            torch.cat(parts).permute(0, 2, 3, 1).numpy()
            if parts
            else np.zeros((0, *self.shape), np.uint8)
        )
        images[images <= (self.config.black_level or 0)] = 0
        return ImageSet(np.ascontiguousarray(images), labels)

    def _sample_batch(self, network, classes, generator):
        """Images in [−1, 1], shape (len(classes), C, H, W), on the network's device."""

        device = next(network.parameters()).device
        if self.config.model == "dcgan":
            noise = chunked_noise(len(classes), (self.config.latent,), generator)
            return network(noise.to(device), classes.to(device))
        from panoramia.modalities.image.ddpm import ddim_sample

        height, width, channels = self.shape
        return ddim_sample(
            network, classes, (channels, height, width),
            diffusion_steps=self.config.diffusion_steps,
            sampling_steps=self.config.sampling_steps, guidance=self.config.guidance,
            generator=generator,
        )  # fmt: skip

    def save(self, directory: Path) -> None:
        from safetensors.torch import save_file

        assert self.network is not None
        assert self.class_prior is not None
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.contiguous() for k, v in self.network.state_dict().items()}
        save_file(state, directory / WEIGHTS)
        settings = {
            "config": asdict(self.config),
            "shape": list(self.shape or ()),
            "class_prior": self.class_prior.tolist(),
        }
        (directory / SETTINGS).write_text(json.dumps(settings, indent=1))

    @classmethod
    def load(cls, directory: Path) -> ImageGenerator:
        from safetensors.torch import load_file

        settings = json.loads((directory / SETTINGS).read_text())
        generator = cls(ImageGeneratorConfig(**settings["config"]))
        generator.shape = tuple(settings["shape"])
        generator.class_prior = np.asarray(settings["class_prior"])
        network = generator._build(generator.shape, generator.class_prior.size)
        network.load_state_dict(load_file(directory / WEIGHTS))
        generator.network = network.eval()
        return generator
