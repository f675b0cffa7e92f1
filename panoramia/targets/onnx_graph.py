"""An ONNX model file as data: read, checked and described without running it.

An ONNX graph carries no code, but a runtime would run whatever operators it names, read
whatever files its weights point at, and allocate whatever its shapes declare. So before any
session opens one (:mod:`panoramia.targets.onnx_runtime`), and when a model folder is uploaded
(:func:`check_onnx_target`), :func:`open_onnx_graph` refuses, with one line naming the problem:

* a file that is not ``.onnx`` or over :data:`MAX_ONNX_BYTES` (with its external data);
* a node of any domain but the standard ones (:data:`STANDARD_DOMAINS`: ``ai.onnx`` and
  ``ai.onnx.ml``): no custom operator, no ``com.microsoft`` contrib operator, no call of a
  model-local function (whose domain is its own), at any depth of subgraphs;
* external data (weights in files beside the ``.onnx``, as ``torch.onnx.export`` writes them
  by default) that lies outside the model's folder, in a file that is missing or shorter than
  the weights it is said to hold, or that names a memory address instead of a file;
* more than :data:`MAX_NODES` nodes, :data:`MAX_INITIALIZERS` weight tensors, weights that
  declare more than :data:`MAX_ONNX_BYTES`, subgraphs nested deeper than
  :data:`MAX_GRAPH_DEPTH`, more than :data:`MAX_VALUES` inputs or outputs, an input of rank
  over :data:`MAX_RANK` or with a fixed dimension over :data:`MAX_INPUT_DIM` (or one example
  over :data:`MAX_EXAMPLE_ELEMENTS` values);
* what ``onnx.checker`` refuses.

The manifest's fields shared by the three modalities' ONNX targets (``target.json``):
``file`` (the ``.onnx``, inside the folder), ``input`` and ``output`` (the graph's names; each
modality has its default), ``scores`` (``probabilities`` or ``logits``: what the output
holds, :data:`SCORES`; always declared). This module imports ``onnx`` only (no runtime): the
service's upload checks call it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.targets.interface import shown_values
from panoramia.targets.manifest import manifest_file

if TYPE_CHECKING:
    import onnx

ONNX_FORMAT = "onnx"
"""The ``format`` of an ONNX target's manifest (each modality opens it: ``"modality"``)."""
STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml"})
"""The operator domains a node may be of (``""`` is ``ai.onnx``)."""
SCORES = ("probabilities", "logits")
"""What a classifier's output may be declared to hold (the manifest's ``scores``)."""
MAX_ONNX_BYTES = 2**30
"""The most bytes of a model: its ``.onnx`` and external data files together (1 GiB), and
the most its weights may declare."""
MAX_NODES = 200_000
"""Nodes in all of a model's graphs (GPT-2 small exports about 3,000)."""
MAX_INITIALIZERS = 100_000
"""Weight tensors (initializers, sparse ones and constant attributes) in all its graphs."""
MAX_GRAPH_DEPTH = 16
"""How deep subgraphs (``If``, ``Loop``, ``Scan`` bodies) may nest."""
MAX_VALUES = 10_000
"""Inputs, or outputs, of the main graph (a table's columns each an input: the CSV cap)."""
MAX_RANK = 8
"""The most dimensions of an input."""
MAX_INPUT_DIM = 2**20
"""The largest fixed dimension of an input."""
MAX_EXAMPLE_ELEMENTS = 2**24
"""The most values of one example of an input (its fixed dimensions past the first)."""
SCORE_OUTPUTS = ("logits", "probabilities", "output_probability")
"""Output names taken, in this order, where the manifest names no ``output`` and the graph
has several that could hold scores (a causal LM's ``logits`` beside its cache's ``present.*``;
skl2onnx's ``probabilities``/``output_probability`` beside the label)."""
ORT_MEMORY_TAG = "_ORT_MEM_ADDR_"
"""What onnxruntime reads as "the weights are at this memory address": never a file here."""


@dataclass(frozen=True)
class GraphValue:
    """A graph input or output as its type declares it."""

    name: str
    kind: str
    """``tensor``, ``sequence_map`` (a sequence of maps: skl2onnx's ZipMap) or ``other``."""
    element: str | None = None
    """A tensor's element type, ONNX's name in lower case (``float``, ``double``,
    ``int64``, ``string``); a ZipMap's value type."""
    dims: tuple[int | None, ...] | None = None
    """A tensor's dimensions (None for a symbolic one), or None when its rank is unknown."""
    labels: tuple[str | int, ...] | None = None
    """A ZipMap output's class labels, in the model's class order (its keys)."""

    def shown(self) -> str:
        """How an error names its type: ``tensor(float)[N, 86]``, ``sequence(map)``."""
        if self.kind != "tensor":
            return "sequence(map)" if self.kind == "sequence_map" else "a non-tensor value"
        shape = "" if self.dims is None else "[" + ", ".join(_dim(d) for d in self.dims) + "]"
        return f"tensor({self.element}){shape}"


