"""The image audit's stages (ImageSet ``.npz`` files, a DDPM or DCGAN, CNNs trained with Lightning).

The graph and the game are :class:`~panoramia.pipeline.graph.AuditPipeline`'s; every stage
writes a content-addressed artifact, so a rerun (another target, a resumed run) reuses the
generator, the synthetic sets and h.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from panoramia.hashing import settings_but
from panoramia.modalities.image.config import (
    ImageDataConfig,
    ImageGeneratorSettings,
    ImageJobConfig,
)
from panoramia.modalities.image.data import (
    CONTROL_POOL,
    MEMBERS,
    NONMEMBERS,
    build_image_data,
    image_data_identity,
)
from panoramia.modalities.image.images import ImageSet, concat, read_npz
from panoramia.modalities.image.sets import IMAGE_SETS
from panoramia.pipeline.graph import AuditPipeline
from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages import StageResult
from panoramia.pipeline.stages.splits import SyntheticWork, build_synthetic, synthetic_key
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey, fields_of
from panoramia.pipeline.synthetic_draw import (
    MARGIN,
    SAMPLING_ONLY,
    draw_and_deal,
    draw_screened,
)

if TYPE_CHECKING:
    from panoramia.modalities.image.generator import ImageGenerator
    from panoramia.modalities.image.generator_filter import CrossFittedLosses
    from panoramia.modalities.image.helper import ImageLabeler

GALLERY = 48
"""Images of each kind shown in the report."""
IMAGE_SAMPLING_ONLY = (
    *SAMPLING_ONLY, "labeler_epochs", "labeler_batch_size", "sampling_steps", "guidance",
    "loss_matching",
)  # fmt: skip
"""Generator settings that only the synthetic stage uses."""

DATA = StageKey("data", also_reads=fields_of("data", ImageDataConfig, but=("split",)))
"""The images' identity (:func:`~panoramia.modalities.image.data.image_data_identity`): the
data settings but the split, which the stages that read it key themselves."""
GENERATOR = StageKey(
    "generator", seeds=(GENERATION_SEED,),
    also_reads=fields_of("generator", ImageGeneratorSettings, but=IMAGE_SAMPLING_ONLY),
)  # fmt: skip
SYNTHETIC = synthetic_key(1, "generator", "helper.n_images", "helper.training_data")
HELPER = StageKey("helper", seeds=(GENERATION_SEED,), also_reads=("helper",))


class ImagePipeline(AuditPipeline):
    """The stages of an image audit."""

    job: ImageJobConfig
    sets = IMAGE_SETS
    device_sections = True

    def trusted_modules(self) -> list[str]:
        """``target.trusted_modules``: extra modules a target.json's ``module`` may name."""
        return list(self.job.target.trusted_modules)

    def new_distinguisher(
        self, data: StageResult, index: int = 0
    ):  # -> panoramia.modalities.image.distinguisher.ImageDistinguisher
        from panoramia.modalities.image.distinguisher import ImageDistinguisher

        return ImageDistinguisher(self.job.distinguisher, seed=self.distinguisher_seed(index))

    def galleries(self, stages: dict[str, StageResult]) -> dict[str, np.ndarray]:
        """The first audit members and synthetic audit images, side by side in the report."""
        split, synthetic = stages["split"].directory, stages["synthetic_split"].directory
        return {
            "members (audit set)": read_npz(split / "member_audit.npz").images[:GALLERY],
            "synthetic non-members (audit set)": read_npz(synthetic / "synthetic_audit.npz").images[
                :GALLERY
            ],
        }

    def group_table(self, path: Path, data: StageResult) -> tuple[Any, list[str]]:
        """A stored set's labels (one row per image); groups by class."""
        import pandas as pd

        return pd.DataFrame({"label": read_npz(path).labels}), ["label"]

    def audit_members(self, stages: dict[str, StageResult]) -> tuple[Any, list[str]]:
        """The audited members' labels (one row each); groups by class."""
        return self.group_table(stages["split"].directory / "member_audit.npz", stages["data"])

    def data(self) -> StageResult:
        identity = image_data_identity(self.job.data)
        return self.runner.run(
            DATA, lambda d: build_image_data(self.job.data, d), config=identity, inputs=[]
        )

    def train_demo_target(self, data: StageResult, directory: Path) -> dict:
        from panoramia.modalities.image.training import train_image_directory

        pool = CONTROL_POOL if self.job.target.members == "disjoint" else MEMBERS
        holdout = data.directory / NONMEMBERS
        return train_image_directory(
            read_npz(data.directory / pool), self.job.target, directory,
            seed=self.job.target.train_seed, n_classes=int(data.info["n_classes"]),
            holdout=read_npz(holdout) if holdout.exists() else None,
        )  # fmt: skip

    def _generator_config(self):  # -> panoramia.modalities.image.generator.ImageGeneratorConfig
        """The generator's settings as its fit takes them: those of :data:`IMAGE_SAMPLING_ONLY`
        left at their defaults (the generator stage's key does not hold them; the synthetic
        stage samples with the job's own, :meth:`_sampling_generator`)."""
        from panoramia.modalities.image.generator import ImageGeneratorConfig

        settings = self.job.generator  # read field by field: the stage declares which
        given = {f.name for f in fields(settings)} - set(IMAGE_SAMPLING_ONLY)
        return ImageGeneratorConfig(
            **{f.name: getattr(settings, f.name) for f in fields(ImageGeneratorConfig)
               if f.name in given}
        )  # fmt: skip

    def _sampling_generator(self, directory: Path):  # -> ImageGenerator
        """The generator stage's generator, sampling with this job's sampling settings: the
        stage is reused across them (its key leaves them out), and the settings it saved are
        the ones it was fitted beside, not necessarily this job's (a stale ``sampling_steps``
        or ``guidance`` was read from there before 2026-12-07)."""
        from panoramia.modalities.image.generator import ImageGenerator, ImageGeneratorConfig

        generator = ImageGenerator.load(directory)
        settings = self.job.generator
        given = {f.name for f in fields(settings)}
        sampling = {
            f.name: getattr(settings, f.name) for f in fields(ImageGeneratorConfig)
            if f.name in IMAGE_SAMPLING_ONLY and f.name in given
        }  # fmt: skip
        generator.config = replace(generator.config, **sampling)
        return generator

    def generator(self, data: StageResult, known: StageResult) -> StageResult:
        from panoramia.modalities.image.generator import ImageGenerator

        model = self.job.generator.model.upper()

        def build(directory: Path) -> dict:
            members = read_npz(known.directory / "member_generator.npz")
            generator = ImageGenerator(self._generator_config())
            generator.fit(members, seed=child_seed(self.generation_seed, "generator"))
            generator.save(directory)
            return {"trained_on": len(members), "kind": f"conditional {model}"}

        fit_config = settings_but(self.job.generator, IMAGE_SAMPLING_ONLY)
        return self.runner.run(
            GENERATOR, build, config=fit_config, inputs=[data, known],
            label=f"generator ({model})",
        )  # fmt: skip

    def synthetic(self, data: StageResult, known: StageResult, gen: StageResult) -> StageResult:
        config = self.job.generator
        helper = self.job.helper
        settings = asdict(config)
        if not config.loss_matching.enabled:  # keeps the keys of sets drawn before it existed
            settings.pop("loss_matching")
        return build_synthetic(
            self, data, known, gen, settings=settings, draw=self._draw_synthetic,
            helper=helper.n_images if helper.training_data == "synthetic" else 0, spec=SYNTHETIC,
        )  # fmt: skip

    def _draw_synthetic(self, work: SyntheticWork) -> dict:
        """The synthetic stage's work: draw, screen and deal the synthetic images (and the
        attacker's pool) into ``work.directory``; its info."""

        config, directory = self.job.generator, work.directory
        generator = self._sampling_generator(work.gen.directory)
        real = read_npz(work.known.directory / "member_generator.npz")
        n_classes = int(work.data.info["n_classes"])
        labeler = _fit_labeler(config, real, n_classes, directory, self.generation_seed)
        draw = _ImageDraw(generator, labeler, self.generation_seed)
        extra = None
        factor = MARGIN
        if config.filter.enabled:
            n_extra = max(100, round(config.filter.extra_fraction * len(real)))
            extra = draw(n_extra, "synthetic/extra")
            factor /= 1.0 - config.filter.max_drop
        matching = _fit_matching(config, real, n_classes, directory, self.generation_seed)
        screen = _ImageScreen(config, real, extra, matching, self.generation_seed)

        # Later rounds are sized by the share kept so far (loss matching's varies).
        screened = partial(
            draw_screened, draw=draw, screen=screen, size=len, factor=factor, adapt=True,
            what="images",
        )  # fmt: skip
        dealt = draw_and_deal(
            self.sets, work.needed, work.pool, directory, screened=screened, concat=concat
        )
        (directory / "seeds.json").write_text(json.dumps(draw.seeds, indent=1))
        info: dict[str, object] = {
            "drawn": dealt.drawn, "kept_fraction": round(len(dealt.kept) / dealt.drawn, 4),
            **work.needed, "pool": work.pool, "pool_drawn": dealt.pool_drawn,
        }  # fmt: skip
        if matching is not None:  # over the audit's batches, screened before the pool's
            info["loss_matching"] = screen.summary(dealt.batches)
        return info

    def train_stand_in(
        self, data: StageResult, examples: ImageSet, directory: Path, seed: int
    ) -> dict:
        from panoramia.modalities.image.helper import train_image_helper

        return train_image_helper(
            examples, self.stand_in_recipe(), directory,
            seed=seed,
            n_classes=int(data.info["n_classes"]),
        )  # fmt: skip

    def helper(self, data: StageResult, known: StageResult, synthetic: StageResult) -> StageResult:
        from panoramia.modalities.image.helper import train_image_helper

        config = self.job.helper
        real = config.training_data == "real"

        def build(directory: Path) -> dict:
            images = read_npz(
                known.directory / "member_generator.npz"
                if real
                else synthetic.directory / "synthetic_helper.npz"
            )
            return train_image_helper(
                images, config, directory, seed=child_seed(self.generation_seed, "helper"),
                n_classes=int(data.info["n_classes"]),
            )  # fmt: skip

        return self.runner.run(
            HELPER,
            build,
            config=asdict(config),
            inputs=[data, known] if real else [data, synthetic],
            label=f"helper h ({config.arch}, {config.training_data} images)",
        )


