"""A class-conditional DDPM as a Lightning module, and its DDIM sampler.

The denoiser is a small UNet over (C, S, S) images in [−1, 1]: a residual block at S, S/2 and
S/4 (widths w, 2w, 4w), two at the bottom, and nearest-neighbour upsampling with skip
connections on the way back. The time step (sinusoidal) and the class are embedded and scale
and shift every block's normalised features; the output layer has no normalisation (one
there removes each image's mean, so the model cannot set a background's level; measured
figures: docs/RESULTS.md §2). Training (Ho et al. 2020) draws a step t uniformly from the
cosine schedule (Nichol & Dhariwal 2021) and regresses the noise added to the image, with
"offset noise" (a per-image, per-channel constant of standard deviation ``offset_noise``
added to it) so that the model also learns to correct an image's overall level; labels are
dropped (replaced by the extra "no class" index) with probability ``label_dropout`` so that
sampling can use classifier-free guidance (Ho & Salimans 2022).
The weights used for sampling are an exponential moving average of the trained ones.
Sampling is deterministic DDIM (Song et al. 2021) on ``sampling_steps`` evenly spaced steps.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F

from panoramia.generators.seeding import chunked_noise
from panoramia.modalities.image.ema import update_ema

if TYPE_CHECKING:
    from lightning.pytorch.utilities.types import OptimizerLRSchedulerConfig

GROUPS = 8
"""GroupNorm groups: the width must be a multiple of it."""
WARMUP_STEPS = 200
"""Optimiser steps over which the learning rate rises linearly to its value."""


def cosine_alpha_bar(diffusion_steps: int) -> torch.Tensor:
    """ᾱ_t, the share of the image's variance left at steps t = 1..T, shape (T,), float32."""
    grid = torch.arange(diffusion_steps + 1, dtype=torch.float64) / diffusion_steps
    curve = torch.cos((grid + 0.008) / 1.008 * math.pi / 2) ** 2
    return (curve / curve[0]).clamp(1e-5, 1.0)[1:].float()


