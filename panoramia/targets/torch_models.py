"""Torch networks a target manifest names: an ``nn.Module`` class + safetensors weights, or a
TorchScript archive (the modalities' torch targets open their networks with these)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.targets.manifest import manifest_file
from panoramia.targets.trust import import_model_class, json_kwargs


def load_safetensors_module(
    directory: Path, manifest: dict, trusted_modules: Iterable[str] = ()
) -> tuple[torch.nn.Module, dict]:
    """The manifest's ``module`` class built with ``kwargs``, weights loaded from ``weights``;
    returns it and the weights file's hash.

    ``module`` must be a ``torch.nn.Module`` class of a trusted module (see
    :mod:`panoramia.targets.trust`; ``trusted_modules`` extends the defaults) and ``kwargs``
    JSON data: nothing else a manifest names is imported or called."""
    weights = manifest_file(directory, manifest, "weights")
    kwargs = json_kwargs(manifest.get("kwargs"))
    model_class = import_model_class(manifest.get("module"), trusted_modules)
    try:
        model = model_class(**kwargs)
    except (TypeError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(
            f"target manifest field 'kwargs': {manifest.get('module')!r} cannot be built "
            f"with {kwargs}: {first}"
        ) from None
    try:
        state = load_file(weights)
    except (SafetensorError, OSError, ValueError) as error:
        raise InputError(
            f"weights {str(weights)!r}: not a safetensors file ({error}); pickled "
            "checkpoints are never loaded — convert with safetensors.torch.save_file"
        ) from None
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        first = str(error).splitlines()[0]
        raise InputError(f"weights {str(weights)!r} do not fit the model: {first}") from None
    return model, {"weights": file_sha256(weights)}


def load_torchscript_module(directory: Path, manifest: dict) -> tuple[torch.nn.Module, dict]:
    """The TorchScript archive the manifest's ``file`` names, and its hash."""
    archive = manifest_file(directory, manifest, "file")
    try:
        model = torch.jit.load(str(archive), map_location="cpu")
    except (RuntimeError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        raise InputError(f"model {str(archive)!r}: not a TorchScript archive ({first})") from None
    return model, {"file": file_sha256(archive)}