def _fit_labeler(
    config: ImageGeneratorSettings,
    real: ImageSet,
    n_classes: int,
    directory: Path,
    generation_seed: int,
) -> ImageLabeler | None:
    """The labeler fitted on D_G that redraws the synthetic images' labels (None: no
    ``relabel``)."""
    if not config.relabel:
        return None
    from panoramia.modalities.image.helper import ImageLabeler
    from panoramia.modalities.image.training import ImageModelConfig

    return ImageLabeler(
        ImageModelConfig(
            epochs=config.labeler_epochs,
            batch_size=config.labeler_batch_size,
            augment="crop",
        ),
        directory / "labeler",
        seed=child_seed(generation_seed, "labeler"),
    ).fit(real, n_classes=n_classes)


def _fit_matching(
    config: ImageGeneratorSettings,
    real: ImageSet,
    n_classes: int,
    directory: Path,
    generation_seed: int,
) -> CrossFittedLosses | None:
    """D_G's cross-fitted classifiers whose losses loss matching resamples on (None: loss
    matching is off)."""
    if not config.loss_matching.enabled:
        return None
    from panoramia.modalities.image.generator_filter import cross_fitted_losses
    from panoramia.modalities.image.training import ImageModelConfig

    return cross_fitted_losses(
        real, ImageModelConfig(
            epochs=config.loss_matching.epochs, augment="crop",
            batch_size=config.loss_matching.batch_size,
        ),
        directory / "loss_matching",
        seed=child_seed(generation_seed, "synthetic/matching"),
        n_classes=n_classes,
    )  # fmt: skip


