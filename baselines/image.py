"""Image baselines: the labeler (trained on D_G) and the helper model h (trained on synthetic).

The labeler relabels synthetic images by drawing each label from its predicted class
probabilities (as :class:`baselines.labeler.TabularLabeler` does for rows), so that p(y | x) of
synthetic images follows a model of the real data rather than the generator's conditioning.
h has the target's architecture and task and never sees a real image; its epoch is chosen on a
synthetic validation split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from baselines.labeler import draw_classes
from panoramia.data.images import ImageSet
from panoramia.models.image_training import ImageModelConfig, train_image_directory
from panoramia.targets import load_target


@dataclass
class ImageHelperConfig(ImageModelConfig):
    """h: a network of the target's architecture trained on this many synthetic images."""

    n_images: int = 2000
    validation_fraction: float = 0.2


class ImageLabeler:
    """A classifier trained on real labelled images (D_G only) that labels synthetic ones."""

    def __init__(self, config: ImageModelConfig, directory: Path, *, seed: int) -> None:
        self.config = config
        self.directory = directory
        self.seed = seed
        self.model = None

    def fit(self, real: ImageSet, *, n_classes: int) -> ImageLabeler:
        train_image_directory(
            real, self.config, self.directory, seed=self.seed, n_classes=n_classes
        )
        self.model = load_target(self.directory)
        return self

    def relabel(self, images: ImageSet, *, seed: int) -> ImageSet:
        """The same images with labels drawn from the labeler's class probabilities."""
        import torch

        assert self.model is not None
        logits = torch.from_numpy(self.model.logits(images.images))  # type: ignore[attr-defined]
        probabilities = torch.softmax(logits.double(), dim=1).numpy()
        return ImageSet(images.images, draw_classes(probabilities, seed=seed).astype(np.int64))


def train_image_helper(
    synthetic: ImageSet,
    config: ImageHelperConfig,
    directory: Path,
    *,
    seed: int,
    n_classes: int,
) -> dict[str, float]:
    """Train h on labelled synthetic images, holding out a synthetic validation split."""
    order = np.random.default_rng(seed).permutation(len(synthetic))
    n_val = max(1, round(config.validation_fraction * len(synthetic)))
    return train_image_directory(
        synthetic.take(order[n_val:]), config, directory, seed=seed, n_classes=n_classes,
        validation=synthetic.take(order[:n_val]),
    )  # fmt: skip
