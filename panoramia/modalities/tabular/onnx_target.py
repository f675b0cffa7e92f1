"""ONNX tabular targets (``"format": "onnx"``), run by onnxruntime; the graph is checked first
(:mod:`panoramia.targets.onnx_graph`: standard operators only, weights inside the folder, size
and shape limits).

Three ways the data's columns reach the graph, by what ``target.json`` gives:

* ``encoder`` (the project's :class:`~panoramia.modalities.tabular.encoding.TabularEncoder`
  JSON): one input takes the encoded rows, float (n, n_features), as the xgboost, torch and
  TorchScript targets take them; the classes are the encoder's;
* ``features`` (a list of data columns): one input takes those columns' numbers, in that
  order, (n, len(features)) (a LightGBM or XGBoost model trained on numbers, converted with
  onnxmltools);
* neither: one input per column, as skl2onnx exports a ``Pipeline`` over a DataFrame
  (``ColumnTransformer`` with a ``OneHotEncoder``): each input is fed the data column of its
  name, of shape (n, 1) (or (n,)) in the input's type (``string``, ``float``, ``double``,
  integers). skl2onnx names an input ``marital_status`` for a column ``marital-status``: a
  column whose name, with every character but letters, digits and ``_`` made ``_``, is the
  input's is taken when no column bears the input's own name; ``columns`` (``{input:
  column}``) says so explicitly.

Without an encoder, ``classes`` lists the data's label values in the model's class-index
order (as for ``xgboost-json``), and the label is ``label`` or else the one data column the
model does not read. ``output`` names the output that holds the class scores (default: the
one that can); ``scores`` says whether they are ``probabilities`` or ``logits``; a single
column is class 1's of a binary model. skl2onnx's default output, a ZipMap (a sequence of
``{class: probability}`` maps), is taken as it is, in its class order (exporting with
``options={"zipmap": False}`` gives a plain tensor, which is faster).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.modalities.tabular.frame_features import (
    class_indices,
    label_column,
    manifest_classes,
    numbers,
)
from panoramia.targets.interface import shown_values
from panoramia.targets.manifest import manifest_file
from panoramia.targets.onnx_graph import GraphValue, named_columns, named_input, open_classifier
from panoramia.targets.onnx_runtime import NUMPY_TYPES, OnnxClassifier, OnnxSession

BATCH = 8192
NUMBER_TYPES = ("float", "double", "float16")
INTEGER_TYPES = ("int64", "int32", "int16", "int8", "uint8")


def exported_name(column: str) -> str:
    """A column's name as skl2onnx names its input: every character but ASCII letters,
    digits and ``_`` made ``_``."""
    return re.sub(r"[^0-9A-Za-z_]", "_", column)


def _feed(rows: pd.DataFrame, column: str, value: GraphValue, shown: str) -> np.ndarray:
    """A data column as the graph input ``value`` takes it: (n, 1), or (n,) for a vector."""
    element = value.element or ""
    if element == "string":
        array: np.ndarray = rows[column].astype(str).to_numpy(dtype=object)
    elif element in NUMBER_TYPES or element in INTEGER_TYPES or element == "bool":
        values = numbers(rows, column)
        if element in INTEGER_TYPES and (values % 1 != 0).any():
            raise InputError(
                f"{shown}: input {value.name!r} takes {element} integers but column "
                f"{column!r} holds other numbers"
            )
        array = values.to_numpy(dtype=NUMPY_TYPES[element])
    else:
        raise InputError(f"{shown}: input {value.name!r} is {value.shown()}, not a column's type")
    return array if value.dims is not None and len(value.dims) == 1 else array[:, None]


@dataclass
class OnnxTabularTarget(OnnxClassifier):
    """An ONNX classifier over a table's rows (see the module docstring)."""

    encoder: TabularEncoder | None = None
    features: list[str] | None = None
    """The ``features`` layout: the columns of its one input, in order."""
    tensor_input: GraphValue | None = None
    """The one input of the ``encoder`` and ``features`` layouts."""
    columns: dict[str, str] = field(default_factory=dict)
    """The manifest's ``columns``: input → data column."""
    classes: list[str] | None = None
    label: str | None = None

    @classmethod
    def load(cls, directory: Path, manifest: dict, device: object = None) -> OnnxTabularTarget:
        """The target of ``manifest`` in ``directory`` (see the module docstring); one-line
        InputError for a graph or manifest that does not fit."""
        graph, output, scores = open_classifier(directory, manifest)
        where = f"target {str(directory)!r}"
        kwargs: dict[str, Any] = {}
        width: tuple[int, str] | None = None
        if "encoder" in manifest and "features" in manifest:
            raise InputError(f"{where}: give 'encoder' or 'features', not both")
        if "encoder" in manifest:
            encoder_path = manifest_file(directory, manifest, "encoder")
            graph.files["encoder"] = file_sha256(encoder_path)
            encoder = TabularEncoder.load(encoder_path)
            kwargs = {"encoder": encoder, "tensor_input": named_input(graph, manifest)}
            width = (encoder.n_features, f"the encoder gives {encoder.n_features}")
        else:
            kwargs["classes"] = manifest_classes(
                manifest, where=str(directory), model="an ONNX model without an 'encoder'"
            )
            if manifest.get("label") is not None:
                kwargs["label"] = str(manifest["label"])
            features = manifest.get("features")
            if features is not None:
                if not isinstance(features, list) or not features:
                    raise InputError(
                        f"{where}: 'features' lists the data columns of the model's input, in order"
                    )
                kwargs["features"] = [str(f) for f in features]
                kwargs["tensor_input"] = named_input(graph, manifest)
                width = (len(features), f"'features' lists {len(features)}")
            else:
                kwargs["columns"] = named_columns(graph, manifest)
        if width is not None:
            _check_matrix(kwargs["tensor_input"], *width, graph.shown)
        return cls(OnnxSession.open(graph, device), output, scores, **kwargs)

    def _read(self, rows: pd.DataFrame) -> dict[str, str]:
        """Each input of the one-input-per-column layout → the data column it is fed: the
        manifest's ``columns``, else the column of the input's name, else the one column
        whose exported name it is."""
        by_export: dict[str, list[str]] = {}
        for column in map(str, rows.columns):
            by_export.setdefault(exported_name(column), []).append(column)
        read: dict[str, str] = {}
        unmatched: list[str] = []
        for name in self.session.graph.inputs:
            exported = by_export.get(name, [])
            if name in self.columns:
                read[name] = self.columns[name]
            elif name in rows.columns:
                read[name] = name
            elif len(exported) == 1:
                read[name] = exported[0]
            else:
                unmatched.append(name)
        if unmatched:
            raise InputError(
                f"{self.shown}: its inputs {shown_values(unmatched)} match no data column "
                f"(the data's: {shown_values([str(c) for c in rows.columns])}); map them "
                'with "columns": {"input": "column"} in target.json'
            )
        return read

    def _feeds(self, rows: pd.DataFrame) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """What each input is fed, and the class index of each row's label."""
        if self.encoder is not None:
            assert self.tensor_input is not None
            element = NUMPY_TYPES[self.tensor_input.element or "float"]
            encoded: np.ndarray = self.encoder.features(rows).astype(element)
            return {self.tensor_input.name: encoded}, self.encoder.labels(rows)
        assert self.classes is not None
        if self.features is None:
            read = self._read(rows)
            label = label_column(rows, list(read.values()), self.label, reads="columns")
            inputs = self.session.graph.inputs
            feeds = {n: _feed(rows, c, inputs[n], self.shown) for n, c in read.items()}
            return feeds, class_indices(rows, label, self.classes)
        assert self.tensor_input is not None
        names = self.features
        label = label_column(rows, names, self.label, reads="columns")
        labels = class_indices(rows, label, self.classes)
        element = NUMPY_TYPES[self.tensor_input.element or "float"]
        matrix = np.column_stack([numbers(rows, c).to_numpy() for c in names])
        return {self.tensor_input.name: matrix.astype(element)}, labels

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        """Cross-entropy (nats) of each row's label, float64 of shape (n_rows,)."""
        feeds, labels = self._feeds(rows)
        if len(labels) == 0:
            return np.zeros(0)
        scores = self.scores_of(feeds, batch=BATCH)
        wanted = len(self.classes) if self.classes else self.encoder.n_classes  # type: ignore[union-attr]
        if max(scores.shape[1], 2) != wanted:
            raise InputError(
                f"{self.shown}: output {self.output.name!r} scores {max(scores.shape[1], 2)} "
                f"classes, the {'manifest' if self.classes else 'encoder'} names {wanted}"
            )
        return self.losses(scores, labels)


def _check_matrix(value: GraphValue, width: int, source: str, shown: str) -> None:
    """InputError unless ``value`` is a float matrix whose fixed width (if any) is ``width``
    (``source`` says where that width comes from)."""
    if value.element not in NUMBER_TYPES:
        raise InputError(
            f"{shown}: input {value.name!r} is {value.shown()}; one tensor of a table's rows "
            "takes floats"
        )
    if value.dims is not None and len(value.dims) != 2:
        raise InputError(
            f"{shown}: input {value.name!r} is {value.shown()}; a table's rows are (n, columns)"
        )
    if value.dims is not None and value.dims[1] is not None and value.dims[1] != width:
        raise InputError(
            f"{shown}: input {value.name!r} takes {value.dims[1]} values a row; {source}"
        )
