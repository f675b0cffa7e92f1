"""The tabular plug-in's own settings: the values of its choice settings (one
:class:`~enum.StrEnum` each, :data:`CHOICE_TYPES`) and its rules across settings
(:data:`RULES`), which its declaration (``plugin.py``) hands to the settings engine
(:mod:`panoramia.audit_settings`). Light: the service reads it through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from panoramia.audit_settings import TargetKind, settings_at, values
from panoramia.errors import InputError
from panoramia.settings_rule import Rule


class Synthesizer(StrEnum):
    """``generator.synthesizer``."""

    CART = "cart"
    GAUSSIAN_COPULA = "gaussian_copula"
    CTGAN = "ctgan"
    TVAE = "tvae"


class TabularSource(StrEnum):
    """``data.source`` in a tabular audit: the embedded Adult census, or her CSV files."""

    ADULT = "adult"
    CSV = "csv"


class TabularTargetKind(StrEnum):
    """``target.kind`` in a tabular audit: the demo recipes trained here (an MLP, gradient-
    boosted trees), or a brought model (``path``)."""

    MLP = "mlp"
    XGBOOST = "xgboost"
    PATH = TargetKind.PATH.value


class AdultHeldOut(StrEnum):
    """``data.held_out`` (embedded Adult): where the real non-members come from. ``file``:
    UCI's ``adult.test`` beside the members drawn from ``adult.data`` (the split is UCI's, not
    the audit's); ``drawn``: one permutation of both files pooled deals the members, the
    control pool and the held-out rows, so the audit draws them at random together
    (docs/SPEC.md §3.1 level 8, the open finding of 2026-12-07)."""

    FILE = "file"
    DRAWN = "drawn"


CHOICE_TYPES: dict[str, type[StrEnum]] = {
    "generator.synthesizer": Synthesizer,
    "data.held_out": AdultHeldOut,
}
"""The choice settings this plug-in owns, by their whole key."""
NARROWED: dict[str, tuple[str, ...]] = {
    "target.kind": values(TabularTargetKind),
    "data.source": values(TabularSource),
}
"""The values this plug-in allows of shared choice settings (its ``Modality.choices``)."""


def _dp_target(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "target.dp_epsilon", "target.kind")
    if found and found[0] is not None and found[1] != TabularTargetKind.MLP:
        raise InputError(f"target.dp_epsilon: DP-SGD trains mlp targets, not {found[1]}")


RULES: tuple[Rule, ...] = (
    Rule("`target.dp_epsilon` (DP-SGD) only with `target.kind=mlp`", _dp_target),
)
"""The rules across this plug-in's settings, checked after the shared ones."""
