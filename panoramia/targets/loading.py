"""Opening a target directory with the adapter its manifest names."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from panoramia.errors import InputError
from panoramia.targets.interface import TargetModel
from panoramia.targets.manifest import manifest_modality, read_manifest
from panoramia.targets.trust import check_trusted_modules


def load_target(
    directory: str | Path, *, trusted_modules: Iterable[str] = (), device: object = None
) -> TargetModel:
    """Open the target in ``directory`` with the adapter its manifest names; torch models run
    their forward passes on ``device`` (a ``torch.device`` from
    :func:`panoramia.devices.inference_device`; default the CPU).

    ``trusted_modules``: module prefixes whose ``nn.Module`` classes a ``torch-safetensors``
    manifest may name, besides :data:`panoramia.targets.trust.DEFAULT_TRUSTED_MODULES`, and
    whose types a skops file may hold beyond skops' defaults."""
    directory = Path(directory)
    trusted_modules = check_trusted_modules(trusted_modules, source="target.trusted_modules")
    manifest = read_manifest(directory)
    kind = manifest["format"]
    if kind == "peft":
        from panoramia.targets.text_models import load_peft_target

        return load_peft_target(directory, manifest, device)
    if manifest_modality(manifest) == "text":
        from panoramia.targets.text_models import load_causal_lm_target

        return load_causal_lm_target(directory, manifest, device)
    if manifest_modality(manifest) == "image":
        from panoramia.targets.image_models import load_image_target

        return load_image_target(directory, manifest, trusted_modules, device)  # type: ignore[arg-type]
    if kind in ("torch-safetensors", "torchscript"):
        from panoramia.targets.torch_models import load_torch_target

        return load_torch_target(directory, manifest, trusted_modules, device)  # type: ignore[arg-type]
    if kind == "xgboost-json":
        from panoramia.targets.xgboost_model import XGBoostTarget

        return XGBoostTarget.load(directory, manifest)
    if kind == "skops":
        from panoramia.targets.skops_model import SkopsTarget

        return SkopsTarget.load(directory, manifest, trusted_modules)
    if kind == "http":
        from panoramia.targets.http_model import HttpTarget

        return HttpTarget.from_manifest(manifest)
    raise InputError(
        f"target {str(directory)!r}: unknown format {kind!r}; expected torch-safetensors, "
        "torchscript, hf-image-classification, hf-causal-lm, peft, xgboost-json, skops or http"
    )
