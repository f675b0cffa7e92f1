"""Issue 74: a LightGBM text model and an ONNX graph (a scikit-learn pipeline through
skl2onnx) uploaded to the service, checked on arrival and audited by the worker's own code path
(the confined child), each to a report that names its format; the CLI's audits beside the
native formats (tests/pipeline/tabular/test_booster_audits.py, test_onnx_audit.py) show their
losses equal."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from tests.conftest import TINY_AUDIT
from tests.service.test_upload_deletion import _send
from tests.service_support import LiveService, queued_only_service, redis_database

INCOME = ["<=50K", ">50K"]


def _packed(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return buffer.getvalue()


def _lightgbm_folder(members, folder: Path) -> Path:  # type: ignore[no-untyped-def]
    import lightgbm as lgb

    features = members.drop(columns=["income"])
    features = features.astype({c: "category" for c in features if features[c].dtype == object})
    boosted = lgb.LGBMClassifier(n_estimators=30, num_leaves=15, n_jobs=1, verbose=-1)
    boosted.fit(features, (members["income"] == ">50K").astype(int))
    folder.mkdir()
    boosted.booster_.save_model(folder / "model.txt")
    manifest = {"format": "lightgbm-text", "file": "model.txt", "classes": INCOME}
    (folder / "target.json").write_text(json.dumps(manifest))
    return folder


def _onnx_folder(members, folder: Path) -> Path:  # type: ignore[no-untyped-def]
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    from tests.pipeline.tabular.test_onnx_audit import _pipeline

    model, categorical, continuous = _pipeline(members)
    types = [(c, StringTensorType([None, 1])) for c in categorical]
    types += [(c, FloatTensorType([None, 1])) for c in continuous]
    exported = convert_sklearn(model, initial_types=types, options={id(model): {"zipmap": False}})
    folder.mkdir()
    (folder / "model.onnx").write_bytes(exported.SerializeToString())
    manifest = {"format": "onnx", "file": "model.onnx", "scores": "probabilities",
                "classes": INCOME}  # fmt: skip
    (folder / "target.json").write_text(json.dumps(manifest))
    return folder


def test_lightgbm_and_onnx_uploads_are_audited_by_the_worker(tmp_path: Path) -> None:
    from panoramia.modalities.tabular.adult import load_adult
    from panoramia.service.worker.run import run_audit
    from panoramia.store.repository import AuditStatus

    train, test = load_adult()
    members = train.iloc[:800]
    home = tmp_path / "home"
    home.mkdir()
    folders = {"lgbm": _lightgbm_folder(members, tmp_path / "lgbm"),
               "graph": _onnx_folder(members, tmp_path / "graph")}  # fmt: skip
    with queued_only_service(home, f"sqlite:///{home / 'store.sqlite'}", redis_database(2),
                             rate_limit="1000/minute") as service:  # fmt: skip
        service: LiveService
        with service.client(service.token("alice")) as alice:
            _send(alice, "census", "data", "census.csv", members.to_csv(index=False).encode())
            _send(alice, "held-out", "data", "held-out.csv",
                  test.iloc[:400].to_csv(index=False).encode())  # fmt: skip
            formats = {}
            for name, folder in folders.items():
                sent = _send(alice, name, "model", f"{name}.tar.gz", _packed(folder))
                assert sent["summary"]["modality"] == "tabular", sent
                formats[name] = sent["summary"]["format"]
                body = {
                    "model": {"name": f"census-{name}", "version": "1"},
                    "target": {"path": name},
                    "data": {"source": "csv", "members": "census", "nonmembers": "held-out",
                             "label": "income"},
                    "overrides": [o for o in TINY_AUDIT if not o.startswith("target.")],
                }  # fmt: skip
                submitted = alice.post("/v1/audits", json=body)
                assert submitted.status_code == 202, submitted.text
                audit_id = submitted.json()["id"]
                ended = run_audit(service.store, service.settings, audit_id)
                done = alice.get(f"/v1/audits/{audit_id}").json()
                assert ended == AuditStatus.SUCCEEDED, done
                report = alice.get(f"/v1/reports/{done['report_id']}").json()
                assert report["document"]["target"]["identity"]["format"] == formats[name]
                assert report["eps_tilde"] >= 0
    assert formats == {"lgbm": "lightgbm-text", "graph": "onnx"}
