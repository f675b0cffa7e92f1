"""Structured configuration of the image audit (``panoramia-audit --config-name image``).

The tabular schema (:mod:`panoramia.pipeline.config`) keeps its types; the image audit has its
own schema, ``image_job_schema``, that ``conf/image.yaml`` extends. Hydra rejects unknown keys
and wrongly typed values against these dataclasses, so a tabular option given to an image
audit (or the reverse) fails before any stage runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baselines.image import ImageHelperConfig
from generators.image import ImageGeneratorConfig
from mia.image import ImageDistinguisherConfig
from panoramia.models.image_training import ImageModelConfig
from panoramia.pipeline.config import AuditConfig, ClaimConfig, QualityFilterConfig, SplitConfig


@dataclass
class ImageDataConfig:
    source: str = "mnist"
    """``mnist`` (embedded 5,000 images), ``digits`` (sklearn 8×8, tests) or ``files``."""
    members_path: str | None = None
    """files: the known members (``.npz``, image folder or CIFAR-10 batch directory)."""
    nonmembers_path: str | None = None
    """files: optional real non-members (for the O(1) and RM;RN reference audits)."""
    layout: str = "auto"
    """files: ``auto``, ``npz``, ``folder`` or ``cifar``."""
    pool_seed: int = 0
    """Embedded data: fixed shuffle into the target's pool, the control's pool and held-out
    real non-members."""
    pool_size: int = 2000
    max_members: int | None = None
    split: SplitConfig = field(default_factory=SplitConfig)


@dataclass
class ImageTargetConfig(ImageModelConfig):
    """The audited model: a demo target trained here (``kind: train``) or a directory."""

    kind: str = "train"
    name: str = "cnn"
    members: str = "same"
    """Demo targets: ``same`` (trained on the audited members) or ``disjoint`` (control)."""
    train_seed: int = 0
    path: str | None = None
    """kind=path: a target directory with target.json (``"modality": "image"``)."""
    trusted_modules: list[str] = field(default_factory=list)
    """Module prefixes (``mypkg`` allows ``mypkg.*``) whose ``nn.Module`` classes a
    torch-safetensors target.json may name, besides the project's own networks."""


@dataclass
class LossMatchingConfig:
    """Resample synthetic images so that a classifier trained on real images (two halves of
    D_G, cross-fitted) rates them as it rates real images it never saw (its per-image loss
    follows theirs, bin by bin): :mod:`generators.loss_matching`."""

    enabled: bool = False
    bins: int = 10
    """Bins with equal shares of the held-out real images' losses."""
    max_drop: float = 0.5
    """Never drop more than this fraction of the candidates that reach this step."""
    epochs: int = 40
    """Training epochs of each fold's classifier (a SmallCNN, random shifts). Measured on
    MNIST halves of 400 images: 40 epochs at batch 64 reach 93 % held-out accuracy; 10 at
    batch 128 stay near chance (median loss 2.1 nats), and matching on such losses does
    nothing."""
    batch_size: int = 64


@dataclass
class ImageGeneratorSettings(ImageGeneratorConfig):
    """The conditional generator (fields of ImageGeneratorConfig), then labelling, the
    real-vs-synthetic filter and loss matching."""

    relabel: bool = True
    """Draw synthetic labels from a labeler (a CNN trained on D_G)."""
    labeler_epochs: int = 40
    labeler_batch_size: int = 64
    """The labeler's training (a SmallCNN with random shifts on D_G). Measured on the MNIST
    demo's 800 D_G images, 500 real non-members: 40 epochs at batch 64 label 94.7 % right
    (median top probability 0.95); 10 epochs at batch 128 only 79 % (0.34), and labels drawn
    from such a labeler are partly random, which h and f then see as high-loss synthetic
    images."""
    filter: QualityFilterConfig = field(default_factory=QualityFilterConfig)
    loss_matching: LossMatchingConfig = field(default_factory=LossMatchingConfig)


@dataclass
class ImageJobConfig:
    modality: str = "image"
    seed: int = 0
    generation_seed: int | None = None
    """Seed of D_G, the generator, the synthetic pool and h (None: ``seed``). Fixing it while
    ``seed`` varies repeats the audit over the attack/baseline split, the coins and the
    distinguishers' training with one generator (docs/SPEC.md §2.5; paper App. C)."""
    artifacts_dir: str = ".panoramia/artifacts"
    threads: int | None = None
    """Pin torch threads (1 when jobs run in parallel on few cores)."""
    data: ImageDataConfig = field(default_factory=ImageDataConfig)
    target: ImageTargetConfig = field(default_factory=ImageTargetConfig)
    generator: ImageGeneratorSettings = field(default_factory=ImageGeneratorSettings)
    helper: ImageHelperConfig = field(default_factory=ImageHelperConfig)
    distinguisher: ImageDistinguisherConfig = field(default_factory=ImageDistinguisherConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    claim: ClaimConfig = field(default_factory=ClaimConfig)
