"""A class-conditional DCGAN as a Lightning module (the networks and one training step).

The generator maps (noise z, class y) to an image in [−1, 1] of shape (C, S, S) by a linear
layer onto an S/4 × S/4 grid and two stride-2 transposed convolutions (output: a clamped,
slightly stretched tanh, see OVERSHOOT); the discriminator is a
spectrally normalised two-layer conv net with a class projection (Miyato & Koyama 2018):
logit = ψ(φ(x)) + ⟨embed(y), φ(x)⟩. Losses are the non-saturating GAN losses; the weights
used for sampling are an exponential moving average of the generator's (a cheap, standard
boost to sample quality).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, cast

import lightning as L
import torch
from torch import nn
from torch.nn.utils import spectral_norm

from panoramia.modalities.image.ema import update_ema

if TYPE_CHECKING:
    from lightning.pytorch.core.optimizer import LightningOptimizer

OVERSHOOT = 0.1
"""The output is (1 + OVERSHOOT)·tanh, clamped to [−1, 1]: black and white pixels are
reachable exactly. Real images hold point masses there (MNIST: ~80 % of pixels are exactly
0), which a plain tanh can only approach, leaving a faint speckle on every synthetic
background that a distinguisher spots at once."""


class ConditionalGenerator(nn.Module):
    def __init__(
        self, channels: int, size: int, n_classes: int, latent: int = 64, width: int = 64
    ) -> None:
        super().__init__()
        self.latent, self.width, self.grid = latent, width, size // 4
        self.embed = nn.Embedding(n_classes, latent)
        self.project = nn.Sequential(
            nn.Linear(2 * latent, 4 * width * self.grid * self.grid, bias=False),
            nn.BatchNorm1d(4 * width * self.grid * self.grid),
            nn.ReLU(inplace=True),
        )
        self.upsample = nn.Sequential(
            nn.ConvTranspose2d(4 * width, 2 * width, 4, 2, 1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(inplace=True),
            nn.ConvTranspose2d(2 * width, width, 4, 2, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, channels, 3, 1, 1),
        )

    def forward(self, noise: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden = self.project(torch.cat([noise, self.embed(labels)], dim=1))
        pixels = self.upsample(hidden.view(-1, 4 * self.width, self.grid, self.grid))
        return ((1.0 + OVERSHOOT) * torch.tanh(pixels)).clamp(-1.0, 1.0)


class ProjectionDiscriminator(nn.Module):
    def __init__(self, channels: int, size: int, n_classes: int, width: int = 64) -> None:
        super().__init__()
        features = 2 * width * (size // 4) ** 2
        self.body = nn.Sequential(
            spectral_norm(nn.Conv2d(channels, width, 4, 2, 1)),
            nn.LeakyReLU(0.2, inplace=True),
            spectral_norm(nn.Conv2d(width, 2 * width, 4, 2, 1)),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Flatten(),
        )
        self.out = spectral_norm(nn.Linear(features, 1))
        self.embed = spectral_norm(nn.Embedding(n_classes, features))

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        features = self.body(images)
        return self.out(features).squeeze(1) + (self.embed(labels) * features).sum(dim=1)


class ConditionalDCGAN(L.LightningModule):
    """Alternating discriminator / generator Adam steps on (image in [−1, 1], label) batches."""

    def __init__(
        self,
        channels: int,
        size: int,
        n_classes: int,
        *,
        latent: int,
        width: int,
        learning_rate: float,
        ema_decay: float,
    ) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.generator = ConditionalGenerator(channels, size, n_classes, latent, width)
        self.discriminator = ProjectionDiscriminator(channels, size, n_classes, width)
        self.ema = copy.deepcopy(self.generator).requires_grad_(False)
        self.learning_rate = learning_rate
        self.ema_decay = ema_decay
        self.latent = latent
        self.n_classes = n_classes

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        real, labels = batch
        # a list: configure_optimizers returns two
        g_opt, d_opt = cast("list[LightningOptimizer]", self.optimizers())
        noise = torch.randn(real.shape[0], self.latent, device=real.device)
        fake = self.generator(noise, labels)

        d_loss = nn.functional.softplus(-self.discriminator(real, labels)).mean()
        d_loss = d_loss + nn.functional.softplus(self.discriminator(fake.detach(), labels)).mean()
        d_opt.zero_grad()
        self.manual_backward(d_loss)
        d_opt.step()

        g_loss = nn.functional.softplus(-self.discriminator(fake, labels)).mean()
        g_opt.zero_grad()
        self.manual_backward(g_loss)
        g_opt.step()
        update_ema(self.ema, self.generator, self.ema_decay)
        self.log_dict(
            {"d_loss": d_loss, "g_loss": g_loss}, prog_bar=True, on_epoch=True, on_step=False
        )

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        betas = (0.5, 0.999)
        return [
            torch.optim.Adam(self.generator.parameters(), lr=self.learning_rate, betas=betas),
            torch.optim.Adam(self.discriminator.parameters(), lr=self.learning_rate, betas=betas),
        ]
