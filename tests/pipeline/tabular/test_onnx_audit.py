"""``panoramia-audit data=csv … target=path`` on an ONNX model beside the same model in its
native format: a scikit-learn ``Pipeline`` (one-hot categories, scaled numbers, a logistic
regression) saved with skops and exported with skl2onnx (one input per column). Both audits
end with a verdict, their target losses on every set agree to float32 rounding, and so do the
report's figures that follow from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.adult import load_adult
from tests.cli_support import run_audit
from tests.conftest import TINY_AUDIT, shared_store
from tests.conftest import stage as stage_directory

INCOME = ["<=50K", ">50K"]
FLOAT32 = {"rtol": 1e-5, "atol": 1e-6}
"""A float32 graph against the float64 scikit-learn model."""


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's tabular store (the booster audits' data stages are shared: same CSVs)."""
    return shared_store(tmp_path_factory, "tabular-artifacts")


def _pipeline(members: pd.DataFrame) -> tuple[Any, list[str], list[str]]:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    features = members.drop(columns=["income"])
    categorical = [c for c in features if features[c].dtype == object]
    continuous = [c for c in features if c not in categorical]
    prepare = ColumnTransformer(
        [
            ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
            ("num", StandardScaler(), continuous),
        ]
    )
    model = make_pipeline(prepare, LogisticRegression(max_iter=500))
    return model.fit(features, members["income"]), categorical, continuous


RUN_KEYS = ("created", "target", "config", "timings", "versions", "reference_audits")
"""What a report holds besides its figures: when and how it ran, what it audited; and the
reference audits, whose real-vs-real attack is fitted on the target's losses alone and moves
with their float32 rounding (its ROC differs between the two formats)."""


def _figures(report: dict) -> dict:
    """What the report measures (the bounds, the games, the verdict) without :data:`RUN_KEYS`
    and without the seconds the claim's accounting took (``claim.summary.seconds``: a timing,
    0.0 or 0.001 for no claim depending on the machine's load)."""
    figures = {key: value for key, value in report.items() if key not in RUN_KEYS}
    claim = json.loads(json.dumps(figures["claim"]))
    claim["summary"].pop("seconds")
    return figures | {"claim": claim}


def test_an_onnx_pipeline_audits_as_its_skops_original(artifacts: Path, tmp_path: Path) -> None:
    import skops.io as sio
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    train, test = load_adult()
    members = train.iloc[:800]
    members.to_csv(tmp_path / "members.csv", index=False)
    test.iloc[:400].to_csv(tmp_path / "held_out.csv", index=False)
    model, categorical, continuous = _pipeline(members)

    (tmp_path / "skops").mkdir()
    sio.dump(model, tmp_path / "skops" / "model.skops")
    schema = {"label": "income", "categorical": categorical, "continuous": continuous}
    (tmp_path / "skops" / "target.json").write_text(
        json.dumps({"format": "skops", "file": "model.skops", "schema": schema})
    )
    untrusted = sio.get_untrusted_types(file=tmp_path / "skops" / "model.skops")
    trusted = sorted({t.rsplit(".", 1)[0] for t in untrusted})

    types = [(c, StringTensorType([None, 1])) for c in categorical]
    types += [(c, FloatTensorType([None, 1])) for c in continuous]
    exported = convert_sklearn(model, initial_types=types, options={id(model): {"zipmap": False}})
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(exported.SerializeToString())
    manifest = {"format": "onnx", "file": "model.onnx", "scores": "probabilities",
                "classes": INCOME}  # fmt: skip
    (tmp_path / "onnx" / "target.json").write_text(json.dumps(manifest))

    reports, losses = {}, {}
    for name, extra in (("skops", [f"target.trusted_modules=[{','.join(trusted)}]"]),
                        ("onnx", [])):  # fmt: skip
        done = run_audit(
            [*TINY_AUDIT, "threads=1"], "data=csv",
            f"data.members_path={tmp_path / 'members.csv'}",
            f"data.nonmembers_path={tmp_path / 'held_out.csv'}", "data.label=income",
            "target=path", f"target.path={tmp_path / name}", *extra,
            artifacts=artifacts, run_dir=tmp_path / f"run_{name}",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        reports[name] = json.loads((tmp_path / f"run_{name}" / "report.json").read_text())
        stage = stage_directory(artifacts, reports[name], "losses_target")
        losses[name] = dict(np.load(stage / "losses.npz"))

    assert reports["onnx"]["target"]["identity"] == {
        "format": "onnx", "producer": "skl2onnx 1.20.0",
        "sha256": {"file": file_sha256(tmp_path / "onnx" / "model.onnx")},
    }  # fmt: skip
    assert set(losses["onnx"]) == set(losses["skops"])
    assert len(losses["onnx"]) >= 4  # members and non-members, real and generated
    for set_name, native in losses["skops"].items():
        np.testing.assert_allclose(losses["onnx"][set_name], native, **FLOAT32, err_msg=set_name)
    assert reports["onnx"]["verdict"] == reports["skops"]["verdict"]
    assert _figures(reports["onnx"]) == _figures(reports["skops"])