class _ImageDraw:
    """The synthetic stage's draws: ``n`` generated images under a name's seed, their labels
    redrawn by the labeler if any; ``seeds`` holds each name's seed."""

    def __init__(
        self, generator: ImageGenerator, labeler: ImageLabeler | None, generation_seed: int
    ) -> None:
        self.generator, self.labeler = generator, labeler
        self.generation_seed = generation_seed
        self.seeds: dict[str, int] = {}

    def __call__(self, n: int, name: str) -> ImageSet:
        """Draw ``n`` images under ``name``."""
        self.seeds[name] = child_seed(self.generation_seed, name)
        images = self.generator.sample(n, seed=self.seeds[name])
        if self.labeler is None:
            return images
        return self.labeler.relabel(images, seed=child_seed(self.generation_seed, f"{name}/labels"))


class _ImageScreen:
    """The synthetic stage's screen of a batch: the real-vs-synthetic filter (with ``extra``),
    then loss matching (with ``matching``), which records the losses it saw and kept."""

    def __init__(
        self,
        config: ImageGeneratorSettings,
        real: ImageSet,
        extra: ImageSet | None,
        matching: CrossFittedLosses | None,
        generation_seed: int,
    ) -> None:
        self.config, self.real, self.extra, self.matching = config, real, extra, matching
        self.generation_seed = generation_seed
        self.candidates: list[np.ndarray] = []  # each screened batch's losses (matching)
        self.kept: list[np.ndarray] = []  # and those of the images it kept

    def __call__(self, batch: ImageSet) -> ImageSet:
        """The images of ``batch`` that pass the screen."""
        from panoramia.modalities.image.generator_filter import filter_synthetic_images
        from panoramia.modalities.image.loss_matching import loss_matching_keep

        config = self.config
        realness = np.zeros(len(batch))
        if self.extra is not None:
            result = filter_synthetic_images(
                self.real, self.extra, batch, real_quantile=config.filter.real_quantile,
                max_drop=config.filter.max_drop,
                seed=child_seed(self.generation_seed, "synthetic/filter"),
            )  # fmt: skip
            batch, realness = result.kept, result.kept_real_probability
        if self.matching is not None:
            losses = self.matching.of(batch)
            keep = loss_matching_keep(
                self.matching.held_out_real, losses, priority=realness,
                bins=config.loss_matching.bins, max_drop=config.loss_matching.max_drop,
            )  # fmt: skip
            batch = batch.take(np.flatnonzero(keep))
            self.candidates.append(losses)
            self.kept.append(losses[keep])
        return batch

    def summary(self, screened: int) -> dict:
        """Loss matching's summary over the first ``screened`` batches (the audit's draws)."""
        from panoramia.modalities.image.loss_matching import matching_summary

        assert self.matching is not None
        return matching_summary(
            self.matching.held_out_real,
            np.concatenate(self.candidates[:screened]),
            np.concatenate(self.kept[:screened]),
        )
