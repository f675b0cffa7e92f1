"""ONNX targets (``"format": "onnx"``) of the three modalities: models the tests export
themselves (skl2onnx, onnxmltools, ``torch.onnx.export``), each giving the per-example losses
of the same model in its native format; and the graphs refused before any session opens."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import torch
from onnx import TensorProto, helper

from panoramia.errors import InputError
from panoramia.modalities.tabular.adult import SCHEMA
from panoramia.targets import load_target, onnx_graph
from panoramia.targets.manifest import MANIFEST
from panoramia.targets.onnx_graph import check_onnx_target
from panoramia.targets.torch_models import load_safetensors_module

LABELS = ["<=50K", ">50K"]
FLOAT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
"""float32 graphs against float64 (or float32) native models: the same losses to float32."""


def _write(directory: Path, model: onnx.ModelProto, **manifest: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(model.SerializeToString())
    body = {"format": "onnx", "file": "model.onnx"} | manifest
    (directory / MANIFEST).write_text(json.dumps(body))
    return directory


def _pipeline(rows: pd.DataFrame):
    """A scikit-learn Pipeline over the raw columns: one-hot categories, scaled numbers."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    prepare = ColumnTransformer(
        [
            ("cat", OneHotEncoder(handle_unknown="ignore"), list(SCHEMA.categorical)),
            ("num", StandardScaler(), list(SCHEMA.continuous)),
        ]
    )
    model = make_pipeline(prepare, LogisticRegression(max_iter=500))
    return model.fit(rows[list(SCHEMA.features)], rows[SCHEMA.label])


