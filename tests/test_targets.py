"""Target adapters: safetensors, TorchScript, XGBoost JSON, skops, HTTP; unsafe or broken files."""

from __future__ import annotations

import json
import pickle
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from panoramia.datasets.adult import SCHEMA, load_adult
from panoramia.errors import InputError
from panoramia.models.tabular_training import (
    MlpConfig,
    XGBoostTargetConfig,
    train_mlp_directory,
    train_xgboost_directory,
)
from panoramia.targets import load_target
from panoramia.targets.base import MANIFEST


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return load_adult()[0].iloc[:600].reset_index(drop=True)


@pytest.fixture(scope="module")
def mlp_dir(rows: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("mlp")
    train_mlp_directory(rows, SCHEMA, MlpConfig(epochs=2, hidden=[16, 8]), directory, seed=0)
    return directory


def test_safetensors_target_gives_cross_entropy(mlp_dir: Path, rows: pd.DataFrame) -> None:
    target = load_target(mlp_dir)
    losses = target.per_example_loss(rows)
    assert losses.shape == (600,)
    assert losses.dtype == np.float64
    assert (losses > 0).all()
    with torch.no_grad():
        logits = target.model(torch.from_numpy(target.encoder.features(rows)))
        expected = torch.nn.functional.cross_entropy(
            logits, torch.from_numpy(target.encoder.labels(rows)), reduction="none"
        )
    np.testing.assert_allclose(losses, expected.double().numpy(), rtol=1e-6)
    assert target.identity()["format"] == "torch-safetensors"


def test_torchscript_target_matches(mlp_dir: Path, rows: pd.DataFrame, tmp_path: Path) -> None:
    reference = load_target(mlp_dir)
    torch.jit.script(reference.model).save(str(tmp_path / "model.pt"))
    (tmp_path / "encoder.json").write_text((mlp_dir / "encoder.json").read_text())
    manifest = {"format": "torchscript", "file": "model.pt", "encoder": "encoder.json"}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    np.testing.assert_allclose(
        load_target(tmp_path).per_example_loss(rows), reference.per_example_loss(rows), rtol=1e-6
    )


def test_pickle_offered_as_safetensors_is_refused(mlp_dir: Path, tmp_path: Path) -> None:
    for name in ("encoder.json", MANIFEST):
        (tmp_path / name).write_text((mlp_dir / name).read_text())
    state = load_target(mlp_dir).model.state_dict()
    with open(tmp_path / "model.safetensors", "wb") as handle:
        pickle.dump(state, handle)  # what torch.save would write: a pickle
    with pytest.raises(InputError, match="not a safetensors file"):
        load_target(tmp_path)


def test_corrupt_and_mismatched_files(mlp_dir: Path, tmp_path: Path) -> None:
    for name in ("encoder.json", MANIFEST):
        (tmp_path / name).write_text((mlp_dir / name).read_text())
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(InputError, match="not a safetensors file"):
        load_target(tmp_path)
    manifest = json.loads((mlp_dir / MANIFEST).read_text())
    manifest["kwargs"]["hidden"] = [32, 8]
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    (tmp_path / "model.safetensors").write_bytes((mlp_dir / "model.safetensors").read_bytes())
    with pytest.raises(InputError, match="do not fit the model"):
        load_target(tmp_path)
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "onnx"}))
    with pytest.raises(InputError, match="unknown format 'onnx'"):
        load_target(tmp_path)
    with pytest.raises(InputError, match=r"no target\.json"):
        load_target(tmp_path / "nowhere")


def test_torchscript_refuses_non_archives(mlp_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "encoder.json").write_text((mlp_dir / "encoder.json").read_text())
    (tmp_path / "model.pt").write_bytes(b"not a zip archive")
    manifest = {"format": "torchscript", "file": "model.pt", "encoder": "encoder.json"}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="not a TorchScript archive"):
        load_target(tmp_path)


def test_xgboost_target(rows: pd.DataFrame, tmp_path: Path) -> None:
    train_xgboost_directory(rows, SCHEMA, XGBoostTargetConfig(n_estimators=20), tmp_path, seed=0)
    losses = load_target(tmp_path).per_example_loss(rows)
    assert losses.shape == (600,)
    assert np.isfinite(losses).all()
    (tmp_path / "model.xgb.json").write_text("{not json")
    with pytest.raises(InputError, match="not an XGBoost model"):
        load_target(tmp_path)


def _sklearn_pipeline(rows: pd.DataFrame):
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


def test_skops_target_and_untrusted_types(rows: pd.DataFrame, tmp_path: Path) -> None:
    import skops.io as sio

    model = _sklearn_pipeline(rows)
    sio.dump(model, tmp_path / "model.skops")
    untrusted = sio.get_untrusted_types(file=tmp_path / "model.skops")
    manifest = {"format": "skops", "file": "model.skops", "schema": SCHEMA.to_dict()}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    if untrusted:
        with pytest.raises(InputError, match="untrusted types"):
            load_target(tmp_path)
        manifest["trusted"] = untrusted
        (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    losses = load_target(tmp_path).per_example_loss(rows)
    probabilities = model.predict_proba(rows[list(SCHEMA.features)])
    truth = (rows[SCHEMA.label] == model.classes_[1]).to_numpy().astype(int)
    np.testing.assert_allclose(losses, -np.log(probabilities[np.arange(600), truth]), rtol=1e-9)


def test_http_target(rows: pd.DataFrame, tmp_path: Path) -> None:
    model = _sklearn_pipeline(rows)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            frame = pd.DataFrame(body["rows"])
            answer = {"probabilities": model.predict_proba(frame).tolist()}
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            return

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        manifest = {
            "format": "http",
            "url": f"http://127.0.0.1:{server.server_port}/predict",
            "classes": list(model.classes_),
            "schema": SCHEMA.to_dict(),
        }
        (tmp_path / MANIFEST).write_text(json.dumps(manifest))
        losses = load_target(tmp_path).per_example_loss(rows)
        probabilities = model.predict_proba(rows[list(SCHEMA.features)])
        truth = (rows[SCHEMA.label] == model.classes_[1]).to_numpy().astype(int)
        np.testing.assert_allclose(losses, -np.log(probabilities[np.arange(600), truth]))
    finally:
        server.shutdown()
    with pytest.raises(InputError, match="unreachable"):
        load_target(tmp_path).per_example_loss(rows.iloc[:5])
