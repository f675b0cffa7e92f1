"""The target-model interface and the manifest that selects an adapter."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.targets.trust import check_trusted_modules

MANIFEST = "target.json"
MIN_PROBABILITY = 1e-12
"""Probabilities are clipped here before the log, so a loss is at most ~27.6 nats."""


class TargetModel(Protocol):
    """A classifier under audit, seen only through its per-example losses."""

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        """Cross-entropy (nats) of each example's true label; float64 array of shape (n,).

        ``rows`` is a DataFrame for tabular targets, a :class:`panoramia.data.images.ImageSet`
        for image targets (``"modality": "image"``) and a :class:`panoramia.data.text.TextSet`
        of token chunks for causal LMs (the mean next-token loss of each chunk).
        """
        ...

    def identity(self) -> dict[str, object]:
        """Format and content hashes of the model's files (for the report)."""
        ...


def loss_from_probabilities(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """−log p(true class) per row from (n, n_classes) probabilities and int class indices."""
    chosen = probabilities[np.arange(labels.size), labels]
    return -np.log(np.clip(chosen.astype(np.float64), MIN_PROBABILITY, 1.0))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(directory: Path) -> dict:
    """The target's manifest; a bare Hugging Face causal-LM directory gets an implicit one."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        if _is_causal_lm_directory(Path(directory)):
            return {"format": "hf-causal-lm", "modality": "text", "directory": "."}
        raise InputError(f"target {str(directory)!r}: no {MANIFEST} manifest")
    try:
        manifest = json.loads(path.read_text())
    except ValueError as error:
        raise InputError(f"target manifest {str(path)!r}: not JSON ({error})") from None
    if not isinstance(manifest, dict) or "format" not in manifest:
        raise InputError(f"target manifest {str(path)!r}: needs a 'format' field")
    return manifest


def _is_causal_lm_directory(directory: Path) -> bool:
    config = directory / "config.json"
    if not config.is_file():
        return False
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except (ValueError, AttributeError):
        return False
    return any(str(name).endswith("ForCausalLM") or "LMHead" in str(name) for name in architectures)


def inside_model_directory(directory: Path, name: object, field: str) -> Path:
    """``directory / name`` when it resolves inside ``directory`` (a manifest names files of
    its own model only: no absolute path, '..' or link that leads out); else InputError."""
    try:
        root = Path(directory).resolve()
        path = (Path(directory) / str(name)).resolve()
    except (OSError, RuntimeError, ValueError) as error:
        raise InputError(f"target {str(directory)!r}: {field} {name!r}: {error}") from None
    if not path.is_relative_to(root):
        raise InputError(
            f"target {str(directory)!r}: manifest field {field!r} must name a file inside the "
            f"model directory, got {name!r}"
        )
    return path


def manifest_file(directory: Path, manifest: dict, field: str) -> Path:
    """The file that ``manifest[field]`` names, relative to the target directory."""
    if field not in manifest:
        raise InputError(f"target {str(directory)!r}: manifest lacks {field!r}")
    path = inside_model_directory(directory, manifest[field], field)
    if not path.is_file():
        raise InputError(f"target {str(directory)!r}: {field} file {str(path)!r} missing")
    return path


def load_target(directory: str | Path, *, trusted_modules: Iterable[str] = ()) -> TargetModel:
    """Open the target in ``directory`` with the adapter its manifest names.

    ``trusted_modules``: module prefixes whose ``nn.Module`` classes a ``torch-safetensors``
    manifest may name, besides :data:`panoramia.targets.trust.DEFAULT_TRUSTED_MODULES`, and
    whose types a skops file may hold beyond skops' defaults."""
    directory = Path(directory)
    trusted_modules = check_trusted_modules(trusted_modules, source="target.trusted_modules")
    manifest = read_manifest(directory)
    kind = manifest["format"]
    if kind == "hf-causal-lm":
        from panoramia.targets.text_models import load_causal_lm_target

        return load_causal_lm_target(directory, manifest)
    if manifest.get("modality") == "image" or kind == "hf-image-classification":
        from panoramia.targets.image_models import load_image_target

        return load_image_target(directory, manifest, trusted_modules)
    if kind in ("torch-safetensors", "torchscript"):
        from panoramia.targets.torch_models import load_torch_target

        return load_torch_target(directory, manifest, trusted_modules)
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
        "torchscript, hf-image-classification, hf-causal-lm, xgboost-json, skops or http"
    )
