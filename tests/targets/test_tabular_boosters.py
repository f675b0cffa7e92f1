"""LightGBM text models and CatBoost ``.cbm``/``.json`` models as people save them (trained on a
pandas frame with category columns), opened without unpickling: their per-example losses are
the library's own ``predict_proba`` log loss, and a file that is not what its format says is
one line (never a crash of the process: LightGBM's and CatBoost's readers trust their input)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.adult import SCHEMA, load_adult
from panoramia.modalities.tabular.table import TabularSchema, conform
from panoramia.targets import load_target
from panoramia.targets.manifest import MANIFEST

INCOME = ["<=50K", ">50K"]


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    """800 training rows (the members) and 300 test rows (categories the members lack
    among them)."""
    train, test = load_adult()
    return train.iloc[:800].reset_index(drop=True), test.iloc[:300].reset_index(drop=True)


def _frame(rows: pd.DataFrame, label: str = "income") -> pd.DataFrame:
    """The features as people train on them: category columns as pandas categories."""
    features = rows.drop(columns=[label]).copy()
    for column in features.columns:
        if features[column].dtype == object:
            features[column] = features[column].astype("category")
    return features


def _folder(directory: Path, **manifest: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).write_text(json.dumps(manifest))
    return directory


def _one_line(directory: Path, match: str) -> str:
    with pytest.raises(InputError, match=match) as caught:
        load_target(directory)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def _log_loss(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return -np.log(probabilities[np.arange(labels.size), labels])


def _lightgbm(members: pd.DataFrame, directory: Path, **params: object) -> object:
    import lightgbm as lgb

    model = lgb.LGBMClassifier(n_estimators=30, num_leaves=15, n_jobs=1, verbose=-1, **params)
    model.fit(_frame(members), (members["income"] == ">50K").astype(int))
    directory.mkdir(parents=True, exist_ok=True)
    model.booster_.save_model(directory / "model.txt")
    return model


def _catboost(members: pd.DataFrame, labels: pd.Series, **params: object) -> object:
    from catboost import CatBoostClassifier

    features = members.drop(columns=[labels.name])
    model = CatBoostClassifier(
        iterations=30, depth=4, thread_count=1, verbose=0, allow_writing_files=False, **params
    )
    model.fit(features, labels, cat_features=[c for c in features if features[c].dtype == object])
    return model


def test_a_lightgbm_text_model_gives_its_own_log_loss(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Binary LightGBM on pandas categories, labels 0/1, ``classes`` mapping them; held-out
    rows hold categories the model never saw (missing to it, as to LightGBM itself)."""
    members, others = adult
    model = _lightgbm(members, tmp_path / "lgb")
    folder = _folder(tmp_path / "lgb", format="lightgbm-text", file="model.txt", classes=INCOME)
    rows = pd.concat([members, others], ignore_index=True)
    assert set(others["native-country"]) - set(members["native-country"])  # unseen values
    target = load_target(folder)
    losses = target.per_example_loss(conform(rows, SCHEMA, source="test"))
    labels = (rows["income"] == ">50K").to_numpy(int)
    expected = _log_loss(model.predict_proba(_frame(rows)), labels)  # type: ignore[attr-defined]
    np.testing.assert_allclose(losses, expected, rtol=1e-9)
    assert losses.dtype == np.float64
    assert losses.std() > 0.1
    assert target.identity() == {
        "format": "lightgbm-text", "sha256": {"file": file_sha256(folder / "model.txt")}
    }  # fmt: skip
    data = conform(members, SCHEMA, source="test")
    with pytest.raises(InputError, match=r"the data lacks \['age'\]") as caught:
        target.per_example_loss(data.drop(columns=["age"]))
    assert "\n" not in str(caught.value)


