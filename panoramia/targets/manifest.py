"""A target directory's manifest (``target.json``): reading it, and confining the files it
names to the model's own directory."""

from __future__ import annotations

import json
from pathlib import Path

from panoramia.errors import InputError

MANIFEST = "target.json"
"""The manifest's file name inside a target directory."""


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


def manifest_modality(manifest: dict) -> str:
    """The audit a model of this manifest belongs to: ``text`` for a causal LM (``hf-causal-lm``,
    or a ``peft`` adapter over one), ``image`` for an image classifier
    (``hf-image-classification``, or ``"modality": "image"``), else ``tabular`` (the rule
    :func:`panoramia.targets.loading.load_target` opens it by)."""
    kind = manifest.get("format")
    if kind in ("hf-causal-lm", "peft"):
        return "text"
    if manifest.get("modality") == "image" or kind == "hf-image-classification":
        return "image"
    return "tabular"


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
