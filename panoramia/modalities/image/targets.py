"""Image targets: a torch module + safetensors weights, TorchScript, an ONNX graph, or a local
Hugging Face image-classification directory. The loss of an image is the cross-entropy (nats)
of its label.

Manifest fields (``target.json``) beside ``format`` and ``"modality": "image"``:

* ``torch-safetensors``: ``module`` (``"package.module:Class"``, an ``nn.Module`` class of a
  trusted module: :mod:`panoramia.targets.trust`), ``kwargs`` (JSON data), ``weights``,
  ``normalization`` (``{"mean": [...], "std": [...]}`` per channel, pixels scaled to [0, 1]);
* ``torchscript``: ``file`` and ``normalization``;
* ``onnx``: ``file``, ``normalization`` and ``scores`` (``logits`` or ``probabilities``), run
  by onnxruntime (:mod:`panoramia.modalities.image.onnx_target`);
* ``hf-image-classification``: ``directory`` (relative; ``config.json``, weights and
  ``preprocessor_config.json``, opened with ``local_files_only=True``); the model's label ids
  are the class numbers of the audited data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from panoramia.devices import forward_passes, prepare, to_device
from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.image.image_module import Normalization
from panoramia.modalities.image.images import ImageSet
from panoramia.targets.manifest import inside_model_directory
from panoramia.targets.torch_models import load_safetensors_module, load_torchscript_module

if TYPE_CHECKING:
    from panoramia.modalities.image.onnx_target import OnnxImageTarget

BATCH = 1024


@dataclass
class TorchImageTarget:
    """Any callable from uint8 (N, H, W, C) images to class logits (N, K), batch by batch, on
    ``device`` (:mod:`panoramia.devices`)."""

    logits_of: Callable[[np.ndarray], torch.Tensor]
    files: dict[str, str]
    kind: str
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    def logits(self, images: np.ndarray) -> np.ndarray:
        """float32 logits (N, K) of uint8 (N, H, W, C) images."""
        with forward_passes(self.device):
            parts = [
                self.logits_of(images[i : i + BATCH]).float().cpu()
                for i in range(0, len(images), BATCH)
            ]
        return torch.cat(parts).numpy()

    def per_example_loss(self, batch: ImageSet) -> np.ndarray:
        """Cross-entropy (nats) of each image's label, float64 of shape (N,), from float32
        logits."""
        logits = torch.from_numpy(self.logits(batch.images))
        if int(batch.labels.max()) >= logits.shape[1]:
            raise InputError(
                f"target: label {int(batch.labels.max())} but the model has {logits.shape[1]} "
                "classes"
            )
        labels = torch.from_numpy(batch.labels)
        losses = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
        return losses.double().numpy()

    def identity(self) -> dict[str, object]:
        return {"format": self.kind, "sha256": self.files}


def _normalization(directory: Path, manifest: dict) -> Normalization:
    try:
        return Normalization.from_dict(manifest["normalization"])
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"target {str(directory)!r}: manifest needs normalization {{mean: [...], std: [...]}}"
        ) from None


def _module_logits(
    model: torch.nn.Module, normalization: Normalization, device: torch.device
) -> Callable:
    model = prepare(model, device)
    channels_last = torch.channels_last if device.type == "cuda" else torch.contiguous_format

    def logits_of(images: np.ndarray) -> torch.Tensor:
        pixels = to_device(images, device)  # uint8 over the bus, normalised on the device
        return model(normalization.tensor(pixels).contiguous(memory_format=channels_last))

    return logits_of


def _huggingface(directory: Path, manifest: dict, device: torch.device) -> TorchImageTarget:
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    folder = inside_model_directory(directory, manifest.get("directory", "."), "directory")
    if not (folder / "config.json").is_file():
        raise InputError(f"target {str(directory)!r}: no Hugging Face config.json in {folder}")
    try:
        model = AutoModelForImageClassification.from_pretrained(
            folder, local_files_only=True, use_safetensors=True, trust_remote_code=False
        )
        processor = AutoImageProcessor.from_pretrained(
            folder, local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        raise InputError(
            f"target {str(folder)!r}: not a loadable image classifier ({first})"
        ) from None
    model = prepare(model, device)

    def logits_of(images: np.ndarray) -> torch.Tensor:
        rgb = np.repeat(images, 3, axis=-1) if images.shape[-1] == 1 else images
        inputs = processor(images=list(rgb), return_tensors="pt")
        return model(**{k: v.to(device, non_blocking=True) for k, v in inputs.items()}).logits

    files = {
        f.name: file_sha256(f) for f in sorted(folder.iterdir()) if f.is_file()
    }  # config, weights, processor
    return TorchImageTarget(logits_of, files, "hf-image-classification", device)


def load_image_target(
    directory: Path,
    manifest: dict,
    trusted_modules: Iterable[str] = (),
    device: torch.device | None = None,
) -> TorchImageTarget | OnnxImageTarget:
    device = device or torch.device("cpu")
    kind = manifest["format"]
    if kind == "hf-image-classification":
        return _huggingface(directory, manifest, device)
    normalization = _normalization(directory, manifest)
    if kind == "onnx":
        from panoramia.modalities.image.onnx_target import OnnxImageTarget

        return OnnxImageTarget.load(directory, manifest, normalization, device)
    if kind == "torch-safetensors":
        model, files = load_safetensors_module(directory, manifest, trusted_modules)
    else:  # torchscript (panoramia.targets.load_target opens only the declared formats)
        model, files = load_torchscript_module(directory, manifest)
    return TorchImageTarget(_module_logits(model, normalization, device), files, kind, device)
