"""Target adapters: safetensors, TorchScript, XGBoost JSON, skops, HTTP; unsafe or broken files."""

from __future__ import annotations

import json
import pickle
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from panoramia.errors import InputError
from panoramia.modalities.tabular.adult import SCHEMA
from panoramia.modalities.tabular.training import (
    XGBoostTargetConfig,
    train_xgboost_directory,
)
from panoramia.targets import (
    DEFAULT_TRUSTED_MODULES,
    TRUSTED_MODULES_ENV,
    load_target,
    trusted_modules_from_env,
)
from panoramia.targets.manifest import MANIFEST, manifest_file
from panoramia.targets.trust import import_model_class, is_trusted, json_kwargs
from tests.cli_support import run_audit
from tests.conftest import TINY_AUDIT


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
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "pmml"}))
    with pytest.raises(InputError, match="unknown format 'pmml'"):
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
    trusted: list[str] = []
    if untrusted:
        with pytest.raises(InputError, match="untrusted types"):
            load_target(tmp_path)
        manifest["trusted"] = untrusted  # a manifest never vouches for its own file
        (tmp_path / MANIFEST).write_text(json.dumps(manifest))
        with pytest.raises(InputError, match=r"target\.trusted_modules"):
            load_target(tmp_path)
        trusted = sorted({t.rsplit(".", 1)[0] for t in untrusted})
    losses = load_target(tmp_path, trusted_modules=trusted).per_example_loss(rows)
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
        server.server_close()  # refused at once, not left to time out
    with pytest.raises(InputError, match="unreachable"):
        load_target(tmp_path).per_example_loss(rows.iloc[:5])


# -- which classes a manifest may name (security: the manifest is untrusted input) ----------