def sklearn_onnx(model, *, zipmap: bool) -> onnx.ModelProto:
    """``model`` as skl2onnx exports it: one input per column (strings, floats)."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    types = [(c, StringTensorType([None, 1])) for c in SCHEMA.categorical]
    types += [(c, FloatTensorType([None, 1])) for c in SCHEMA.continuous]
    return convert_sklearn(model, initial_types=types, options={id(model): {"zipmap": zipmap}})


@pytest.mark.parametrize("zipmap", [True, False])
def test_an_sklearn_pipeline_through_skl2onnx_gives_its_skops_losses(
    rows: pd.DataFrame, tmp_path: Path, zipmap: bool
) -> None:
    import skops.io as sio

    model = _pipeline(rows)
    native = tmp_path / "skops"
    native.mkdir()
    sio.dump(model, native / "model.skops")
    manifest = {"format": "skops", "file": "model.skops", "schema": SCHEMA.to_dict()}
    (native / MANIFEST).write_text(json.dumps(manifest))
    untrusted = sio.get_untrusted_types(file=native / "model.skops")
    trusted = sorted({t.rsplit(".", 1)[0] for t in untrusted})
    expected = load_target(native, trusted_modules=trusted).per_example_loss(rows)

    # skl2onnx names the input of 'marital-status' 'marital_status': matched by that rule
    exported = sklearn_onnx(model, zipmap=zipmap)
    assert "marital_status" in [i.name for i in exported.graph.input]
    onnx_dir = _write(tmp_path / "onnx", exported, scores="probabilities", classes=LABELS)
    target = load_target(onnx_dir)
    np.testing.assert_allclose(target.per_example_loss(rows), expected, **FLOAT_TOLERANCE)
    identity = target.identity()
    assert identity["format"] == "onnx"
    assert str(identity["producer"]).startswith("skl2onnx")
    assert target.per_example_loss(rows.iloc[:0]).shape == (0,)

    # the label values in the other order: every loss changes (the manifest's class order)
    swapped = _write(tmp_path / "swapped", exported, scores="probabilities", classes=LABELS[::-1])
    assert not np.allclose(load_target(swapped).per_example_loss(rows), expected)
    # a column the model does not read besides the label: one line naming it
    with pytest.raises(InputError, match=r"besides them, where only the label should be"):
        target.per_example_loss(rows.assign(extra=1))
    with pytest.raises(InputError, match=r"match no data column"):
        target.per_example_loss(rows.drop(columns=["age"]))


def test_an_xgboost_model_through_onnxmltools_gives_its_xgboost_json_losses(
    rows: pd.DataFrame, tmp_path: Path
) -> None:
    """Encoded rows (the project's encoder) and, for a model trained on a frame of numbers,
    those columns in one tensor (``features``)."""
    import xgboost as xgb
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    from panoramia.modalities.tabular.training import XGBoostTargetConfig, train_xgboost_directory

    native = tmp_path / "xgboost"
    train_xgboost_directory(rows, SCHEMA, XGBoostTargetConfig(n_estimators=20), native, seed=0)
    expected = load_target(native).per_example_loss(rows)
    booster = xgb.Booster(model_file=str(native / "model.xgb.json"))
    width = load_target(native).encoder.n_features
    exported = convert_xgboost(
        booster, initial_types=[("features", FloatTensorType([None, width]))]
    )
    onnx_dir = _write(tmp_path / "onnx", exported, encoder="encoder.json", scores="probabilities")
    (onnx_dir / "encoder.json").write_bytes((native / "encoder.json").read_bytes())
    np.testing.assert_allclose(
        load_target(onnx_dir).per_example_loss(rows), expected, **FLOAT_TOLERANCE
    )

    numbers = rows[[*SCHEMA.continuous, SCHEMA.label]]
    frame_model = xgb.XGBClassifier(n_estimators=15, max_depth=3)
    frame_model.fit(numbers[list(SCHEMA.continuous)], (numbers[SCHEMA.label] == ">50K").astype(int))
    (tmp_path / "frame").mkdir()
    frame_model.save_model(tmp_path / "frame" / "model.json")
    body = {"format": "xgboost-json", "file": "model.json", "classes": LABELS}
    (tmp_path / "frame" / MANIFEST).write_text(json.dumps(body))
    expected = load_target(tmp_path / "frame").per_example_loss(numbers)
    inputs = [("input", FloatTensorType([None, len(SCHEMA.continuous)]))]
    unnamed = frame_model.get_booster().copy()
    unnamed.feature_names = None  # onnxmltools reads features as f0, f1, … only
    exported = convert_xgboost(unnamed, initial_types=inputs)
    onnx_dir = _write(
        tmp_path / "frame-onnx",
        exported,
        features=list(SCHEMA.continuous),
        scores="probabilities",
        classes=LABELS,
        label=SCHEMA.label,
    )
    target = load_target(onnx_dir)
    np.testing.assert_allclose(target.per_example_loss(numbers), expected, **FLOAT_TOLERANCE)
    np.testing.assert_allclose(target.per_example_loss(rows), expected, **FLOAT_TOLERANCE)


def test_a_lightgbm_model_through_onnxmltools_gives_its_lightgbm_text_losses(
    rows: pd.DataFrame, tmp_path: Path
) -> None:
    """A LightGBM model trained on a frame of numbers, exported with onnxmltools' default
    output (a ZipMap of class probabilities, read in its class order)."""
    import lightgbm as lgb
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    numbers = rows[list(SCHEMA.continuous)]
    model = lgb.LGBMClassifier(n_estimators=15, num_leaves=7, n_jobs=1, verbose=-1)
    model.fit(numbers, (rows[SCHEMA.label] == ">50K").astype(int))
    (tmp_path / "lgb").mkdir()
    model.booster_.save_model(tmp_path / "lgb" / "model.txt")
    body = {"format": "lightgbm-text", "file": "model.txt", "classes": LABELS}
    (tmp_path / "lgb" / MANIFEST).write_text(json.dumps(body))
    framed = rows[[*SCHEMA.continuous, SCHEMA.label]]
    expected = load_target(tmp_path / "lgb").per_example_loss(framed)
    inputs = [("input", FloatTensorType([None, len(SCHEMA.continuous)]))]
    exported = convert_lightgbm(model, initial_types=inputs)
    assert {o.name for o in exported.graph.output} == {"label", "probabilities"}
    onnx_dir = _write(
        tmp_path / "onnx",
        exported,
        features=list(SCHEMA.continuous),
        scores="probabilities",
        classes=LABELS,
    )
    target = load_target(onnx_dir)
    assert target.output.kind == "sequence_map"
    np.testing.assert_allclose(target.per_example_loss(framed), expected, **FLOAT_TOLERANCE)


def _mlp_directory(rows: pd.DataFrame, directory: Path) -> Path:
    """The project's tabular MLP of fresh weights (seed 0) as a torch-safetensors target."""
    from safetensors.torch import save_file

    from panoramia.modalities.tabular.encoding import TabularEncoder
    from panoramia.modalities.tabular.mlp import TabularMLP

    encoder = TabularEncoder.fit(rows, SCHEMA)
    kwargs = {"n_features": encoder.n_features, "n_classes": 2, "hidden": [16, 8]}
    torch.manual_seed(0)
    directory.mkdir()
    save_file(TabularMLP(**kwargs).state_dict(), directory / "model.safetensors")
    encoder.save(directory / "encoder.json")
    manifest = {
        "format": "torch-safetensors",
        "module": "panoramia.modalities.tabular.mlp:TabularMLP",
        "kwargs": kwargs,
        "weights": "model.safetensors",
        "encoder": "encoder.json",
    }
    (directory / MANIFEST).write_text(json.dumps(manifest))
    return directory


def test_a_torch_network_through_torch_onnx_export_gives_its_safetensors_losses(
    rows: pd.DataFrame, tmp_path: Path
) -> None:
    """Logits over encoded rows; exported with a dynamic batch axis, and with the batch fixed
    at 7 (fed 7 rows at a time, the last batch padded)."""
    mlp_dir = _mlp_directory(rows, tmp_path / "mlp")
    native = load_target(mlp_dir)
    expected = native.per_example_loss(rows)
    example = torch.from_numpy(native.encoder.features(rows.iloc[:7]))
    for name, axes in (("dynamic", {"features": {0: "batch"}}), ("fixed", None)):
        directory = tmp_path / name
        directory.mkdir()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # the TorchScript-based exporter
            torch.onnx.export(
                native.model,
                (example,),
                str(directory / "model.onnx"),
                dynamo=False,
                input_names=["features"],
                output_names=["logits"],
                dynamic_axes=axes,
            )
        (directory / "encoder.json").write_bytes((mlp_dir / "encoder.json").read_bytes())
        manifest = {
            "format": "onnx",
            "file": "model.onnx",
            "encoder": "encoder.json",
            "scores": "logits",
        }
        (directory / MANIFEST).write_text(json.dumps(manifest))
        losses = load_target(directory).per_example_loss(rows)
        np.testing.assert_allclose(losses, expected, **FLOAT_TOLERANCE)
    # logits declared probabilities: one line, before any loss is returned
    (directory / MANIFEST).write_text(json.dumps(manifest | {"scores": "probabilities"}))
    with pytest.raises(
        InputError, match=r"declared probabilities, but .*declare \"scores\": \"logits\""
    ):
        load_target(directory).per_example_loss(rows)


def test_a_small_cnn_through_torch_onnx_export_gives_its_safetensors_losses(
    tmp_path: Path,
) -> None:
    from panoramia.modalities.image.datasets import load_digits
    from panoramia.modalities.image.training import ImageModelConfig, train_image_directory

    digits = load_digits().take(np.arange(300))
    native_dir = tmp_path / "native"
    train_image_directory(
        digits, ImageModelConfig(width=8, epochs=1), native_dir, seed=0, n_classes=10
    )
    manifest = json.loads((native_dir / MANIFEST).read_text())
    expected = load_target(native_dir).per_example_loss(digits)
    network, _ = load_safetensors_module(native_dir, manifest)
    onnx_dir = tmp_path / "onnx"
    onnx_dir.mkdir()
    example = torch.zeros((2, 1, *digits.images.shape[1:3]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            network.eval(),
            (example,),
            str(onnx_dir / "model.onnx"),
            dynamo=False,
            input_names=["pixels"],
            output_names=["logits"],
            dynamic_axes={"pixels": {0: "batch"}},
        )
    body = {
        "format": "onnx",
        "modality": "image",
        "file": "model.onnx",
        "scores": "logits",
        "normalization": manifest["normalization"],
    }
    (onnx_dir / MANIFEST).write_text(json.dumps(body))
    target = load_target(onnx_dir)
    np.testing.assert_allclose(target.per_example_loss(digits), expected, **FLOAT_TOLERANCE)
    assert target.logits(digits.images[:3]).shape == (3, 10)
    # images of another size than the graph fixes: one line naming both
    from panoramia.modalities.image.images import ImageSet

    larger = ImageSet(np.zeros((2, 9, 9, 1), np.uint8), np.zeros(2, np.int64))
    (onnx_dir / MANIFEST).write_text(json.dumps(body | {"layout": "NHWC"}))
    with pytest.raises(InputError, match=r"the audited images are 8x8 with 1 channel"):
        load_target(onnx_dir).per_example_loss(digits)
    (onnx_dir / MANIFEST).write_text(json.dumps(body))
    with pytest.raises(InputError, match=r"the audited images are 9x9"):
        target.per_example_loss(larger)


def test_a_tiny_causal_lm_through_torch_onnx_export_gives_its_hugging_face_losses(
    tmp_path: Path,
) -> None:
    """A tiny Llama exported by the TorchScript-based exporter (``dynamo=False``: the default
    one needs onnxscript, which the project does not install), its weights then saved to
    ``model.onnx.data`` beside the graph: external data inside the folder, read in before the
    session opens."""
    from panoramia.modalities.text.documents import TextSet
    from panoramia.modalities.text.plugin import check_uploaded_model
    from panoramia.modalities.text.targets import load_causal_lm_target
    from tests.lora_support import tiny_llama_base

    documents = [f"line {i} of a small corpus, said twice or thrice" for i in range(40)]
    folder = tiny_llama_base(tmp_path / "lm", documents, vocab_size=300)
    native = load_causal_lm_target(folder, {"directory": "."})
    tokens = np.random.default_rng(0).integers(0, 300, size=(9, 12))
    chunks = TextSet(tokens, np.arange(9), np.zeros(9, np.int64))
    expected = native.per_token_loss(chunks)

    class Logits(torch.nn.Module):
        def __init__(self, lm: torch.nn.Module) -> None:
            super().__init__()
            self.lm = lm

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.lm(
                input_ids=input_ids, attention_mask=attention_mask, use_cache=False
            ).logits

    exported, ids = tmp_path / "exported.onnx", torch.from_numpy(tokens[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter's deprecation, tracing
        torch.onnx.export(
            Logits(native.model).eval(),
            (ids, torch.ones_like(ids)),
            str(exported),
            input_names=["input_ids", "attention_mask"],
            output_names=["logits"],
            dynamo=False,
            dynamic_axes={
                name: {0: "batch", 1: "length"} for name in ("input_ids", "attention_mask")
            },
        )
    onnx.save_model(
        onnx.load(str(exported)),
        str(folder / "model.onnx"),
        save_as_external_data=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    assert (folder / "model.onnx.data").is_file()
    body = {"format": "onnx", "modality": "text", "file": "model.onnx", "scores": "logits"}
    (folder / MANIFEST).write_text(json.dumps(body))
    target = load_target(folder)
    np.testing.assert_allclose(target.per_token_loss(chunks), expected, **FLOAT_TOLERANCE)
    np.testing.assert_allclose(
        target.per_example_loss(chunks), expected.mean(axis=1), **FLOAT_TOLERANCE
    )
    assert "external/model.onnx.data" in target.identity()["sha256"]
    (folder / MANIFEST).write_text(json.dumps(body | {"scores": "probabilities"}))
    with pytest.raises(InputError, match=r"'scores' must say .* 'logits'"):
        load_target(folder)
    with pytest.raises(InputError, match=r"declares \"scores\": \"logits\""):
        check_uploaded_model(folder, body | {"scores": "probabilities"})
    check_uploaded_model(folder, body)


# -- graphs refused before any session opens ---------------------------------------------


def _classifier(
    *, domain: str = "", width: int = 2, input_name: str = "x", label_output: bool = False
) -> onnx.ModelProto:
    """A two-class softmax regression over ``width`` floats, its softmax of ``domain``."""
    values = np.full((width, 2), 0.1, np.float32).tobytes()
    weights = helper.make_tensor("w", TensorProto.FLOAT, [width, 2], values, raw=True)
    nodes = [
        helper.make_node("MatMul", [input_name, "w"], ["z"]),
        helper.make_node("Softmax", ["z"], ["probabilities"], domain=domain, axis=1),
    ]
    outputs = [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])]
    if label_output:
        nodes.append(helper.make_node("ArgMax", ["z"], ["label"], axis=1, keepdims=0))
        outputs.append(helper.make_tensor_value_info("label", TensorProto.INT64, [None]))
    graph = helper.make_graph(
        nodes,
        "classifier",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [None, width])],
        outputs,
        initializer=[weights],
    )
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)  # onnxruntime 1.31's


