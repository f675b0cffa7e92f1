"""ONNX model folders uploaded to the service: the graph read as data on arrival
(:func:`panoramia.targets.onnx_graph.check_onnx_target`), kept when it passes, refused in one
line naming the upload when it holds a custom operator domain, weights outside its folder or
an input past the shape limits, with nothing kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from onnx import helper
from onnx.external_data_helper import set_external_data

from tests.service.test_uploads import _file, _tar, stored_files, upload
from tests.service_support import LiveService, queued_only_service, redis_database
from tests.targets.test_onnx_targets import LABELS, _classifier

MANIFEST = {"format": "onnx", "file": "model.onnx", "scores": "probabilities",
            "features": ["a", "b"], "classes": LABELS}  # fmt: skip


@pytest.fixture
def service(tmp_path: Path) -> Iterator[LiveService]:
    """The service on SQLite (the checks do not touch the database's kind)."""
    database = f"sqlite:///{tmp_path / 'panoramia.db'}"
    with queued_only_service(
        tmp_path / "home", database, redis_database(2), rate_limit="1000/minute",
        max_file_bytes=2 * 2**20, max_storage_bytes=8 * 2**20,
    ) as running:  # fmt: skip
        yield running


def _folder(model: onnx.ModelProto) -> bytes:
    return _tar([
        _file("graph/target.json", json.dumps(MANIFEST).encode()),
        _file("graph/model.onnx", model.SerializeToString()),
    ])  # fmt: skip


def _weights_outside() -> onnx.ModelProto:
    """The classifier with its weights said to lie in ``../w.bin``, beside the folder."""
    model = _classifier()
    weights = model.graph.initializer[0]
    set_external_data(weights, location="../w.bin", offset=0, length=len(weights.raw_data))
    weights.ClearField("raw_data")
    weights.data_location = onnx.TensorProto.EXTERNAL
    return model


def _wide_input() -> onnx.ModelProto:
    """A softmax over one input of 2**20 + 1 values a row: one past the widest accepted, with
    no weights (the upload stays small)."""
    width = 2**20 + 1
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["probabilities"], axis=1)], "wide",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, width])],
        [helper.make_tensor_value_info("probabilities", onnx.TensorProto.FLOAT, [None, width])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


REFUSED = {
    "a custom operator domain": (
        lambda: _classifier(domain="com.example"),
        "a node is operator 'Softmax' of domain 'com.example'; only the standard domains"),
    "weights outside the folder": (
        _weights_outside, "weight 'w''s external data '../w.bin' must be a file inside"),
    "an input past the shape limits": (
        _wide_input, "input 'x' of shape tensor(float)[N, 1048577] has a dimension over"),
}  # fmt: skip


def test_onnx_graphs_are_checked_at_upload_kept_or_refused_in_one_line(
    service: LiveService,
) -> None:
    with service.client(service.token("alice")) as alice:
        answer = upload(alice, _folder(_classifier()), name="graph", kind="model",
                        filename="graph.tar")  # fmt: skip
        assert answer.status_code == 200, answer.text
        view = answer.json()
        assert view["state"] == "ready"
        assert view["summary"]["format"] == "onnx"
        assert view["summary"]["modality"] == "tabular"
    kept = stored_files(service)
    with service.client(service.token("mallory")) as mallory:
        for case, (make, message) in REFUSED.items():
            answer = upload(mallory, _folder(make()), name="graph", kind="model",
                            filename="graph.tar")  # fmt: skip
            assert answer.status_code == 422, (case, answer.text)
            (problem,) = answer.json()["detail"]
            assert problem["msg"].startswith("graph.tar: model 'graph.tar/model.onnx': "), case
            assert message in problem["msg"], case
            assert "nothing was kept" in problem["msg"]
            assert "\n" not in problem["msg"]
            assert str(service.settings.home) not in answer.text
        assert mallory.get("/v1/uploads").json() == []
    assert stored_files(service) == kept
