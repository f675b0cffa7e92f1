"""A target directory's manifest (``target.json``): reading it, and confining the files it
names to the model's own directory."""

from __future__ import annotations

import json
from pathlib import Path

from panoramia.errors import InputError
from panoramia.plugins import implicit_manifest

MANIFEST = "target.json"
"""The manifest's file name inside a target directory."""


def read_manifest(directory: Path) -> dict:
    """The target's manifest; a folder without one that a modality plug-in recognises (a bare
    Hugging Face causal-LM directory) gets the plug-in's implicit one."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        implicit = implicit_manifest(Path(directory))
        if implicit is not None:
            return implicit
        raise InputError(f"target {str(directory)!r}: no {MANIFEST} manifest")
    try:
        manifest = json.loads(path.read_text())
    except ValueError as error:
        raise InputError(f"target manifest {str(path)!r}: not JSON ({error})") from None
    if not isinstance(manifest, dict) or "format" not in manifest:
        raise InputError(f"target manifest {str(path)!r}: needs a 'format' field")
    return manifest


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


def hugging_face_folder(directory: Path, manifest: dict) -> Path:
    """The folder a Hugging Face manifest's ``directory`` field names (default ``.``): inside
    the model's directory and holding a ``config.json``; else InputError."""
    inner = inside_model_directory(Path(directory), manifest.get("directory", "."), "directory")
    if not (inner / "config.json").is_file():
        raise InputError("its target.json's directory holds no Hugging Face config.json")
    return inner