def _dim(value: int | None) -> str:
    return "N" if value is None else str(value)


@dataclass
class OnnxGraph:
    """A checked ONNX model: its proto (external data not loaded), where it lies, its
    files' hashes, its feedable inputs and its outputs by name."""

    path: Path
    model: onnx.ModelProto
    files: dict[str, str]
    inputs: dict[str, GraphValue]
    outputs: dict[str, GraphValue]
    external: bool = False
    """Whether some weights lie in external data files (loaded by :meth:`model_bytes`)."""
    shown: str = field(default="")

    def producer(self) -> str:
        """The exporter that wrote it (``skl2onnx 1.20.0``), at most 80 characters."""
        words = f"{self.model.producer_name} {self.model.producer_version}".strip()
        return words[:80]

    def model_bytes(self) -> bytes:
        """The whole model, weights included, serialised for a runtime: external data read
        into the proto here (paths checked before), so the runtime opens no file of its own."""
        import onnx
        from onnx.external_data_helper import load_external_data_for_model

        if self.external:
            try:
                load_external_data_for_model(self.model, str(self.path.parent))
            except (OSError, ValueError, onnx.checker.ValidationError) as error:
                raise InputError(f"{self.shown}: its external data: {_first_line(error)}") from None
            self.external = False
            if any(_is_external(t) for t in _tensors(self.model, self.shown)):
                raise InputError(f"{self.shown}: external data left unread (a sparse weight?)")
        try:
            return self.model.SerializeToString()
        except ValueError as error:  # protobuf's 2 GB
            raise InputError(f"{self.shown}: {_first_line(error)}") from None


def open_onnx_graph(directory: Path, manifest: Mapping[str, Any]) -> OnnxGraph:
    """The ONNX model the manifest's ``file`` names, checked (see the module docstring);
    InputError of one line otherwise."""
    import onnx
    from google.protobuf.message import DecodeError

    directory = Path(directory)
    path = manifest_file(directory, dict(manifest), "file")
    shown = f"model {str(path)!r}"
    if path.suffix.lower() != ".onnx":
        raise InputError(f"{shown}: an ONNX target's file ends in .onnx")
    size = path.stat().st_size
    if size > MAX_ONNX_BYTES:
        raise InputError(f"{shown}: {size} bytes; an ONNX model may take {MAX_ONNX_BYTES}")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, OSError, ValueError, RuntimeError) as error:
        raise InputError(f"{shown}: not an ONNX model ({_first_line(error)})") from None
    if not model.HasField("graph"):
        raise InputError(f"{shown}: not an ONNX model (no graph)")
    _check_operators(model, shown)
    external = _check_weights(model, directory, path, size, shown)
    files = {"file": file_sha256(path)}
    for name, location in sorted(external.items()):
        files[f"external/{name}"] = file_sha256(location)
    try:
        onnx.checker.check_model(str(path))
    except (onnx.checker.ValidationError, OSError, ValueError, RuntimeError) as error:
        raise InputError(f"{shown}: not a valid ONNX model ({_first_line(error)})") from None
    inputs, outputs = _interface(model, shown)
    return OnnxGraph(path, model, files, inputs, outputs, external=bool(external), shown=shown)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    for attribute in node.attribute:
        if attribute.HasField("g"):
            yield attribute.g
        yield from attribute.graphs


def _graphs(model: onnx.ModelProto, shown: str) -> Iterator[onnx.GraphProto]:
    """Every graph of the model: the main one, its training graphs, and their subgraphs at
    any depth up to :data:`MAX_GRAPH_DEPTH` (InputError past it)."""
    roots = [model.graph]
    for info in model.training_info:
        roots += [info.initialization, info.algorithm]
    stack = [(graph, 0) for graph in roots]
    while stack:
        graph, depth = stack.pop()
        if depth > MAX_GRAPH_DEPTH:
            raise InputError(f"{shown}: subgraphs nest deeper than {MAX_GRAPH_DEPTH} levels")
        yield graph
        stack += [(inner, depth + 1) for node in graph.node for inner in _subgraphs(node)]