def test_a_multiclass_lightgbm_model_reads_its_classes_in_their_order(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    import lightgbm as lgb

    members = adult[0]
    others = [c for c in SCHEMA.categorical if c != "relationship"]
    schema = TabularSchema("relationship", (*others, "income"), SCHEMA.continuous)
    model = lgb.LGBMClassifier(n_estimators=10, num_leaves=7, n_jobs=1, verbose=-1)
    model.fit(_frame(members, "relationship"), members["relationship"])
    assert len(model.classes_) > 2
    (tmp_path / "m").mkdir()
    model.booster_.save_model(tmp_path / "m" / "model.txt")
    folder = _folder(tmp_path / "m", format="lightgbm-text", file="model.txt",
                     classes=[str(c) for c in model.classes_])  # fmt: skip
    losses = load_target(folder).per_example_loss(conform(members, schema, source="test"))
    labels = members["relationship"].map({c: i for i, c in enumerate(model.classes_)})
    expected = _log_loss(model.predict_proba(_frame(members, "relationship")), labels.to_numpy())
    np.testing.assert_allclose(losses, expected, rtol=1e-9)


def test_lightgbm_integer_categories_match_by_value(tmp_path: Path) -> None:
    """Pandas categories of integers (1, 2, 3) reach the audit as text ("1") or, declared
    continuous, as floats (1.0): both are the model's category 1."""
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    grade, other = rng.choice([1, 2, 3], 400), rng.normal(size=400)
    labels = ((grade == 3) ^ (other > 1)).astype(int)
    features = pd.DataFrame({"other": other, "grade": pd.Categorical(grade)})
    model = lgb.LGBMClassifier(n_estimators=20, min_child_samples=5, n_jobs=1, verbose=-1)
    model.fit(features, labels)
    model.booster_.save_model(tmp_path / "model.txt")
    _folder(tmp_path, format="lightgbm-text", file="model.txt", classes=["no", "yes"])
    expected = _log_loss(model.predict_proba(features), labels)
    frame = pd.DataFrame({"other": other, "grade": grade, "label": np.where(labels, "yes", "no")})
    for schema in (TabularSchema("label", ("grade",), ("other",)),
                   TabularSchema("label", (), ("other", "grade"))):  # fmt: skip
        rows = conform(frame, schema, source="test")
        np.testing.assert_allclose(load_target(tmp_path).per_example_loss(rows), expected)


@pytest.mark.parametrize("kind", ["cbm", "json"])
def test_a_catboost_model_gives_its_own_log_loss(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path, kind: str
) -> None:
    """CatBoost trained on the income strings with ``cat_features``: no ``classes`` needed
    (the model stores its class names); the same losses from ``.cbm`` and its JSON export."""
    members, others = adult
    model = _catboost(members, members["income"])
    model.save_model(str(tmp_path / f"model.{kind}"), format=kind)  # type: ignore[attr-defined]
    folder = _folder(tmp_path, format="catboost-cbm", file=f"model.{kind}")
    rows = pd.concat([members, others], ignore_index=True)
    target = load_target(folder)
    losses = target.per_example_loss(conform(rows, SCHEMA, source="test"))
    labels = (rows["income"] == ">50K").to_numpy(int)
    assert list(model.classes_) == INCOME  # type: ignore[attr-defined]
    proba = model.predict_proba(rows.drop(columns=["income"]))  # type: ignore[attr-defined]
    np.testing.assert_allclose(losses, _log_loss(proba, labels), rtol=1e-9)
    assert losses.std() > 0.1
    assert target.identity() == {
        "format": "catboost-cbm", "sha256": {"file": file_sha256(folder / f"model.{kind}")}
    }  # fmt: skip
    with pytest.raises(InputError, match=r"the data lacks \['age'\]"):
        target.per_example_loss(conform(members, SCHEMA, source="test").drop(columns=["age"]))


def test_a_catboost_model_of_numeric_labels_maps_them_by_classes(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Trained on 0/1, the model's classes are 0 and 1: ``classes`` maps the data's labels to
    them; without it the data's ``<=50K`` is one line naming the model's classes."""
    members = adult[0]
    binary = (members["income"] == ">50K").astype(int).rename("income")
    model = _catboost(members.assign(income=binary), binary)
    model.save_model(str(tmp_path / "model.cbm"))  # type: ignore[attr-defined]
    rows = conform(members, SCHEMA, source="test")
    bare = _folder(tmp_path, format="catboost-cbm", file="model.cbm")
    unmapped = (
        r"values \['<=50K', '>50K'\] are not among the model's own classes \['0', '1'\] "
        r"\(give 'classes' in target\.json"
    )
    with pytest.raises(InputError, match=unmapped) as caught:
        load_target(bare).per_example_loss(rows)
    assert "\n" not in str(caught.value)
    mapped = _folder(tmp_path, format="catboost-cbm", file="model.cbm", classes=INCOME)
    proba = model.predict_proba(members.drop(columns=["income"]))  # type: ignore[attr-defined]
    np.testing.assert_allclose(
        load_target(mapped).per_example_loss(rows), _log_loss(proba, binary.to_numpy()), rtol=1e-9
    )
    _folder(tmp_path, format="catboost-cbm", file="model.cbm", classes=["a", "b", "c"])
    _one_line(tmp_path, r"'classes' in target\.json must list 2 label values")


def _cut(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _cut_in_tree(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"Tree=20\n") + 40])


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _lightgbm_regression(directory: Path, members: pd.DataFrame) -> None:
    import lightgbm as lgb

    lgb.LGBMRegressor(n_estimators=5, n_jobs=1, verbose=-1).fit(
        _frame(members), members["age"]
    ).booster_.save_model(directory / "model.txt")


BROKEN_LIGHTGBM = {
    "a pickle renamed model.txt": (
        lambda d, m: (d / "model.txt").write_bytes(pickle.dumps({"trees": []})),
        "not a LightGBM text model .it does not start with 'tree'"),
    "a file cut short in a tree": (lambda d, m: _cut_in_tree(d / "model.txt"),
                                   "tree 20 does not end .the file is cut short"),
    "a file cut in its parameters": (lambda d, m: _cut(d / "model.txt", 0.97),
                                     "parameters section does not end"),
    "a child that loops to the root": (
        lambda d, m: _edit(d / "model.txt", "left_child=1 ", "left_child=0 "),
        "tree 0: its children do not form one tree"),
    "a split on a feature it does not have": (
        lambda d, m: _edit(d / "model.txt", "split_feature=", "split_feature=99 "),
        "tree 0 split_feature holds 15 values, not 14"),
    "tree sizes that lie": (
        lambda d, m: _edit(d / "model.txt", "tree_sizes=", "tree_sizes=1"),
        "tree_sizes do not match its trees"),
    "a regression": (lambda d, m: _lightgbm_regression(d, m),
                     "objective 'regression' does not predict class probabilities"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BROKEN_LIGHTGBM))
def test_a_broken_lightgbm_file_is_one_line(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path, case: str
) -> None:
    """Each of these, given to LightGBM's reader, crashes or misleads it (measured: a file cut
    short is a segmentation fault, a cut parameters section another); here, one line."""
    members = adult[0]
    _lightgbm(members, tmp_path)
    break_it, message = BROKEN_LIGHTGBM[case]
    break_it(tmp_path, members)
    _folder(tmp_path, format="lightgbm-text", file="model.txt", classes=INCOME)
    line = _one_line(tmp_path, message)
    assert str(tmp_path / "model.txt") in line


def test_a_lightgbm_model_needs_its_classes(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    _lightgbm(adult[0], tmp_path)
    _folder(tmp_path, format="lightgbm-text", file="model.txt")
    _one_line(tmp_path, r"a LightGBM model needs 'classes' in target\.json")


def _catboost_regression(directory: Path, members: pd.DataFrame) -> None:
    from catboost import CatBoostRegressor

    features = members.drop(columns=["income"])
    CatBoostRegressor(iterations=5, thread_count=1, verbose=0, allow_writing_files=False).fit(
        features, members["age"], cat_features=list(SCHEMA.categorical)
    ).save_model(str(directory / "model.cbm"))


BROKEN_CATBOOST = {
    "a pickle renamed model.cbm": (
        lambda d, m: (d / "model.cbm").write_bytes(pickle.dumps({"trees": []})),
        "not a CatBoost cbm model"),
    "a file cut short": (lambda d, m: _cut(d / "model.cbm", 0.5), "not a CatBoost model"),
    "a regression": (lambda d, m: _catboost_regression(d, m),
                     "loss function 'RMSE' does not predict class probabilities"),
    "a model under another suffix": (
        lambda d, m: (d / "model.cbm").rename(d / "model.bin"), "must be .cbm or .json"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BROKEN_CATBOOST))
def test_a_broken_catboost_file_is_one_line(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path, case: str
) -> None:
    members = adult[0]
    model = _catboost(members, members["income"])
    model.save_model(str(tmp_path / "model.cbm"))  # type: ignore[attr-defined]
    break_it, message = BROKEN_CATBOOST[case]
    break_it(tmp_path, members)
    file = "model.bin" if (tmp_path / "model.bin").exists() else "model.cbm"
    _folder(tmp_path, format="catboost-cbm", file=file)
    _one_line(tmp_path, message)


def test_a_catboost_file_that_crashes_its_reader_is_one_line(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """Valid JSON whose first CTR table has a hash stride of 0 (found by mutating saved
    models) kills the process that loads it with SIGFPE; the probe's process dies instead, and
    the audit's says so in one line."""
    members = adult[0]
    model = _catboost(members, members["income"])
    model.save_model(str(tmp_path / "model.json"), format="json")  # type: ignore[attr-defined]
    _edit(tmp_path / "model.json", '"hash_stride":3', '"hash_stride":0')
    json.loads((tmp_path / "model.json").read_text())
    _folder(tmp_path, format="catboost-cbm", file="model.json")
    line = _one_line(tmp_path, r"CatBoost's reader crashed on it: SIGFPE")
    assert str(tmp_path / "model.json") in line
