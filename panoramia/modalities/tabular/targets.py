"""Opening a tabular target by its manifest's format: a torch network over encoded rows
(``torch-safetensors``, ``torchscript``), an XGBoost booster (``xgboost-json``), a LightGBM
booster (``lightgbm-text``), a CatBoost model (``catboost-cbm``), a scikit-learn estimator
(``skops``), an owner's endpoint (``http``) or an ONNX graph (``onnx``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from panoramia.targets.interface import TargetModel


def load_tabular_target(
    directory: Path, manifest: dict, trusted_modules: Iterable[str] = (), device: object = None
) -> TargetModel:
    """The tabular target of ``manifest`` (its ``format`` one of the plug-in's
    ``target_formats``; :func:`panoramia.targets.load_target` checked it)."""
    kind = manifest["format"]
    if kind == "xgboost-json":
        from panoramia.modalities.tabular.xgboost_target import XGBoostTarget

        return XGBoostTarget.load(directory, manifest)
    if kind == "lightgbm-text":
        from panoramia.modalities.tabular.lightgbm_target import LightGBMTarget

        return LightGBMTarget.load(directory, manifest)
    if kind == "catboost-cbm":
        from panoramia.modalities.tabular.catboost_target import CatBoostTarget

        return CatBoostTarget.load(directory, manifest)
    if kind == "skops":
        from panoramia.modalities.tabular.skops_target import SkopsTarget

        return SkopsTarget.load(directory, manifest, trusted_modules)
    if kind == "http":
        from panoramia.modalities.tabular.http_target import HttpTarget

        return HttpTarget.from_manifest(manifest)
    if kind == "onnx":
        from panoramia.modalities.tabular.onnx_target import OnnxTabularTarget

        return OnnxTabularTarget.load(directory, manifest, device)
    from panoramia.modalities.tabular.torch_target import load_torch_target

    return load_torch_target(directory, manifest, trusted_modules, device)  # type: ignore[arg-type]