def _nodes(model: onnx.ModelProto, shown: str) -> Iterator[onnx.NodeProto]:
    """Every node: of every graph, and of the model's local functions (and their subgraphs)."""
    for graph in _graphs(model, shown):
        yield from graph.node
    stack = [(node, 0) for function in model.functions for node in function.node]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_GRAPH_DEPTH:
            raise InputError(f"{shown}: subgraphs nest deeper than {MAX_GRAPH_DEPTH} levels")
        yield node
        stack += [(inner, depth + 1) for graph in _subgraphs(node) for inner in graph.node]


def _check_operators(model: onnx.ModelProto, shown: str) -> None:
    """InputError naming the first node of a domain outside :data:`STANDARD_DOMAINS`, or
    more than :data:`MAX_NODES` nodes."""
    for count, node in enumerate(_nodes(model, shown), start=1):
        if count > MAX_NODES:
            raise InputError(f"{shown}: more than {MAX_NODES} nodes")
        if node.domain not in STANDARD_DOMAINS:
            which = f"node {node.name[:60]!r}" if node.name else "a node"
            raise InputError(
                f"{shown}: {which} is operator {node.op_type[:60]!r} of domain "
                f"{node.domain[:60]!r}; only the standard domains (ai.onnx, ai.onnx.ml) are "
                "run (no custom or contrib operators, no model-local functions)"
            )


def _tensors(model: onnx.ModelProto, shown: str) -> Iterator[onnx.TensorProto]:
    """Every tensor the model stores: initializers (dense and sparse) and constant
    attributes, of every graph and function."""
    for graph in _graphs(model, shown):
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield sparse.values
            yield sparse.indices
    for node in _nodes(model, shown):
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            sparse_tensors = list(attribute.sparse_tensors)
            if attribute.HasField("sparse_tensor"):
                sparse_tensors.append(attribute.sparse_tensor)
            for sparse in sparse_tensors:
                yield sparse.values
                yield sparse.indices


def _is_external(tensor: onnx.TensorProto) -> bool:
    import onnx

    return tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data) > 0


def _declared_bytes(tensor: onnx.TensorProto) -> int:
    """What the tensor's dimensions and type say it holds (strings: their lengths)."""
    import onnx

    if tensor.data_type == onnx.TensorProto.STRING:
        return sum(len(s) for s in tensor.string_data)
    try:
        item = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError, TypeError):
        item = 8
    return math.prod(max(int(d), 0) for d in tensor.dims) * item


def _check_weights(
    model: onnx.ModelProto, directory: Path, path: Path, size: int, shown: str
) -> dict[str, Path]:
    """Count and size the stored tensors; check external data (see the module docstring).
    Returns each external data file by the name the model gives it."""
    declared = 0
    external: dict[str, Path] = {}
    for count, tensor in enumerate(_tensors(model, shown), start=1):
        if count > MAX_INITIALIZERS:
            raise InputError(f"{shown}: more than {MAX_INITIALIZERS} weight tensors")
        declared += _declared_bytes(tensor)
        if declared > MAX_ONNX_BYTES:
            raise InputError(f"{shown}: its weights declare more than {MAX_ONNX_BYTES} bytes")
        if _is_external(tensor):
            name, location = _external_file(tensor, directory, path, shown)
            external[name] = location
    total = size + sum(location.stat().st_size for location in set(external.values()))
    if total > MAX_ONNX_BYTES:
        raise InputError(
            f"{shown}: {total} bytes with its external data; an ONNX model may take "
            f"{MAX_ONNX_BYTES}"
        )
    return external


def _external_file(
    tensor: onnx.TensorProto, directory: Path, path: Path, shown: str
) -> tuple[str, Path]:
    """The file an external tensor's data lies in, checked: a relative name inside the
    model's folder, a plain file that holds ``offset + length`` bytes."""
    entries = {entry.key: entry.value for entry in tensor.external_data}
    name = entries.get("location", "")
    where = f"{shown}: weight {tensor.name[:60]!r}'s external data {name[:100]!r}"
    if not name or ORT_MEMORY_TAG in name or name.startswith("*") or "\0" in name:
        raise InputError(f"{where} is not a file name")
    if Path(name).is_absolute():
        raise InputError(f"{where} must be a file inside the model's folder")
    try:  # relative to the .onnx's folder, as runtimes read it
        location = (path.parent / name).resolve()
    except (OSError, RuntimeError, ValueError):
        raise InputError(f"{where} is not a file name") from None
    if not location.is_relative_to(Path(directory).resolve()):
        raise InputError(f"{where} must be a file inside the model's folder")
    if not location.is_file():
        raise InputError(f"{where} is missing")
    try:
        offset = int(entries.get("offset", 0))
        length = int(entries["length"]) if "length" in entries else None
    except ValueError:
        raise InputError(f"{where}: offset and length must be integers") from None
    available = location.stat().st_size
    if offset < 0 or (length is not None and (length < 0 or offset + length > available)):
        raise InputError(f"{where}: the file holds {available} bytes, fewer than declared")
    return name, location


