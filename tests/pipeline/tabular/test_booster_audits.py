"""``panoramia-audit data=csv … target=path`` on a LightGBM text model and a CatBoost ``.cbm``
as people save them (trained on a pandas frame; ``target.json`` names the file, and for
LightGBM the classes): each audit ends with a verdict, and the per-example losses it used on
every set are the library's own ``predict_proba`` log loss of those rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.adult import load_adult
from panoramia.pipeline.stages.splits import POOL_SET
from tests.cli_support import run_audit
from tests.conftest import TINY_AUDIT, shared_store
from tests.conftest import stage as stage_directory

INCOME = ["<=50K", ">50K"]


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's tabular store (the xgboost audit's: the data stages are shared)."""
    return shared_store(tmp_path_factory, "tabular-artifacts")


def _categories(features: pd.DataFrame) -> pd.DataFrame:
    return features.astype({c: "category" for c in features if features[c].dtype == object})


def _audited_sets(artifacts: Path, report: dict) -> dict[str, pd.DataFrame]:
    """Every set the audit's target losses were taken on, by name, as the audit stored it: the
    real and generated sets of the games, and the attacker's pool of generated rows."""
    sets = {}
    for name in ("split", "synthetic_split"):
        for file in sorted(stage_directory(artifacts, report, name).glob("*.parquet")):
            sets[file.stem] = pd.read_parquet(file)
    pool = stage_directory(artifacts, report, "synthetic") / f"{POOL_SET}.parquet"
    sets[POOL_SET] = pd.read_parquet(pool)
    return sets


def test_lightgbm_and_catboost_models_audit_with_their_own_losses(
    artifacts: Path, tmp_path: Path
) -> None:
    import lightgbm as lgb
    from catboost import CatBoostClassifier

    train, test = load_adult()
    members = train.iloc[:800]
    members.to_csv(tmp_path / "members.csv", index=False)
    test.iloc[:400].to_csv(tmp_path / "held_out.csv", index=False)
    features = members.drop(columns=["income"])
    categorical = [c for c in features if features[c].dtype == object]
    boosted = lgb.LGBMClassifier(n_estimators=30, num_leaves=15, n_jobs=1, verbose=-1)
    boosted.fit(_categories(features), (members["income"] == ">50K").astype(int))
    (tmp_path / "lgb").mkdir()
    boosted.booster_.save_model(tmp_path / "lgb" / "model.txt")
    manifest = {"format": "lightgbm-text", "file": "model.txt", "classes": INCOME}
    (tmp_path / "lgb" / "target.json").write_text(json.dumps(manifest))
    cat = CatBoostClassifier(iterations=30, depth=4, thread_count=1, verbose=0,
                             allow_writing_files=False)  # fmt: skip
    cat.fit(features, members["income"], cat_features=categorical)
    (tmp_path / "cb").mkdir()
    cat.save_model(str(tmp_path / "cb" / "model.cbm"))
    (tmp_path / "cb" / "target.json").write_text(
        json.dumps({"format": "catboost-cbm", "file": "model.cbm"})
    )

    def probabilities(name: str, rows: pd.DataFrame) -> np.ndarray:
        if name == "lgb":
            return boosted.predict_proba(_categories(rows.drop(columns=["income"])))
        return cat.predict_proba(rows.drop(columns=["income"]))

    for name, file, kind in (("lgb", "model.txt", "lightgbm-text"),
                             ("cb", "model.cbm", "catboost-cbm")):  # fmt: skip
        done = run_audit(
            [*TINY_AUDIT, "threads=1"], "data=csv",
            f"data.members_path={tmp_path / 'members.csv'}",
            f"data.nonmembers_path={tmp_path / 'held_out.csv'}", "data.label=income",
            "target=path", f"target.path={tmp_path / name}",
            artifacts=artifacts, run_dir=tmp_path / f"run_{name}",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads((tmp_path / f"run_{name}" / "report.json").read_text())
        assert report["target"]["name"] == name
        assert report["target"]["identity"] == {
            "format": kind, "sha256": {"file": file_sha256(tmp_path / name / file)}
        }  # fmt: skip
        assert report["verdict"]["level"] in ("leak_detected", "no_leak_detected", "inconclusive")
        losses = np.load(stage_directory(artifacts, report, "losses_target") / "losses.npz")
        sets = _audited_sets(artifacts, report)
        assert set(losses.files) == set(sets)
        assert len(losses.files) >= 4  # members and non-members, real and generated
        for set_name in losses.files:
            rows = sets[set_name]
            labels = (rows["income"] == ">50K").to_numpy(int)
            expected = -np.log(probabilities(name, rows)[np.arange(len(rows)), labels])
            np.testing.assert_allclose(losses[set_name], expected, rtol=1e-9, err_msg=set_name)
