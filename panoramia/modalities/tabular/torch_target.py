"""Torch tabular targets: an ``nn.Module`` class + safetensors weights, or a TorchScript
archive, over rows encoded by the target's own encoder (``encoder`` of the manifest)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from panoramia.devices import forward_passes, prepare, to_device
from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.targets.manifest import manifest_file
from panoramia.targets.torch_models import load_safetensors_module, load_torchscript_module

BATCH = 8192


@dataclass
class TorchTabularTarget:
    """A torch classifier over encoded rows; loss is the cross-entropy of the true label.
    Forward passes run on ``device`` (:mod:`panoramia.devices`)."""

    model: torch.nn.Module
    encoder: TabularEncoder
    files: dict[str, str]
    kind: str
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    def __post_init__(self) -> None:
        self.model = prepare(self.model, self.device)

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        """Cross-entropy (nats) of each row's label, float64 of shape (n_rows,)."""
        features = self.encoder.features(rows)
        labels = self.encoder.labels(rows)
        losses = []
        with forward_passes(self.device):
            for i in range(0, len(labels), BATCH):
                logits = self.model(to_device(features[i : i + BATCH], self.device)).float()
                target = to_device(labels[i : i + BATCH], self.device)
                losses.append(
                    torch.nn.functional.cross_entropy(logits, target, reduction="none").cpu()
                )
        return torch.cat(losses).double().numpy() if losses else np.zeros(0)

    def identity(self) -> dict[str, object]:
        return {"format": self.kind, "sha256": self.files}


def load_torch_target(
    directory: Path,
    manifest: dict,
    trusted_modules: Iterable[str] = (),
    device: torch.device | None = None,
) -> TorchTabularTarget:
    encoder_path = manifest_file(directory, manifest, "encoder")
    encoder = TabularEncoder.load(encoder_path)
    if manifest["format"] == "torch-safetensors":
        model, files = load_safetensors_module(directory, manifest, trusted_modules)
    else:
        model, files = load_torchscript_module(directory, manifest)
    files["encoder"] = file_sha256(encoder_path)
    return TorchTabularTarget(
        model.eval(), encoder, files, manifest["format"], device or torch.device("cpu")
    )
