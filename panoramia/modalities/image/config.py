"""The image audit's schema (``panoramia-audit --config-name image``,
``panoramia/modalities/image/conf/image.yaml``).

Hydra rejects unknown keys and wrongly typed values against these dataclasses, so a tabular
option given to an image audit (or the reverse) fails before any stage runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from panoramia.modalities.image.distinguisher import ImageDistinguisherConfig
from panoramia.modalities.image.generator import ImageGeneratorConfig
from panoramia.modalities.image.helper import ImageHelperConfig
from panoramia.modalities.image.training import ImageModelConfig
from panoramia.pipeline.config import (
    DataConfigBase,
    JobConfigBase,
    QualityFilterConfig,
    TargetConfigBase,
    TrustedModulesMixin,
)
from panoramia.setting_bounds import COUNT, Limit, Range, ranged


@dataclass
class ImageDataConfig(DataConfigBase):
    """``mnist`` (embedded 5,000 images), ``digits`` (sklearn 8×8, tests) or ``files``
    (``members_path``/``nonmembers_path``: ``.npz``, an image folder or a CIFAR-10 batch
    directory)."""

    source: str = "mnist"
    layout: str = "auto"
    """files: ``auto``, ``npz``, ``folder`` or ``cifar``."""
    pool_size: int = ranged(2000, COUNT)


@dataclass
class ImageTargetConfig(TargetConfigBase, TrustedModulesMixin, ImageModelConfig):
    """The audited model: a demo target trained here (``kind: train``) or a directory
    (``kind: path``, a target.json with ``"modality": "image"``)."""

    name: str = "cnn"


@dataclass
class LossMatchingConfig:
    """Resample synthetic images so that a classifier trained on real images (two halves of
    D_G, cross-fitted) rates them as it rates real images it never saw (its per-image loss
    follows theirs, bin by bin): :mod:`panoramia.modalities.image.loss_matching`."""

    enabled: bool = False
    bins: int = ranged(10, COUNT)
    """Bins with equal shares of the held-out real images' losses."""
    max_drop: float = ranged(0.5, Range(0, 0.99))
    """Never drop more than this fraction of the candidates that reach this step."""
    epochs: int = ranged(40, COUNT, limit=Limit.EPOCHS)
    """Training epochs of each fold's classifier (a SmallCNN, random shifts). Too short a
    training leaves the classifier near chance, and matching on such losses does nothing.
    Measured figures: docs/RESULTS.md §3."""
    batch_size: int = ranged(64, COUNT)


@dataclass
class ImageGeneratorSettings(ImageGeneratorConfig):
    """The conditional generator (fields of ImageGeneratorConfig), then labelling, the
    real-vs-synthetic filter and loss matching."""

    relabel: bool = True
    """Draw synthetic labels from a labeler (a CNN trained on D_G)."""
    labeler_epochs: int = ranged(40, COUNT, limit=Limit.EPOCHS)
    labeler_batch_size: int = ranged(64, COUNT)
    """The labeler's training (a SmallCNN with random shifts on D_G). An under-trained
    labeler draws partly random labels, which h and f then see as high-loss synthetic images.
    Measured figures: docs/RESULTS.md §4."""
    filter: QualityFilterConfig = field(default_factory=QualityFilterConfig)
    loss_matching: LossMatchingConfig = field(default_factory=LossMatchingConfig)


@dataclass
class ImageJobConfig(JobConfigBase):
    modality: str = "image"
    data: ImageDataConfig = field(default_factory=ImageDataConfig)
    target: ImageTargetConfig = field(default_factory=ImageTargetConfig)
    generator: ImageGeneratorSettings = field(default_factory=ImageGeneratorSettings)
    helper: ImageHelperConfig = field(default_factory=ImageHelperConfig)
    distinguisher: ImageDistinguisherConfig = field(default_factory=ImageDistinguisherConfig)