def _with_external_weights(directory: Path, location: str) -> Path:
    """A classifier whose weights lie in ``w.bin`` beside it, the graph saying ``location``."""
    directory.mkdir(parents=True, exist_ok=True)
    model = _classifier(width=2)
    onnx.save_model(
        model,
        str(directory / "model.onnx"),
        save_as_external_data=True,
        location="w.bin",
        size_threshold=0,
    )
    saved = onnx.load(str(directory / "model.onnx"), load_external_data=False)
    for entry in saved.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    return _write(directory, saved, scores="probabilities", features=["a", "b"], classes=LABELS)


def _two_numbers() -> pd.DataFrame:
    return pd.DataFrame({"a": [0.5, 1.0], "b": [2.0, -1.0], "y": LABELS})


REFUSED = {
    "a custom operator domain": (
        lambda d: _write(d, _classifier(domain="com.example"), scores="probabilities"),
        "operator 'Softmax' of domain 'com.example'; only the standard domains",
    ),
    "an ORT contrib operator": (
        lambda d: _write(d, _classifier(domain="com.microsoft"), scores="probabilities"),
        "of domain 'com.microsoft'",
    ),
    "an input too wide": (
        lambda d: _write(d, _classifier(width=2**20 + 1), scores="probabilities"),
        "has a dimension over 1048576",
    ),
    "a missing input name": (
        lambda d: _write(
            d,
            _classifier(),
            scores="probabilities",
            input="pixels",
            features=["a", "b"],
            classes=LABELS,
        ),
        "no input 'pixels' (target.json's 'input'); the graph's inputs: ['x tensor(float)[N, 2]']",
    ),
    "columns naming an input the graph lacks": (
        lambda d: _write(
            d, _classifier(), scores="probabilities", columns={"z": "age"}, classes=LABELS
        ),
        "'columns' names inputs ['z'] the graph lacks (its inputs: ['x'])",
    ),
    "an output of labels": (
        lambda d: _write(
            d,
            _classifier(label_output=True),
            scores="probabilities",
            output="label",
            features=["a", "b"],
            classes=LABELS,
        ),
        "output 'label' is tensor(int64)[N], not class scores",
    ),
    "no declared scores": (
        lambda d: _write(d, _classifier(), features=["a", "b"], classes=LABELS),
        "'scores' must say what output 'probabilities' holds",
    ),
    "external data outside the folder": (
        lambda d: _with_external_weights(d / "model", "../w.bin"),
        "must be a file inside the model's folder",
    ),
    "external data at a memory address": (
        lambda d: _with_external_weights(d, "*/_ORT_MEM_ADDR_/*"),
        "is not a file name",
    ),
    "missing external data": (lambda d: _with_external_weights(d, "gone.bin"), "is missing"),
    "not a protobuf": (
        lambda d: (
            _write(d, _classifier(), scores="logits"),
            (d / "model.onnx").write_bytes(b"\xff" * 64),
        )[0],
        "not an ONNX model",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_graph_that_breaks_a_rule_is_refused_with_one_line(case: str, tmp_path: Path) -> None:
    make, message = REFUSED[case]
    directory = make(tmp_path)
    for opening in (
        lambda: load_target(directory),
        lambda: check_onnx_target(directory, json.loads((directory / MANIFEST).read_text())),
    ):
        with pytest.raises(InputError) as refused:
            opening()
        assert message in str(refused.value)
        assert "\n" not in str(refused.value)


def test_external_data_inside_the_folder_is_read_and_size_limits_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _with_external_weights(tmp_path / "model", "w.bin")
    target = load_target(directory)
    losses = target.per_example_loss(_two_numbers())
    np.testing.assert_allclose(losses, np.log(2))  # equal weights: one half each
    assert "external/w.bin" in target.identity()["sha256"]
    monkeypatch.setattr(onnx_graph, "MAX_ONNX_BYTES", 100)
    with pytest.raises(InputError, match=r"may take 100"):
        load_target(directory)
    monkeypatch.undo()
    monkeypatch.setattr(onnx_graph, "MAX_INITIALIZERS", 0)
    with pytest.raises(InputError, match=r"more than 0 weight tensors"):
        load_target(directory)
    monkeypatch.undo()
    _write(
        tmp_path / "plain",
        _classifier(),
        scores="probabilities",
        features=["a", "b"],
        classes=LABELS,
        modality="image",
    )
    with pytest.raises(InputError, match=r"normalization"):
        load_target(tmp_path / "plain")  # the image audit's own field, asked for by it