class ResidualBlock(nn.Module):
    """GroupNorm–SiLU–conv twice, with the embedding as a scale and shift in between."""

    def __init__(self, inputs: int, outputs: int, embedding: int) -> None:
        super().__init__()
        self.norm_in = nn.GroupNorm(GROUPS, inputs)
        self.conv_in = nn.Conv2d(inputs, outputs, 3, 1, 1)
        self.modulation = nn.Linear(embedding, 2 * outputs)
        self.norm_out = nn.GroupNorm(GROUPS, outputs)
        self.conv_out = nn.Conv2d(outputs, outputs, 3, 1, 1)
        self.skip = nn.Conv2d(inputs, outputs, 1) if inputs != outputs else nn.Identity()

    def forward(self, x: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        hidden = self.conv_in(F.silu(self.norm_in(x)))
        scale, shift = self.modulation(embedding)[:, :, None, None].chunk(2, dim=1)
        hidden = self.norm_out(hidden) * (1.0 + scale) + shift
        return self.conv_out(F.silu(hidden)) + self.skip(x)


class ConditionalUNet(nn.Module):
    """ε̂(x_t, t, y): the noise in x_t, shape (N, C, S, S); class ``n_classes`` means none."""

    def __init__(self, channels: int, n_classes: int, width: int = 16) -> None:
        super().__init__()
        self.embedding = 8 * width
        self.time = nn.Sequential(
            nn.Linear(self.embedding, self.embedding),
            nn.SiLU(),
            nn.Linear(self.embedding, self.embedding),
        )
        self.classes = nn.Embedding(n_classes + 1, self.embedding)
        self.stem = nn.Conv2d(channels, width, 3, 1, 1)
        self.full_block = ResidualBlock(width, width, self.embedding)
        self.down_half = nn.Conv2d(width, width, 3, 2, 1)
        self.half_block = ResidualBlock(width, 2 * width, self.embedding)
        self.down_quarter = nn.Conv2d(2 * width, 2 * width, 3, 2, 1)
        self.bottom = nn.ModuleList(
            [
                ResidualBlock(2 * width, 4 * width, self.embedding),
                ResidualBlock(4 * width, 4 * width, self.embedding),
            ]
        )
        self.up_half = ResidualBlock(6 * width, 2 * width, self.embedding)
        self.up_full = ResidualBlock(3 * width, width, self.embedding)
        self.head = nn.Sequential(nn.SiLU(), nn.Conv2d(width, channels, 3, 1, 1))

    def _embed(self, steps: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        half = self.embedding // 2
        frequencies = torch.exp(
            -math.log(10_000.0) * torch.arange(half, device=steps.device) / half
        )
        angles = steps.float()[:, None] * frequencies[None]
        return self.time(torch.cat([angles.sin(), angles.cos()], dim=1)) + self.classes(labels)

    def forward(self, x: torch.Tensor, steps: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        embedding = self._embed(steps, labels)
        full = self.full_block(self.stem(x), embedding)
        half = self.half_block(self.down_half(full), embedding)
        hidden = self.down_quarter(half)
        for block in self.bottom:
            hidden = block(hidden, embedding)
        hidden = F.interpolate(hidden, scale_factor=2, mode="nearest")
        hidden = self.up_half(torch.cat([hidden, half], dim=1), embedding)
        hidden = F.interpolate(hidden, scale_factor=2, mode="nearest")
        return self.head(self.up_full(torch.cat([hidden, full], dim=1), embedding))


class ConditionalDDPM(L.LightningModule):
    """Noise-regression steps on (image in [−1, 1], label) batches; Adam with a warm-up."""

    alpha_bar: torch.Tensor
    """ᾱ_t (:func:`cosine_alpha_bar`), a buffer that follows the module's device."""

    def __init__(
        self,
        channels: int,
        n_classes: int,
        *,
        width: int,
        diffusion_steps: int,
        label_dropout: float,
        offset_noise: float,
        learning_rate: float,
        ema_decay: float,
    ) -> None:
        super().__init__()
        self.offset_noise = offset_noise
        self.network = ConditionalUNet(channels, n_classes, width)
        self.ema = copy.deepcopy(self.network).requires_grad_(False)
        self.register_buffer("alpha_bar", cosine_alpha_bar(diffusion_steps), persistent=False)
        self.n_classes = n_classes
        self.label_dropout = label_dropout
        self.learning_rate = learning_rate
        self.ema_decay = ema_decay

    def configure_model(self) -> None:
        from panoramia.models.training import channels_last_on_cuda

        channels_last_on_cuda(self, self)  # the network and its average alike

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        images, labels = batch
        if images.is_cuda:
            images = images.contiguous(memory_format=torch.channels_last)
        dropped = torch.rand(labels.shape, device=labels.device) < self.label_dropout
        labels = labels.masked_fill(dropped, self.n_classes)
        steps = torch.randint(0, self.alpha_bar.numel(), labels.shape, device=labels.device)
        noise = torch.randn_like(images)
        noise = noise + self.offset_noise * torch.randn_like(images[:, :, :1, :1])
        kept = self.alpha_bar[steps][:, None, None, None]
        noisy = kept.sqrt() * images + (1.0 - kept).sqrt() * noise
        loss = F.mse_loss(self.network(noisy, steps, labels), noise)
        self.log("loss", loss, prog_bar=True, on_epoch=True, on_step=False)
        return loss

    def on_train_batch_end(self, *_: object) -> None:
        # Warm-up of the average: early weights are forgotten fast.
        step = self.global_step
        update_ema(self.ema, self.network, min(self.ema_decay, (1 + step) / (10 + step)))

    def configure_optimizers(self) -> OptimizerLRSchedulerConfig:
        optimizer = torch.optim.Adam(self.network.parameters(), lr=self.learning_rate)
        warmup = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min(1.0, (step + 1) / WARMUP_STEPS)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": warmup, "interval": "step"}}


@torch.no_grad()
def ddim_sample(
    network: ConditionalUNet,
    labels: torch.Tensor,
    shape: tuple[int, int, int],
    *,
    diffusion_steps: int,
    sampling_steps: int,
    guidance: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Images in [−1, 1] of ``shape`` (C, S, S) for ``labels`` (N,), by deterministic DDIM.

    ``guidance`` 1 is the plain conditional model; above 1, classifier-free guidance
    ε̂ = ε̂(∅) + guidance·(ε̂(y) − ε̂(∅)) (twice the cost). The starting noise is drawn on the CPU
    from ``generator``, ``NOISE_CHUNK`` images at a time, so a seed gives the same images on any
    device and for any number of labels per call that is a multiple of ``NOISE_CHUNK``.
    """
    device = next(network.parameters()).device
    alpha_bar = cosine_alpha_bar(diffusion_steps).to(device)
    labels = labels.to(device)
    unconditional = torch.full_like(labels, network.classes.num_embeddings - 1)
    x = chunked_noise(len(labels), shape, generator).to(device)
    if device.type == "cuda" and len(shape) == 3:
        x = x.contiguous(memory_format=torch.channels_last)
    schedule = torch.linspace(diffusion_steps - 1, 0, sampling_steps).round().long().tolist()
    for position, step in enumerate(schedule):
        steps = torch.full_like(labels, step)
        if guidance == 1.0:
            noise = network(x, steps, labels)
        else:
            both = network(
                torch.cat([x, x]), torch.cat([steps, steps]), torch.cat([labels, unconditional])
            )
            conditional, free = both.chunk(2)
            noise = free + guidance * (conditional - free)
        kept = alpha_bar[step]
        clean = ((x - (1.0 - kept).sqrt() * noise) / kept.sqrt()).clamp(-1.0, 1.0)
        if position + 1 < len(schedule):
            noise = (x - kept.sqrt() * clean) / (1.0 - kept).sqrt()
            following = alpha_bar[schedule[position + 1]]
            x = following.sqrt() * clean + (1.0 - following).sqrt() * noise
    return clean