def _value(value: onnx.ValueInfoProto, labels: tuple[str | int, ...] | None) -> GraphValue:
    import onnx

    kind = value.type.WhichOneof("value")
    if kind == "tensor_type":
        tensor = value.type.tensor_type
        element = onnx.TensorProto.DataType.Name(tensor.elem_type).lower()
        dims = None
        if tensor.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
        return GraphValue(value.name, "tensor", element, dims)
    if kind == "sequence_type" and value.type.sequence_type.elem_type.HasField("map_type"):
        mapped = value.type.sequence_type.elem_type.map_type.value_type
        element = None
        if mapped.HasField("tensor_type"):
            element = onnx.TensorProto.DataType.Name(mapped.tensor_type.elem_type).lower()
        return GraphValue(value.name, "sequence_map", element, labels=labels)
    return GraphValue(value.name, "other")


def _zipmap_labels(model: onnx.ModelProto) -> dict[str, tuple[str | int, ...]]:
    """Each ZipMap output's class labels, in the model's class order."""
    labels: dict[str, tuple[str | int, ...]] = {}
    for node in model.graph.node:
        if node.op_type == "ZipMap" and node.domain == "ai.onnx.ml" and node.output:
            for attribute in node.attribute:
                if attribute.name == "classlabels_strings":
                    labels[node.output[0]] = tuple(s.decode() for s in attribute.strings)
                elif attribute.name == "classlabels_int64s":
                    labels[node.output[0]] = tuple(int(i) for i in attribute.ints)
    return labels


def _interface(
    model: onnx.ModelProto, shown: str
) -> tuple[dict[str, GraphValue], dict[str, GraphValue]]:
    """The main graph's inputs a caller feeds (not those an initializer fills) and its
    outputs, by name; InputError past :data:`MAX_VALUES` or the input limits."""
    graph = model.graph
    if len(graph.input) > MAX_VALUES or len(graph.output) > MAX_VALUES:
        raise InputError(f"{shown}: more than {MAX_VALUES} inputs or outputs")
    filled = {tensor.name for tensor in graph.initializer}
    inputs = {v.name: _value(v, None) for v in graph.input if v.name not in filled}
    for value in inputs.values():
        if value.dims is None:
            continue
        if len(value.dims) > MAX_RANK:
            raise InputError(
                f"{shown}: input {value.name!r} has {len(value.dims)} dimensions; "
                f"at most {MAX_RANK}"
            )
        fixed = [d for d in value.dims if d is not None]
        if any(d > MAX_INPUT_DIM for d in fixed):
            raise InputError(
                f"{shown}: input {value.name!r} of shape {value.shown()} has a dimension "
                f"over {MAX_INPUT_DIM}"
            )
        if math.prod(d for d in value.dims[1:] if d is not None) > MAX_EXAMPLE_ELEMENTS:
            raise InputError(
                f"{shown}: input {value.name!r} of shape {value.shown()} takes more than "
                f"{MAX_EXAMPLE_ELEMENTS} values an example"
            )
    labels = _zipmap_labels(model)
    outputs = {v.name: _value(v, labels.get(v.name)) for v in graph.output}
    if not inputs or not outputs:
        raise InputError(f"{shown}: a graph without inputs or outputs")
    return inputs, outputs


def _named(
    graph: OnnxGraph, values: Mapping[str, GraphValue], manifest: Mapping[str, Any], key: str
) -> GraphValue | None:
    """The graph's ``key`` (``input`` or ``output``) the manifest names (None where it names
    none); InputError listing the graph's values where it has no such one."""
    if manifest.get(key) is None:
        return None
    name = str(manifest[key])
    if name not in values:
        listed = shown_values([f"{v.name} {v.shown()}" for v in values.values()])
        raise InputError(
            f"{graph.shown}: no {key} {name[:100]!r} (target.json's {key!r}); the graph's "
            f"{key}s: {listed}"
        )
    return values[name]


