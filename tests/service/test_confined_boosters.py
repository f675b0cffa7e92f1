"""A CatBoost target opened inside the confinement the worker gives an audit child (Landlock,
SECURITY.md "Confinement"): its probe, a process the audit starts, runs there too (its private
copy in the child's own temporary folder), so a confined audit of a CatBoost model gives the
losses an unconfined one does, and a file that crashes CatBoost's reader is still one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from panoramia.modalities.tabular.adult import load_adult
from panoramia.sandbox import landlock_abi, launcher
from panoramia.service.worker.launch import audit_confinement, private_folders
from tests.service_support import settings_for

OPEN = """
import json, sys
from panoramia.errors import InputError
from panoramia.modalities.tabular.adult import SCHEMA, load_adult
from panoramia.modalities.tabular.table import conform
from panoramia.targets import load_target
rows = conform(load_adult()[0].iloc[:50], SCHEMA, source="rows")
try:
    print(json.dumps({"losses": load_target(sys.argv[1]).per_example_loss(rows).tolist()}))
except InputError as error:
    print(json.dumps({"refused": str(error)}))
"""


@pytest.mark.skipif(not landlock_abi(), reason="this kernel offers no Landlock")
def test_a_catboost_target_opens_in_a_confined_audit_child(tmp_path: Path) -> None:
    from catboost import CatBoostClassifier

    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'panoramia.db'}")
    run_dir = settings.audits_dir / "mine"
    run_dir.mkdir(parents=True)
    members = load_adult()[0].iloc[:300]
    features = members.drop(columns=["income"])
    model = CatBoostClassifier(iterations=10, depth=3, thread_count=1, verbose=0,
                               allow_writing_files=False)  # fmt: skip
    model.fit(features, members["income"],
              cat_features=[c for c in features if features[c].dtype == object])  # fmt: skip
    good, crashing = settings.models_dir / "cb", settings.models_dir / "crashing"
    for folder in (good, crashing):
        folder.mkdir(parents=True)
        model.save_model(str(folder / "model.json"), format="json")
        (folder / "target.json").write_text(
            json.dumps({"format": "catboost-cbm", "file": "model.json"})
        )
    text = (crashing / "model.json").read_text()
    (crashing / "model.json").write_text(text.replace('"hash_stride":3', '"hash_stride":0', 1))

    def confined(folder: Path) -> dict:
        command = launcher(
            audit_confinement(settings, run_dir, settings.artifacts_dir / "1"),
            [sys.executable, "-c", OPEN, str(folder)], chdir=run_dir,
        )  # fmt: skip
        done = subprocess.run(
            command, capture_output=True, text=True, cwd="/", timeout=300,
            env={"PATH": "/usr/bin:/bin", **private_folders(run_dir)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    rows = members.iloc[:50]
    expected = model.predict_proba(rows.drop(columns=["income"]))
    labels = (rows["income"] == ">50K").to_numpy(int)
    losses = confined(good)["losses"]
    np.testing.assert_allclose(losses, -np.log(expected[np.arange(50), labels]), rtol=1e-9)
    refused = confined(crashing)["refused"]
    assert "CatBoost's reader crashed on it: SIGFPE" in refused
