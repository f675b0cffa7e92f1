"""An image audit's example sets: ImageSets in ``.npz`` files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.data.images import ImageSet, concat, read_npz
from panoramia.pipeline.image.data import MEMBERS, NONMEMBERS
from panoramia.pipeline.stages.example_sets import ExampleSets


def write_images(images: ImageSet, indices: np.ndarray, path: Path) -> None:
    """Store ``images[indices]`` at ``path``."""
    images.take(indices).save(path)


def fill_images(members: ImageSet, others: ImageSet, take: np.ndarray) -> ImageSet:
    """Image i: member i where ``take[i]``, else other i (``take.size`` images)."""
    m = take.size
    return ImageSet(
        np.where(take[:, None, None, None], members.images[:m], others.images[:m]),
        np.where(take, members.labels[:m], others.labels[:m]),
    )


IMAGE_SETS = ExampleSets(
    suffix=".npz", members_file=MEMBERS, nonmembers_file=NONMEMBERS, read=read_npz,
    write=write_images, stack=lambda members, others: concat([members, others]),
    fill=fill_images,
)  # fmt: skip
