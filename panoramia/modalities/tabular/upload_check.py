"""What an uploaded tabular model folder must hold beyond the files its manifest names (run
by the service's upload checks, in their process with memory and processor ceilings): a
LightGBM or CatBoost model is opened by its own adapter (its file parsed by the library,
its objective one that predicts probabilities, its ``classes`` usable), so a file that is not
what its format says is refused at upload, not at its first audit. Imports nothing heavy
until a model of those formats is checked."""

from __future__ import annotations

from pathlib import Path


def check_uploaded_model(directory: Path, manifest: dict[str, object]) -> None:
    """InputError (one line) when the folder's LightGBM or CatBoost model does not open as
    its adapter opens it; other formats are left to the checks of the files they name."""
    kind = manifest.get("format")
    if kind == "lightgbm-text":
        from panoramia.modalities.tabular.lightgbm_target import LightGBMTarget

        LightGBMTarget.load(directory, dict(manifest))
    elif kind == "catboost-cbm":
        from panoramia.modalities.tabular.catboost_target import CatBoostTarget

        CatBoostTarget.load(directory, dict(manifest))
