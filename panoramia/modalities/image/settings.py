"""The image plug-in's own settings: the values of its choice settings (one
:class:`~enum.StrEnum` each, :data:`CHOICE_TYPES`) and its rules across settings
(:data:`RULES`), which its declaration (``plugin.py``) hands to the settings engine
(:mod:`panoramia.audit_settings`). Light: the service reads it through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from panoramia.audit_settings import UNKNOWN, Optimizer, not_one_of, unresolved, values
from panoramia.errors import InputError
from panoramia.settings_rule import Rule


class ImageGeneratorModel(StrEnum):
    """``generator.model``."""

    DCGAN = "dcgan"
    DDPM = "ddpm"


class ImageArch(StrEnum):
    """``target.arch``, ``helper.arch``: ``panoramia.modalities.image.nets``' networks."""

    CNN = "cnn"
    RESNET = "resnet"


class Augmentation(StrEnum):
    """``target.augment``, ``helper.augment`` (see ``panoramia.modalities.image.image_module``)."""

    NONE = "none"
    CROP = "crop"
    CROP_FLIP = "crop_flip"


class HelperData(StrEnum):
    """``helper.training_data``: synthetic images, or D_G."""

    SYNTHETIC = "synthetic"
    REAL = "real"


class ImageSource(StrEnum):
    """``data.source`` in an image audit: MNIST, scikit-learn's 8×8 digits, or her files."""

    MNIST = "mnist"
    DIGITS = "digits"
    FILES = "files"


CHOICE_TYPES: dict[str, type[StrEnum]] = {
    "generator.model": ImageGeneratorModel,
    "helper.arch": ImageArch,
    "helper.augment": Augmentation,
    "helper.optimizer": Optimizer,
    "helper.training_data": HelperData,
    "target.arch": ImageArch,
    "target.augment": Augmentation,
    "target.optimizer": Optimizer,
}
"""The choice settings this plug-in owns, by their whole key."""


def check_image_generator(generator: Mapping[str, Any]) -> None:
    """The image generator's settings (its ``generator`` section): ``model`` one of
    :class:`ImageGeneratorModel`, ``black_level`` in [0, 255], and for the DDPM a ``width``
    that is a multiple of 8 and 1 ≤ ``sampling_steps`` ≤ ``diffusion_steps``. The job checks
    them with every setting (:data:`RULES`);
    ``panoramia.modalities.image.generator.ImageGeneratorConfig`` on construction."""

    def known(name: str) -> Any:
        value = generator.get(name, UNKNOWN)
        return UNKNOWN if unresolved(value) else value

    model = known("model")
    if model is UNKNOWN:
        return
    if model not in values(ImageGeneratorModel):
        raise not_one_of("generator.model", str(model), values(ImageGeneratorModel))
    black_level = known("black_level")
    if black_level not in (None, UNKNOWN) and not 0 <= black_level <= 255:
        raise InputError(f"generator.black_level: {black_level} is not in [0, 255]")
    if model != ImageGeneratorModel.DDPM:
        return
    width, sampling, diffusion = known("width"), known("sampling_steps"), known("diffusion_steps")
    if width is not UNKNOWN and width % 8:
        raise InputError(f"generator.width: {width} is not a multiple of 8 (ddpm)")
    if UNKNOWN not in (sampling, diffusion) and not 1 <= sampling <= diffusion:
        raise InputError(
            f"generator.sampling_steps: {sampling} is not in [1, diffusion_steps={diffusion}]"
        )


def _image_generator(config: Mapping[str, Any]) -> None:
    generator = config.get("generator")
    if isinstance(generator, Mapping) and "model" in generator:
        check_image_generator(generator)


RULES: tuple[Rule, ...] = (
    Rule("the image generator: `generator.black_level` in [0, 255]; the DDPM's "
         "`generator.width` a multiple of 8 and `generator.sampling_steps` at most "
         "`generator.diffusion_steps`", _image_generator),
)  # fmt: skip
"""The rules across this plug-in's settings, checked after the shared ones."""