def _manifest_dir(mlp_dir: Path, directory: Path, **fields: object) -> Path:
    """A copy of the MLP target whose manifest has ``fields`` replaced."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("encoder.json", "model.safetensors"):
        (directory / name).write_bytes((mlp_dir / name).read_bytes())
    manifest = json.loads((mlp_dir / MANIFEST).read_text()) | fields
    (directory / MANIFEST).write_text(json.dumps(manifest))
    return directory


def _one_line_refusal(directory: Path, match: str, **load: object) -> str:
    with pytest.raises(InputError, match=match) as caught:
        load_target(directory, **load)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_manifest_naming_popen_runs_no_command(mlp_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = _manifest_dir(
        mlp_dir, tmp_path / "model",
        module="subprocess:Popen", kwargs={"args": f"id > {marker}", "shell": True},
    )  # fmt: skip
    message = _one_line_refusal(evil, "module 'subprocess' is not trusted")
    assert "'module'" in message
    assert "target.trusted_modules" in message
    # Even a user who trusts the module gets no command: Popen is not an nn.Module class.
    _one_line_refusal(evil, "not a torch.nn.Module class", trusted_modules=["subprocess"])
    time.sleep(0.5)  # a started shell would have written the marker by now
    assert not marker.exists()


@pytest.mark.parametrize(
    ("module", "kwargs"),
    [
        ("os:system", {"command": "touch {marker}"}),
        ("builtins:eval", {"source": "open({marker!r}, 'w').close()"}),
        ("builtins:exec", {"source": "open({marker!r}, 'w').close()"}),
        ("pathlib:Path", {"args": "{marker}"}),
    ],
)
def test_manifest_naming_any_callable_is_refused(
    mlp_dir: Path, tmp_path: Path, module: str, kwargs: dict
) -> None:
    marker = str(tmp_path / "pwned")
    filled = {key: value.format(marker=marker) for key, value in kwargs.items()}
    evil = _manifest_dir(mlp_dir, tmp_path / "model", module=module, kwargs=filled)
    _one_line_refusal(evil, "is not trusted")
    assert not Path(marker).exists()


@pytest.mark.parametrize(
    "module",
    ["os", "os:", ":system", "os:system()", "os.path:join\n", "../evil:Net", ".relative:Net",
     "a b:Net", "pkg..mod:Net", "pkg.mod:Outer.Inner", "pkg:Net:more", "ｓubprocess:Popen", 7],
)  # fmt: skip
def test_module_that_is_not_a_dotted_name_is_refused(
    mlp_dir: Path, tmp_path: Path, module: object
) -> None:
    evil = _manifest_dir(mlp_dir, tmp_path / "model", module=module)
    _one_line_refusal(evil, r"not 'package\.module:Class'", trusted_modules=["os", "pkg"])


def test_allowed_module_but_not_a_module_class(mlp_dir: Path, tmp_path: Path) -> None:
    for module in (
        "panoramia.modalities.image.nets:ARCHITECTURES",
        "panoramia.modalities.tabular.mlp:nn",
        "panoramia.modalities.tabular.mlp:Missing",
    ):
        _one_line_refusal(
            _manifest_dir(mlp_dir, tmp_path / "m", module=module), "not a torch.nn.Module class"
        )
    ordered = _manifest_dir(mlp_dir, tmp_path / "m", module="collections:OrderedDict")
    _one_line_refusal(ordered, "not a torch.nn.Module class", trusted_modules=["collections"])


@pytest.fixture
def user_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``mypkg`` (an nn.Module ``Net``, a re-exported torch class) and ``mypkgevil``, whose
    import writes the marker file ``imported`` beside them."""
    root = tmp_path / "packages"
    (root / "mypkg").mkdir(parents=True)
    (root / "mypkgevil").mkdir()
    net = (
        "import torch\nfrom torch.nn import Linear\n\n\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self, n_in: int, n_out: int = 2) -> None:\n"
        "        super().__init__()\n"
        "        self.linear = torch.nn.Linear(n_in, n_out)\n\n"
        "    def forward(self, x):\n"
        "        return self.linear(x)\n"
    )
    (root / "mypkg" / "__init__.py").write_text(net)
    (root / "mypkg" / "nets.py").write_text("from mypkg import Net\n")
    marker = root / "imported"
    (root / "mypkgevil" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n{net}")
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in ("mypkg", "mypkg.nets", "mypkgevil"):
        sys.modules.pop(name, None)


def test_trusted_prefixes_match_whole_components(
    mlp_dir: Path, rows: pd.DataFrame, tmp_path: Path, user_packages: Path
) -> None:
    from safetensors.torch import save_file

    n_in = load_target(mlp_dir).encoder.features(rows.iloc[:1]).shape[1]
    torch.manual_seed(0)
    state = {f"linear.{k}": v for k, v in torch.nn.Linear(n_in, 2).state_dict().items()}
    for module in ("mypkg:Net", "mypkg.nets:Net", "mypkgevil:Net"):
        directory = _manifest_dir(mlp_dir, tmp_path / module.replace(":", "_"), module=module,
                                  kwargs={"n_in": n_in})  # fmt: skip
        save_file(state, directory / "model.safetensors")
    # Not trusted by default, and not imported to find out.
    _one_line_refusal(tmp_path / "mypkg_Net", "module 'mypkg' is not trusted")
    for trusted in (["mypkg"], ["mypkg", "mypkg.nets"]):
        for good in ("mypkg_Net", "mypkg.nets_Net"):
            losses = load_target(tmp_path / good, trusted_modules=trusted).per_example_loss(rows)
            assert losses.shape == (600,)
            assert np.isfinite(losses).all()
    message = _one_line_refusal(
        tmp_path / "mypkgevil_Net", "module 'mypkgevil' is not trusted", trusted_modules=["mypkg"]
    )
    assert "target.trusted_modules=[mypkgevil]" in message
    assert not (user_packages / "imported").exists()  # mypkgevil's top level never ran
    # A subpackage's trust does not reach its parent.
    _one_line_refusal(
        tmp_path / "mypkg_Net", "module 'mypkg' is not trusted", trusted_modules=["mypkg.nets"]
    )
    # A trusted module re-exporting an untrusted package's class does not make it trusted.
    reexport = _manifest_dir(mlp_dir, tmp_path / "reexport", module="mypkg:Linear",
                             kwargs={"in_features": n_in, "out_features": 2})  # fmt: skip
    _one_line_refusal(reexport, "defined in module 'torch.nn", trusted_modules=["mypkg"])
    with pytest.raises(InputError, match=r"target\.trusted_modules: 'my pkg'"):
        load_target(tmp_path / "mypkg_Net", trusted_modules=["my pkg"])
    with pytest.raises(InputError, match=r"target\.trusted_modules: ''"):
        load_target(tmp_path / "mypkg_Net", trusted_modules=[""])


def test_torch_layers_need_explicit_trust(
    mlp_dir: Path, rows: pd.DataFrame, tmp_path: Path
) -> None:
    from safetensors.torch import save_file

    n_in = load_target(mlp_dir).encoder.features(rows.iloc[:1]).shape[1]
    directory = _manifest_dir(mlp_dir, tmp_path / "linear", module="torch.nn:Linear",
                              kwargs={"in_features": n_in, "out_features": 2})  # fmt: skip
    save_file(torch.nn.Linear(n_in, 2).state_dict(), directory / "model.safetensors")
    assert not any(m == "torch" or m.startswith("torch.") for m in DEFAULT_TRUSTED_MODULES)
    message = _one_line_refusal(directory, "module 'torch.nn' is not trusted")
    assert "target.trusted_modules=[torch.nn]" in message
    assert "PANORAMIA_TRUSTED_MODULES=torch.nn" in message
    for trusted in (["torch.nn"], ["torch"]):
        target = load_target(directory, trusted_modules=trusted)
        assert target.per_example_loss(rows).shape == (600,)


def test_kwargs_must_be_json_data(mlp_dir: Path, tmp_path: Path) -> None:
    for kwargs in ([1, 2], "hidden=[16]", 3):
        bad = _manifest_dir(mlp_dir, tmp_path / "m", kwargs=kwargs)
        _one_line_refusal(bad, "field 'kwargs': must be a JSON object")
    wrong = _manifest_dir(mlp_dir, tmp_path / "m", kwargs={"bogus": 1})
    _one_line_refusal(wrong, "field 'kwargs'.*cannot be built")
    for value, match in (
        (object(), "object is not JSON data"),
        ({1: 2}, "key 1 is not a string"),
        ((1, 2), "tuple is not JSON data"),
        (b"id", "bytes is not JSON data"),
    ):
        with pytest.raises(InputError, match=match):
            json_kwargs({"hidden": value})
    nested = {"a": [1, 2.5, None, True, "x", {"b": []}]}
    assert json_kwargs(nested) is nested
    assert json_kwargs(None) == {}


def test_demo_manifests_name_default_trusted_modules() -> None:
    from panoramia.modalities.image.nets import ARCHITECTURES
    from panoramia.modalities.tabular.training import MLP_MODULE

    for path in (MLP_MODULE, *ARCHITECTURES.values()):
        assert is_trusted(path.partition(":")[0], DEFAULT_TRUSTED_MODULES)
        assert issubclass(import_model_class(path), torch.nn.Module)
    assert not is_trusted("panoramia", DEFAULT_TRUSTED_MODULES)
    assert not is_trusted("panoramia.models.tabular_mlpx", DEFAULT_TRUSTED_MODULES)


def test_trusted_modules_from_env() -> None:
    assert trusted_modules_from_env({}) == []
    assert trusted_modules_from_env({TRUSTED_MODULES_ENV: ""}) == []
    environ = {TRUSTED_MODULES_ENV: " mypkg, torch.nn ,,"}
    assert trusted_modules_from_env(environ) == ["mypkg", "torch.nn"]
    with pytest.raises(InputError, match="PANORAMIA_TRUSTED_MODULES: 'my pkg'"):
        trusted_modules_from_env({TRUSTED_MODULES_ENV: "mypkg,my pkg"})


def test_cli_refuses_an_evil_manifest_with_exit_2(mlp_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = _manifest_dir(
        mlp_dir, tmp_path / "model",
        module="subprocess:Popen", kwargs={"args": f"id > {marker}", "shell": True},
    )  # fmt: skip
    for extra, message in (
        ([], "module 'subprocess' is not trusted"),
        (["target.trusted_modules=[subprocess]"], "not a torch.nn.Module class"),
    ):
        done = run_audit(
            [], *TINY_AUDIT, "target=path", f"target.path={evil}", *extra,
            artifacts=tmp_path / "artifacts", run_dir=tmp_path / "run",
        )  # fmt: skip
        assert done.returncode == 2, done.stderr[-3000:]
        lines = done.stderr.strip().splitlines()  # stage progress, then the one error line
        assert lines[-1].startswith("panoramia-audit: error: target manifest field 'module'")
        assert message in lines[-1]
        assert sum("error" in line for line in lines) == 1, done.stderr
        assert "Traceback" not in done.stderr
    time.sleep(0.5)
    assert not marker.exists()


def test_a_skops_manifest_never_vouches_for_its_own_types(
    rows: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type beyond skops' defaults loads only from ``target.trusted_modules``, whatever the
    manifest's own ``trusted`` list says."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    package = tmp_path / "pkg"
    (package / "skops_helpers").mkdir(parents=True)
    (package / "skops_helpers" / "__init__.py").write_text("def double(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(package))
    from skops_helpers import double  # type: ignore[import-not-found]

    features = ["age", "hours-per-week"]
    model = make_pipeline(FunctionTransformer(double), LogisticRegression(max_iter=500))
    model.fit(rows[features].to_numpy(float), rows[SCHEMA.label])
    folder = tmp_path / "model"
    folder.mkdir()
    sio.dump(model, folder / "model.skops")
    assert sio.get_untrusted_types(file=folder / "model.skops") == ["skops_helpers.double"]
    schema = {"label": SCHEMA.label, "categorical": [], "continuous": features}
    manifest = {"format": "skops", "file": "model.skops", "schema": schema,
                "trusted": ["skops_helpers.double"]}  # fmt: skip
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"target\.trusted_modules=\[skops_helpers\]"):
        load_target(folder)
    with pytest.raises(InputError, match="untrusted types"):
        load_target(folder, trusted_modules=["skops_helpersevil"])
    losses = load_target(folder, trusted_modules=["skops_helpers"]).per_example_loss(rows)
    assert losses.shape == (600,)


@pytest.mark.parametrize("name", ["../outside.safetensors", "/etc/hostname", "link.safetensors"])
def test_a_manifest_names_files_of_its_own_directory_only(tmp_path: Path, name: str) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (tmp_path / "outside.safetensors").write_bytes(b"x")
    (model / "link.safetensors").symlink_to(tmp_path / "outside.safetensors")
    manifest = {
        "format": "torch-safetensors",
        "module": "panoramia.modalities.tabular.mlp:TabularMLP",
        "kwargs": {},
        "weights": name,
        "encoder": "encoder.json",
    }
    (model / MANIFEST).write_text(json.dumps(manifest))
    (model / "encoder.json").write_text("{}")
    with pytest.raises(InputError, match="must name a file inside the model directory"):
        manifest_file(model, manifest, "weights")


def test_a_model_trained_on_other_label_values_is_mapped_by_the_manifest(
    rows: pd.DataFrame, tmp_path: Path
) -> None:
    """A model trained on 0/1 for data that says ``<=50K``/``>50K``: without ``classes`` one
    line names both sets and the fix; with them the losses are the model's."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    features = ["age", "hours-per-week"]
    values = sorted(rows[SCHEMA.label].astype(str).unique())
    numeric = (rows[SCHEMA.label].astype(str) == values[1]).astype(int)
    model = LogisticRegression(max_iter=500).fit(rows[features].to_numpy(float), numeric)
    sio.dump(model, tmp_path / "model.skops")
    schema = {"label": SCHEMA.label, "categorical": [], "continuous": features}
    manifest = {"format": "skops", "file": "model.skops", "schema": schema}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError) as refused:
        load_target(tmp_path).per_example_loss(rows)
    message = str(refused.value)
    assert f"the data's values {values!r}".replace('"', "'") in message
    assert "model's classes ['0', '1']" in message
    assert '"classes" in target.json' in message
    (tmp_path / MANIFEST).write_text(json.dumps(manifest | {"classes": values}))
    losses = load_target(tmp_path).per_example_loss(rows)
    probabilities = model.predict_proba(rows[features].to_numpy(float))
    expected = -np.log(probabilities[np.arange(len(rows)), numeric.to_numpy()])
    np.testing.assert_allclose(losses, expected, rtol=1e-9)
    (tmp_path / MANIFEST).write_text(json.dumps(manifest | {"classes": values[:1]}))
    with pytest.raises(InputError, match="one per class of the model"):
        load_target(tmp_path)


def _native_xgboost(rows: pd.DataFrame, directory: Path, **manifest: object) -> Path:
    """An XGBClassifier trained as people do (a pandas frame with category columns, labels
    0/1, enable_categorical) and saved with save_model; target.json holds ``manifest``."""
    import xgboost as xgb

    features = rows.drop(columns=["income"]).copy()
    for column in SCHEMA.categorical:
        features[column] = features[column].astype("category")
    model = xgb.XGBClassifier(n_estimators=20, max_depth=3, enable_categorical=True)
    model.fit(features, (rows["income"] == ">50K").astype(int))
    directory.mkdir(parents=True, exist_ok=True)
    model.save_model(directory / "model.json")
    (directory / MANIFEST).write_text(json.dumps({"format": "xgboost-json", **manifest}))
    return directory


def test_an_xgboost_model_as_xgboost_saves_it(rows: pd.DataFrame, tmp_path: Path) -> None:
    import xgboost as xgb

    from panoramia.modalities.tabular.table import conform

    directory = _native_xgboost(rows, tmp_path / "xgb", file="model.json",
                                classes=["<=50K", ">50K"])  # fmt: skip
    target = load_target(directory)
    data = conform(rows, SCHEMA, source="test")
    losses = target.per_example_loss(data)
    model = xgb.XGBClassifier()
    model.load_model(directory / "model.json")
    features = rows.drop(columns=["income"]).copy()
    for column in SCHEMA.categorical:
        features[column] = features[column].astype("category")
    index = (rows["income"] == ">50K").to_numpy(int)
    probability = model.predict_proba(features)[np.arange(len(rows)), index]
    np.testing.assert_allclose(losses, -np.log(probability), rtol=1e-5)
    with pytest.raises(InputError, match=r"the data lacks \['age'\]"):
        target.per_example_loss(data.drop(columns=["age"]))
    with pytest.raises(InputError, match=r"has \['income', 'id'\] besides them"):
        target.per_example_loss(data.assign(id=1.0))
    with pytest.raises(InputError, match=r"the data's values \['<=50K'\] are not among"):
        load_target(
            _native_xgboost(rows, tmp_path / "other", file="model.json", classes=["0", ">50K"])
        ).per_example_loss(data)
    with pytest.raises(InputError, match=r"needs 'classes' in target\.json"):
        load_target(_native_xgboost(rows, tmp_path / "bare", file="model.json"))


def test_xgboost_categories_match_by_value_and_margins_are_refused(tmp_path: Path) -> None:
    """A category column of integers (1, 2, 3) read back from a CSV as 1.0, 2.0, 3.0 still
    matches the booster's categories; an objective without probabilities is one line."""
    import xgboost as xgb

    from panoramia.modalities.tabular.table import TabularSchema, conform

    rng = np.random.default_rng(0)
    grade, other = rng.choice([1, 2, 3], 300), rng.normal(size=300)
    labels = ((grade == 3) ^ (other > 1)).astype(int)
    features = pd.DataFrame({"other": other, "grade": pd.Categorical(grade)})
    model = xgb.XGBClassifier(n_estimators=20, enable_categorical=True).fit(features, labels)
    model.save_model(tmp_path / "model.json")
    manifest = {"format": "xgboost-json", "file": "model.json", "classes": ["no", "yes"]}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    frame = pd.DataFrame({"other": other, "grade": grade.astype(float),
                          "label": np.where(labels, "yes", "no")})  # fmt: skip
    rows = conform(frame, TabularSchema("label", (), ("other", "grade")), source="test")
    expected = model.predict_proba(features)[np.arange(300), labels]
    np.testing.assert_allclose(
        load_target(tmp_path).per_example_loss(rows), -np.log(expected), rtol=1e-5
    )
    margins = xgb.XGBClassifier(n_estimators=5, objective="binary:logitraw",
                                enable_categorical=True).fit(features, labels)  # fmt: skip
    margins.save_model(tmp_path / "model.json")
    with pytest.raises(InputError, match="objective 'binary:logitraw' does not predict"):
        load_target(tmp_path)


def test_a_manifest_naming_the_networks_old_modules_still_loads(
    mlp_dir: Path, rows: pd.DataFrame, tmp_path: Path
) -> None:
    """Manifests written before the modalities became plug-ins name
    ``panoramia.models.tabular_mlp``: read as the plug-in's module, after the same checks."""
    from panoramia.modalities.image.nets import ResNet
    from panoramia.modalities.tabular.mlp import TabularMLP

    assert import_model_class("panoramia.models.tabular_mlp:TabularMLP") is TabularMLP
    assert import_model_class("panoramia.models.image_nets:ResNet") is ResNet
    module = json.loads((mlp_dir / MANIFEST).read_text())["module"]
    old = _manifest_dir(mlp_dir, tmp_path / "old", module=module.replace(
        "panoramia.modalities.tabular.mlp", "panoramia.models.tabular_mlp"))  # fmt: skip
    assert np.array_equal(
        load_target(old).per_example_loss(rows), load_target(mlp_dir).per_example_loss(rows)
    )
    _one_line_refusal(
        _manifest_dir(mlp_dir, tmp_path / "m", module="panoramia.models.tabular_mlp:nn"),
        "not a torch.nn.Module class",
    )


@pytest.mark.parametrize("kind", ["skops", "xgboost-json", "http", "hf-causal-lm"])
def test_a_format_the_manifests_modality_does_not_open_is_refused_in_one_line(
    mlp_dir: Path, tmp_path: Path, kind: str
) -> None:
    """``"modality": "image"`` beside a tabular format is refused, naming the image audit's
    formats (a text format belongs to text whatever the field says: its loader reads it)."""
    folder = _manifest_dir(mlp_dir, tmp_path / "m", format=kind, modality="image")
    if kind == "hf-causal-lm":
        _one_line_refusal(folder, "no Hugging Face config.json")
    else:
        message = _one_line_refusal(folder, f"format '{kind}' is not one the image audit opens")
        assert "hf-image-classification" in message
