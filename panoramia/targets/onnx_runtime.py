"""Running a checked ONNX graph (:mod:`panoramia.targets.onnx_graph`) with onnxruntime.

The session is built from the model's bytes (external data read in beforehand, so the runtime
opens no file), with the execution providers named here only (the CPU; CUDA where
``onnxruntime-gpu`` is installed and the audit runs on a CUDA device), no custom operator
library, one inter-op thread and as many intra-op threads as torch's: the job's ``threads``
pins those (``panoramia.pipeline.app``), so ``threads=1`` runs the graph on one thread.

Inputs are fed a batch at a time; a graph exported for a fixed batch size (``torch.onnx.export``
without a dynamic batch axis) is fed batches of exactly that size, the last one padded with
copies of its last example and cut back after. Anything the runtime refuses while running is
one line naming the model.

:class:`OnnxClassifier` is what the image and tabular ONNX targets share: a session, the
output holding class scores and what they are declared to be, the losses of labels from
them, and the target's identity in the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from panoramia.errors import InputError
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.onnx_graph import GraphValue, OnnxGraph

if TYPE_CHECKING:
    import onnxruntime

PROBABILITY_TOLERANCE = 1e-3
"""How far from 1 a row of declared probabilities may sum (float32 rounding), and outside
[0, 1] a probability may lie."""
NUMPY_TYPES: dict[str, type] = {
    "float": np.float32,
    "double": np.float64,
    "float16": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}
"""The numpy type fed to each ONNX tensor element type this project feeds."""


def _runtime_errors() -> tuple[type[BaseException], ...]:
    """What onnxruntime raises (its own types derive from Exception directly)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    names = (
        "Fail",
        "InvalidArgument",
        "InvalidGraph",
        "InvalidProtobuf",
        "NoModel",
        "NotImplemented",
        "RuntimeException",
        "EPFail",
        "EngineError",
        "NoSuchFile",
        "NotFound",
        "ModelRequiresCompilation",
    )
    found = tuple(getattr(state, name) for name in names if hasattr(state, name))
    return (*found, RuntimeError, ValueError, TypeError, MemoryError)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def providers_for(device: object) -> list[Any]:
    """The execution providers: CUDA first where it is installed and ``device`` is a CUDA
    ``torch.device``, then the CPU (never onnxruntime's other defaults)."""
    import onnxruntime as ort

    if getattr(device, "type", None) == "cuda" and "CUDAExecutionProvider" in (
        ort.get_available_providers()
    ):
        index = getattr(device, "index", None) or 0
        return [("CUDAExecutionProvider", {"device_id": index}), "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def intra_op_threads() -> int:
    """Torch's intra-op thread count (what the job's ``threads`` pins)."""
    import torch

    return int(torch.get_num_threads())


@dataclass
class OnnxSession:
    """An onnxruntime session over a checked graph."""

    session: onnxruntime.InferenceSession
    graph: OnnxGraph

    @classmethod
    def open(cls, graph: OnnxGraph, device: object = None) -> OnnxSession:
        """A session of ``graph`` on ``device`` (see the module docstring)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # errors only: the audit's console stays readable
        options.add_session_config_entry("session.load_model_format", "ONNX")
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        content = graph.model_bytes()
        try:
            session = ort.InferenceSession(
                content, sess_options=options, providers=providers_for(device)
            )
        except _runtime_errors() as error:
            raise InputError(
                f"{graph.shown}: onnxruntime cannot open it ({_first_line(error)})"
            ) from None
        return cls(session, graph)

    def batch_size(self, names: list[str], default: int) -> tuple[int, bool]:
        """The fixed first dimension the inputs ``names`` declare, else ``default``; and
        whether it is fixed."""
        fixed = {
            value.dims[0]
            for value in (self.graph.inputs[name] for name in names)
            if value.dims and value.dims[0] is not None
        }
        if len(fixed) > 1:
            raise InputError(f"{self.graph.shown}: its inputs fix different batch sizes {fixed}")
        if not fixed:
            return default, False
        size = fixed.pop()
        if size < 1:
            raise InputError(f"{self.graph.shown}: its inputs fix a batch of {size} examples")
        return size, True

    def run(self, feeds: Mapping[str, np.ndarray], output: str, *, batch: int) -> Any:
        """The output ``output`` of ``feeds`` (every array of the same length n, fed
        ``batch`` examples at a time, or the graph's fixed batch size): an array with n rows,
        or a list of n items for a non-tensor output (a ZipMap's dictionaries)."""
        n = len(next(iter(feeds.values())))
        size, fixed = self.batch_size(list(feeds), batch)
        parts: list[Any] = []
        for start in range(0, n, size):
            chunk = {name: values[start : start + size] for name, values in feeds.items()}
            real = min(size, n - start)
            if fixed and real < size:  # pad with copies of the last example
                chunk = {
                    name: np.concatenate([values, np.repeat(values[-1:], size - real, axis=0)])
                    for name, values in chunk.items()
                }
            try:
                (result,) = self.session.run([output], chunk)
            except _runtime_errors() as error:
                raise InputError(
                    f"{self.graph.shown}: onnxruntime failed on the data ({_first_line(error)})"
                ) from None
            parts.append(result[:real])
        if not parts:
            return []
        if isinstance(parts[0], np.ndarray):
            return np.concatenate(parts)
        return [item for part in parts for item in part]


@dataclass
class OnnxClassifier:
    """A classifier's session, its score output and what the output holds (``scores``:
    ``probabilities`` or ``logits``); the modalities' ONNX targets add how data is fed."""

    session: OnnxSession
    output: GraphValue
    scores: str

    @property
    def shown(self) -> str:
        """How errors name the model: ``model 'model.onnx'``."""
        return self.session.graph.shown

    def scores_of(self, feeds: Mapping[str, np.ndarray], *, batch: int) -> np.ndarray:
        """The (n, K) class scores of ``feeds`` (:func:`scores_matrix`)."""
        result = self.session.run(feeds, self.output.name, batch=batch)
        return scores_matrix(result, self.output, self.shown)

    def losses(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Cross-entropy (nats) of each example's class from its scores (:func:`class_losses`)."""
        return class_losses(scores, labels, self.scores, output=self.output.name, shown=self.shown)

    def identity(self) -> dict[str, object]:
        """The report's record of the model: the format, the exporter, the files' hashes."""
        graph = self.session.graph
        return {"format": "onnx", "producer": graph.producer(), "sha256": graph.files}


def scores_matrix(result: Any, output: GraphValue, shown: str) -> np.ndarray:
    """An output's class scores as an (n, K) array: a ZipMap's dictionaries in its class
    order; a single column (or a vector), a binary model's score of class 1, as two
    columns (its complement, or a logit of 0 for class 0)."""
    if output.kind == "sequence_map":
        labels = list(output.labels or (list(result[0]) if result else []))
        try:
            return np.array([[row[key] for key in labels] for row in result], dtype=np.float64)
        except (KeyError, TypeError):
            raise InputError(
                f"{shown}: output {output.name!r} is not a ZipMap of classes"
            ) from None
    scores = np.asarray(result)
    if scores.ndim == 1:
        scores = scores[:, None]
    if scores.ndim != 2:
        raise InputError(
            f"{shown}: output {output.name!r} has shape {scores.shape}; class scores are "
            "(examples, classes)"
        )
    return scores


def class_losses(
    scores: np.ndarray, labels: np.ndarray, kind: str, *, output: str, shown: str
) -> np.ndarray:
    """Cross-entropy (nats) of each example's class ``labels`` (int, shape (n,)) from its
    (n, K) ``scores``: ``probabilities`` (each row in [0, 1] and summing to 1, checked) or
    ``logits`` (softmax'd in their own precision, float32 as the torch targets do). A single
    column is the score of class 1 of a binary model: p, or the logit of class 1 over class 0.
    Float64 of shape (n,)."""
    import torch

    if len(labels) == 0:
        return np.zeros(0)
    if not np.isfinite(scores).all():
        raise InputError(f"{shown}: output {output!r} holds values that are not finite numbers")
    if scores.dtype not in (np.float32, np.float64):
        scores = scores.astype(np.float32)
    if scores.shape[1] == 1:
        other = 1.0 - scores if kind == "probabilities" else np.zeros_like(scores)
        scores = np.concatenate([other, scores], axis=1)
    if int(labels.max()) >= scores.shape[1]:
        raise InputError(
            f"{shown}: label class {int(labels.max())} but output {output!r} scores "
            f"{scores.shape[1]} classes"
        )
    if kind == "logits":
        losses = torch.nn.functional.cross_entropy(
            torch.from_numpy(np.ascontiguousarray(scores)),
            torch.from_numpy(labels.astype(np.int64)),
            reduction="none",
        )
        return losses.double().numpy()
    low, high, sums = float(scores.min()), float(scores.max()), scores.sum(axis=1)
    worst = float(sums[np.argmax(np.abs(sums - 1))])
    if min(low, 1 - high) < -PROBABILITY_TOLERANCE or abs(worst - 1) > PROBABILITY_TOLERANCE:
        raise InputError(
            f"{shown}: output {output!r} was declared probabilities, but its values run from "
            f"{low:.4g} to {high:.4g} and a row sums to {worst:.4g} (logits? declare "
            '"scores": "logits")'
        )
    return loss_from_probabilities(scores, labels)