def named_input(
    graph: OnnxGraph, manifest: Mapping[str, Any], preferred: Sequence[str] = ()
) -> GraphValue:
    """The input the manifest's ``input`` names; without one, the first of ``preferred`` the
    graph has, else its only input (InputError naming the inputs otherwise)."""
    chosen = _named(graph, graph.inputs, manifest, "input")
    if chosen is not None:
        return chosen
    for name in preferred:
        if name in graph.inputs:
            return graph.inputs[name]
    if len(graph.inputs) != 1:
        raise InputError(
            f"{graph.shown}: inputs {shown_values(list(graph.inputs))}; name the one that "
            "takes the data with 'input' in target.json"
        )
    return next(iter(graph.inputs.values()))


def is_score_value(value: GraphValue) -> bool:
    """Whether an output can hold class scores: a floating-point tensor, or a ZipMap."""
    floating = value.element in ("float", "double", "float16", "bfloat16")
    return value.kind == "sequence_map" or (value.kind == "tensor" and floating)


def score_output(graph: OnnxGraph, manifest: Mapping[str, Any]) -> GraphValue:
    """The output the manifest's ``output`` names, which must hold class scores
    (:func:`is_score_value`); without one, the first of :data:`SCORE_OUTPUTS` the graph has,
    else its one output that can hold scores. InputError naming the outputs otherwise."""
    listed = shown_values([f"{v.name} {v.shown()}" for v in graph.outputs.values()])
    chosen = _named(graph, graph.outputs, manifest, "output")
    if chosen is not None and not is_score_value(chosen):
        raise InputError(
            f"{graph.shown}: output {chosen.name!r} is {chosen.shown()}, not class scores "
            f"(probabilities or logits as floats); the graph's outputs: {listed}"
        )
    if chosen is not None:
        return chosen
    for name in SCORE_OUTPUTS:
        if name in graph.outputs and is_score_value(graph.outputs[name]):
            return graph.outputs[name]
    scores = [v for v in graph.outputs.values() if is_score_value(v)]
    if len(scores) != 1:
        raise InputError(
            f"{graph.shown}: outputs {listed}; name the one holding class scores with "
            "'output' in target.json"
        )
    return scores[0]


def declared_scores(
    graph: OnnxGraph, manifest: Mapping[str, Any], output: GraphValue, allowed: Sequence[str]
) -> str:
    """The manifest's ``scores``: one of ``allowed``, and ``probabilities`` for a ZipMap."""
    scores = manifest.get("scores")
    if scores not in allowed:
        raise InputError(
            f"{graph.shown}: target.json's 'scores' must say what output {output.name!r} "
            f"holds: {' or '.join(repr(s) for s in allowed)}, got {str(scores)[:40]!r}"
        )
    if output.kind == "sequence_map" and scores != "probabilities":
        raise InputError(
            f"{graph.shown}: output {output.name!r} is a ZipMap of class probabilities; "
            'declare "scores": "probabilities"'
        )
    return str(scores)


def open_classifier(
    directory: Path, manifest: Mapping[str, Any], allowed: Sequence[str] = SCORES
) -> tuple[OnnxGraph, GraphValue, str]:
    """The checked graph of ``manifest`` (:func:`open_onnx_graph`), its score output
    (:func:`score_output`) and what the manifest declares that output holds, one of
    ``allowed`` (:func:`declared_scores`)."""
    graph = open_onnx_graph(directory, manifest)
    output = score_output(graph, manifest)
    return graph, output, declared_scores(graph, manifest, output, allowed)


def named_columns(graph: OnnxGraph, manifest: Mapping[str, Any]) -> dict[str, str]:
    """The manifest's ``columns`` (``{input: data column}``, default none), every key an
    input of the graph; InputError otherwise."""
    columns = manifest.get("columns", {})
    if not isinstance(columns, Mapping):
        raise InputError(
            f"{graph.shown}: target.json's 'columns' maps the graph's inputs to data columns "
            '({"input": "column"})'
        )
    unknown = [str(name) for name in columns if name not in graph.inputs]
    if unknown:
        raise InputError(
            f"{graph.shown}: target.json's 'columns' names inputs {shown_values(unknown)} "
            f"the graph lacks (its inputs: {shown_values(list(graph.inputs))})"
        )
    return {str(name): str(column) for name, column in columns.items()}


def check_onnx_target(directory: Path, manifest: Mapping[str, Any]) -> None:
    """What an uploaded ONNX model folder must be, checked without a runtime: the graph, its
    score output with its declared ``scores`` (:func:`open_classifier`), and the inputs the
    manifest names (``input``, and the keys of ``columns``: :func:`named_columns`). The rest
    (the data's columns, shapes, classes) is checked when the audit opens it."""
    graph, _, _ = open_classifier(directory, manifest)
    _named(graph, graph.inputs, manifest, "input")
    named_columns(graph, manifest)
