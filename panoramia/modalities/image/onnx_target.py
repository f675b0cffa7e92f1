"""ONNX image classifiers (``"format": "onnx", "modality": "image"``), run by onnxruntime
after the graph's checks (:mod:`panoramia.targets.onnx_graph`).

The manifest gives, beside ``file``: ``normalization`` (``{"mean": [...], "std": [...]}``
per channel, of pixels scaled to [0, 1], as for the torch formats), ``scores``
(``logits`` or ``probabilities``), and optionally ``input`` and ``output`` (the graph's names;
default its only input and its one score output) and ``layout``: ``NCHW`` (default, as
``torch.onnx.export`` writes a torch network's input) or ``NHWC``. The input is fed float32
(or the input's float type) normalised images; an input that fixes its channels, height or
width must match the audited images'. The loss of an image is the cross-entropy (nats) of its
label, a class number of the audited data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from panoramia.errors import InputError
from panoramia.modalities.image.image_module import Normalization
from panoramia.modalities.image.images import ImageSet
from panoramia.targets.interface import MIN_PROBABILITY
from panoramia.targets.onnx_graph import GraphValue, named_input, open_classifier
from panoramia.targets.onnx_runtime import NUMPY_TYPES, OnnxClassifier, OnnxSession

BATCH = 1024
LAYOUTS = ("NCHW", "NHWC")
FLOATS = ("float", "double", "float16")


@dataclass
class OnnxImageTarget(OnnxClassifier):
    """An ONNX classifier from normalised images to class scores (see the module docstring)."""

    image_input: GraphValue
    normalization: Normalization
    layout: str

    @classmethod
    def load(
        cls, directory: Path, manifest: dict, normalization: Normalization, device: object = None
    ) -> OnnxImageTarget:
        """The target of ``manifest`` in ``directory`` (see the module docstring); one-line
        InputError for a graph or manifest that does not fit."""
        graph, output, scores = open_classifier(directory, manifest)
        image_input = named_input(graph, manifest)
        layout = manifest.get("layout", "NCHW")
        if layout not in LAYOUTS:
            raise InputError(
                f"target {str(directory)!r}: 'layout' is one of {', '.join(LAYOUTS)}, got "
                f"{str(layout)[:20]!r}"
            )
        if image_input.element not in FLOATS or (
            image_input.dims is not None and len(image_input.dims) != 4
        ):
            raise InputError(
                f"{graph.shown}: input {image_input.name!r} is {image_input.shown()}; an image "
                f"classifier takes float images ({layout})"
            )
        session = OnnxSession.open(graph, device)
        return cls(session, output, scores, image_input, normalization, layout)

    def _pixels(self, images: np.ndarray) -> np.ndarray:
        """uint8 (N, H, W, C) images as the input takes them, normalised."""
        pixels = self.normalization.tensor(images).numpy()  # (N, C, H, W), float32
        if self.layout == "NHWC":
            pixels = np.ascontiguousarray(pixels.transpose(0, 2, 3, 1))
        return pixels.astype(NUMPY_TYPES[self.image_input.element or "float"], copy=False)

    def _check_shape(self, images: np.ndarray) -> None:
        _, height, width, channels = images.shape
        wanted = (channels, height, width) if self.layout == "NCHW" else (height, width, channels)
        dims = self.image_input.dims
        if dims is not None and any(
            d is not None and d != w for d, w in zip(dims[1:], wanted, strict=True)
        ):
            raise InputError(
                f"{self.shown}: input {self.image_input.name!r} is {self.image_input.shown()}; "
                f"the audited images are {height}x{width} with {channels} channel(s) "
                f"({self.layout}: [N, {', '.join(map(str, wanted))}])"
            )

    def image_scores(self, images: np.ndarray) -> np.ndarray:
        """The output's (N, K) class scores of uint8 (N, H, W, C) images."""
        self._check_shape(images)
        if len(images) == 0:
            return np.zeros((0, 0), dtype=np.float32)
        name = self.image_input.name
        parts = [
            self.scores_of({name: self._pixels(images[i : i + BATCH])}, batch=BATCH)
            for i in range(0, len(images), BATCH)
        ]
        return np.concatenate(parts)

    def logits(self, images: np.ndarray) -> np.ndarray:
        """float32 logits (N, K) of uint8 (N, H, W, C) images (log-probabilities where the
        output holds probabilities)."""
        scores = self.image_scores(images)
        if self.scores == "probabilities":
            scores = np.log(np.clip(scores, MIN_PROBABILITY, 1.0))
        return scores.astype(np.float32)

    def per_example_loss(self, batch: ImageSet) -> np.ndarray:
        """Cross-entropy (nats) of each image's label, float64 of shape (N,)."""
        if len(batch.labels) == 0:
            return np.zeros(0)
        return self.losses(self.image_scores(batch.images), batch.labels)
