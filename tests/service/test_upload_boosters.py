"""LightGBM and CatBoost model folders uploaded to the service: checked on arrival by opening
the model as an audit would (in the check's own process), kept when they open, refused in one
line naming the upload when they do not, with nothing kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from panoramia.modalities.tabular.adult import load_adult
from tests.service.test_uploads import _file, _tar, stored_files, upload
from tests.service_support import LiveService, queued_only_service, redis_database

INCOME = ["<=50K", ">50K"]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[LiveService]:
    """The service on SQLite (the checks do not touch the database's kind)."""
    database = f"sqlite:///{tmp_path / 'panoramia.db'}"
    with queued_only_service(
        tmp_path / "home", database, redis_database(2), rate_limit="1000/minute",
        max_file_bytes=2 * 2**20, max_storage_bytes=8 * 2**20,
    ) as running:  # fmt: skip
        yield running


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A LightGBM text model, a CatBoost .cbm and its JSON export, trained on 400 Adult rows."""
    import lightgbm as lgb
    from catboost import CatBoostClassifier

    folder = tmp_path_factory.mktemp("boosters")
    members = load_adult()[0].iloc[:400]
    features = members.drop(columns=["income"])
    categorical = [c for c in features if features[c].dtype == object]
    frame = features.astype({c: "category" for c in categorical})
    lgb.LGBMClassifier(n_estimators=10, num_leaves=7, n_jobs=1, verbose=-1).fit(
        frame, (members["income"] == ">50K").astype(int)
    ).booster_.save_model(folder / "model.txt")
    model = CatBoostClassifier(
        iterations=10, depth=3, thread_count=1, verbose=0, allow_writing_files=False
    ).fit(features, members["income"], cat_features=categorical)
    model.save_model(str(folder / "model.cbm"))
    model.save_model(str(folder / "model.json"), format="json")
    return {name: (folder / name).read_bytes() for name in ("model.txt", "model.cbm", "model.json")}


def _model_folder(manifest: dict, file: str, content: bytes) -> bytes:
    return _tar([
        _file("forest/target.json", json.dumps(manifest).encode()),
        _file(f"forest/{file}", content),
    ])  # fmt: skip


LIGHTGBM = {"format": "lightgbm-text", "file": "model.txt", "classes": INCOME}


CATBOOST = {"format": "catboost-cbm", "file": "model.cbm"}
CATBOOST_JSON = {"format": "catboost-cbm", "file": "model.json"}


def _cut(content: bytes) -> bytes:
    return content[: len(content) // 2]


BROKEN = {
    "a LightGBM model cut short": (LIGHTGBM, _cut, "the file is cut short"),
    "a CatBoost JSON that crashes its reader": (
        CATBOOST_JSON, lambda c: c.replace(b'"hash_stride":3', b'"hash_stride":0', 1),
        "not a CatBoost model (CatBoost's reader crashed on it: SIGFPE)"),
}  # fmt: skip
"""Broken files, each refused at upload (the other refusals of the adapters take the same
path: tests/targets/test_tabular_boosters.py has them)."""


def test_booster_folders_are_opened_at_upload_kept_or_refused_in_one_line(
    service: LiveService, saved: dict[str, bytes]
) -> None:
    with service.client(service.token("alice")) as alice:
        for manifest in (LIGHTGBM, CATBOOST):
            file = str(manifest["file"])
            answer = upload(alice, _model_folder(manifest, file, saved[file]),
                            name=file.replace(".", "-"), kind="model",
                            filename="forest.tar.gz")  # fmt: skip
            assert answer.status_code == 200, answer.text
            view = answer.json()
            assert view["state"] == "ready"
            assert view["summary"]["format"] == manifest["format"]
            assert view["summary"]["modality"] == "tabular"
        assert len(alice.get("/v1/uploads").json()) == 2
    kept = stored_files(service)
    with service.client(service.token("mallory")) as mallory:
        for case, (manifest, breaking, message) in BROKEN.items():
            file = str(manifest["file"])
            content = breaking(saved[file])
            assert content != saved[file], case
            answer = upload(mallory, _model_folder(manifest, file, content),
                            name="forest", kind="model", filename="forest.tar")  # fmt: skip
            assert answer.status_code == 422, (case, answer.text)
            (problem,) = answer.json()["detail"]
            assert problem["msg"].startswith(f"forest.tar: model 'forest.tar/{file}': "), case
            assert message in problem["msg"], case
            assert "nothing was kept" in problem["msg"]
            assert "\n" not in problem["msg"]
            assert str(service.settings.home) not in answer.text
        assert mallory.get("/v1/uploads").json() == []
    assert stored_files(service) == kept
