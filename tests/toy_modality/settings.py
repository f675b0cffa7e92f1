"""The toy plug-in's own settings: a choice (``generator.covariance``) and a rule across its
settings, declared here and handed to the settings engine by ``plugin.py`` alone."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from panoramia.audit_settings import settings_at
from panoramia.errors import InputError
from panoramia.settings_rule import Rule


class Covariance(StrEnum):
    """``generator.covariance``: the fitted Gaussians' covariance whole, or its diagonal."""

    FULL = "full"
    DIAGONAL = "diagonal"


CHOICE_TYPES: dict[str, type[StrEnum]] = {"generator.covariance": Covariance}


def _features(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "target.features", "data.dims")
    if found and found[0] and found[0] < found[1]:
        raise InputError(
            f"target.features: {found[0]} random features of {found[1]}-dimensional points; "
            "give 0 (the raw points) or at least data.dims"
        )


RULES: tuple[Rule, ...] = (Rule("toy: `target.features` is 0 or at least `data.dims`", _features),)
