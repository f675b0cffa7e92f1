"""Image baselines: the labeler (trained on D_G) and the helper model h.

The labeler relabels synthetic images by drawing each label from its predicted class
probabilities (as :class:`panoramia.modalities.tabular.helper.TabularLabeler` does for rows), so
that p(y | x) of synthetic images follows a model of the real data rather than the generator's
conditioning. h has the target's architecture and task and never sees an audited image: it trains on
synthetic images (PANORAMIA's h, ``helper=same_arch``) or on D_G (``helper=target_recipe``, the
image audit's default: the target's recipe, a reference model); its epoch is chosen on a
held-out fifth of its training images.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from panoramia.audit_settings import values
from panoramia.baselines.labels import draw_classes, held_out
from panoramia.devices import inference_device
from panoramia.modalities.image.images import ImageSet
from panoramia.modalities.image.settings import HelperData
from panoramia.modalities.image.training import ImageModelConfig, train_image_directory
from panoramia.setting_bounds import AMOUNT, BELOW_ONE, ranged
from panoramia.targets import load_target

if TYPE_CHECKING:
    from panoramia.modalities.image.targets import TorchImageTarget

HELPER_DATA = values(HelperData)


@dataclass
class ImageHelperConfig(ImageModelConfig):
    """h: a network of the target's architecture and task, trained on labelled images that are
    never audited: ``n_images`` synthetic ones (``training_data: synthetic``, PANORAMIA's
    design) or D_G, the real known members the generator learnt from (``real``)."""

    training_data: str = HelperData.SYNTHETIC.value
    n_images: int = ranged(2000, AMOUNT)
    """Synthetic images drawn for h; none are drawn when ``training_data`` is ``real`` (the
    filter and loss matching discard part of every draw, so each image costs more than one
    generator sample). Measured figures: docs/RESULTS.md §5."""
    validation_fraction: float = ranged(0.2, BELOW_ONE)


class ImageLabeler:
    """A classifier trained on real labelled images (D_G only) that labels synthetic ones."""

    def __init__(self, config: ImageModelConfig, directory: Path, *, seed: int) -> None:
        self.config = config
        self.directory = directory
        self.seed = seed
        self.model: TorchImageTarget | None = None

    def fit(self, real: ImageSet, *, n_classes: int) -> ImageLabeler:
        train_image_directory(
            real, self.config, self.directory, seed=self.seed, n_classes=n_classes
        )
        device = inference_device(self.config.accelerator, self.config.devices)
        # the directory train_image_directory wrote: an image target
        self.model = cast("TorchImageTarget", load_target(self.directory, device=device))
        return self

    def relabel(self, images: ImageSet, *, seed: int) -> ImageSet:
        """The same images with labels drawn from the labeler's class probabilities."""
        import torch

        assert self.model is not None
        logits = torch.from_numpy(self.model.logits(images.images))
        probabilities = torch.softmax(logits.double(), dim=1).numpy()
        return ImageSet(images.images, draw_classes(probabilities, seed=seed).astype(np.int64))


def train_image_helper(
    images: ImageSet,
    config: ImageHelperConfig,
    directory: Path,
    *,
    seed: int,
    n_classes: int,
) -> dict[str, float]:
    """Train h on labelled ``images``, holding out a validation split of them (the epoch with
    the lowest validation loss is kept); with ``validation_fraction`` 0, on all of them for
    every epoch."""
    order = np.random.default_rng(seed).permutation(len(images))
    n_val = held_out(config.validation_fraction, len(images))
    return train_image_directory(
        images.take(order[n_val:]), config, directory, seed=seed, n_classes=n_classes,
        validation=images.take(order[:n_val]) if n_val else None,
    )  # fmt: skip
