"""Opening a target directory with the adapter its manifest names: the loader of the modality
plug-in that opens its format (:func:`panoramia.plugins.modality_of_manifest`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from panoramia.errors import InputError
from panoramia.plugins import modality_of_manifest, target_formats
from panoramia.targets.interface import TargetModel
from panoramia.targets.manifest import read_manifest
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
    if kind not in target_formats():
        raise InputError(
            f"target {str(directory)!r}: unknown format {kind!r}; expected "
            f"{', '.join(target_formats())}"
        )
    entry = modality_of_manifest(manifest)
    if kind not in entry.target_formats:  # its "modality" field names an audit of other formats
        raise InputError(
            f"target {str(directory)!r}: format {kind!r} is not one the {entry.name} audit "
            f"opens ({', '.join(entry.target_formats)})"
        )
    return entry.target_loader()(directory, manifest, trusted_modules, device)
