"""The ``logger`` setting (``+logger=mlflow``): its values checked where it is declared, and
what a run logs (params within MLflow's limits, interpolations kept as text). No audit runs
here; ``tests/pipeline/tabular/test_mlflow_logging.py`` runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from panoramia.errors import InputError
from panoramia.pipeline.registry import compose_job
from panoramia.pipeline.tracking_record import MAX_KEY, MAX_PARAM, run_params
from panoramia.pipeline.tracking_settings import (
    TrackingSettings,
    check_logger_chosen,
    tracking_settings,
)

SECTION = {"kind": "mlflow", "tracking_uri": None, "experiment": "e", "run_name": None}


def _settings(
    environ: dict[str, str] | None = None, cwd: Path | None = None, **changes: object
) -> TrackingSettings:
    found = tracking_settings({**SECTION, **changes}, environ=environ or {}, cwd=cwd)
    assert found is not None
    return found


def test_no_logger_is_no_tracking() -> None:
    assert tracking_settings(None) is None
    assert compose_job([]).logger is None  # the schema's default: nothing is logged


def test_the_default_store_is_a_sqlite_database_in_mlruns(tmp_path: Path) -> None:
    found = _settings(cwd=tmp_path)
    assert found.tracking_uri == f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    assert found.artifact_location == (tmp_path / "mlruns" / "artifacts").as_uri()
    assert found.shown_uri == str(tmp_path / "mlruns")


def test_the_setting_wins_over_the_environment_which_wins_over_the_default(
    tmp_path: Path,
) -> None:
    environ = {"MLFLOW_TRACKING_URI": "http://tracking.example:5000"}
    assert _settings(environ, cwd=tmp_path).tracking_uri == "http://tracking.example:5000"
    assert _settings(environ, cwd=tmp_path).artifact_location is None  # the server's
    given = _settings(environ, cwd=tmp_path, tracking_uri="store")
    assert given.tracking_uri == f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    uri = _settings(environ, tracking_uri="postgresql://me@db/mlflow")
    assert uri.tracking_uri == "postgresql://me@db/mlflow"


def test_databricks_is_a_uri_not_a_folder() -> None:
    assert _settings(tracking_uri="databricks").tracking_uri == "databricks"


def test_the_shipped_option_composes_and_keeps_the_settings_rules() -> None:
    from omegaconf import OmegaConf

    from panoramia.audit_settings import check_settings

    composed = compose_job(["+logger=mlflow", "artifacts_dir=/tmp/unused"])
    section = OmegaConf.to_container(composed.logger, resolve=False)
    assert section == {"kind": "mlflow", "tracking_uri": None, "experiment": "panoramia-audit",
                       "run_name": None}  # fmt: skip
    assert tracking_settings(section, environ={}) is not None
    check_settings(OmegaConf.to_container(composed, resolve=False))
    check_settings(OmegaConf.to_container(composed, resolve=True))


def test_a_password_in_the_uri_is_not_shown() -> None:
    found = _settings(tracking_uri="https://me:secret@tracking.example/")
    assert found.tracking_uri == "https://me:secret@tracking.example/"
    assert "secret" not in found.shown_uri
    assert found.shown_uri == "https://me:***@tracking.example/"


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"kind": "wandb"}, "logger.kind: 'wandb' is not one of mlflow"),
        ({"experiment": ""}, "logger.experiment: a non-empty text is required"),
        ({"tracking_uri": "  "}, "logger.tracking_uri: a non-empty text is required"),
        ({"tracking_uri": "${oc.env:SECRET}"}, "logger.tracking_uri: an interpolation"),
        ({"run_name": "${seed}"}, "logger.run_name: an interpolation"),
        ({"run_name": "a\nb"}, "logger.run_name: control characters"),
        ({"experiment": "x" * 501}, "logger.experiment: 501 characters, at most 500"),
        ({"tracking_uri": "file:///tmp/mlruns"}, "MLflow 3 refuses the file store"),
    ],
)
def test_bad_values_are_one_line_naming_the_key(changes: dict, says: str) -> None:
    with pytest.raises(InputError) as raised:
        _settings(**changes)
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_file_store_is_taken_where_mlflow_is_told_to_allow_it() -> None:
    environ = {"MLFLOW_ALLOW_FILE_STORE": "true"}
    assert _settings(environ, tracking_uri="file:///tmp/x").tracking_uri == "file:///tmp/x"


def test_a_folder_holding_the_old_file_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mlruns" / "0").mkdir(parents=True)
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text("name: Default\n")
    with pytest.raises(InputError, match="holds an MLflow file store"):
        _settings(cwd=tmp_path)


def test_an_interpolated_environment_uri_is_refused() -> None:
    with pytest.raises(InputError, match=r"\$MLFLOW_TRACKING_URI: not a tracking URI"):
        _settings({"MLFLOW_TRACKING_URI": "${oc.env:X}"})


def test_logger_keys_without_a_logger_name_the_missing_choice() -> None:
    with pytest.raises(InputError, match=r"^logger.tracking_uri: no logger is chosen; add "):
        check_logger_chosen(["seed=1", "logger.tracking_uri=/tmp/x"])
    check_logger_chosen(["+logger=mlflow", "logger.tracking_uri=/tmp/x"])  # chosen: fine
    check_logger_chosen(["seed=1"])


def test_params_are_the_settings_as_written_within_mlflows_limits() -> None:
    config = {
        "seed": 3,
        "threads": None,
        "artifacts_dir": "${oc.env:PANORAMIA_HOME,/x}/artifacts",
        "audit": {"null": {"draws": 199}, "slices": ["sex", "age"], "flag": True},
        "data": {"categorical": ["c" * 40] * 200},
        "logger": {"kind": "mlflow", "tracking_uri": "https://me:secret@host/"},
        "hydra": {"run": {"dir": "outputs"}},
        "weird key!": 1,
    }
    params = run_params(config)
    assert params["seed"] == "3"
    assert params["threads"] == "null"
    assert params["artifacts_dir"] == "${oc.env:PANORAMIA_HOME,/x}/artifacts"  # not resolved
    assert params["audit.null.draws"] == "199"
    assert params["audit.slices"] == '["sex", "age"]'
    assert params["audit.flag"] == "true"
    assert params["weird key_"] == "1"  # a character MLflow refuses in a name
    long = params["data.categorical"]
    assert len(long) == MAX_PARAM
    assert long.endswith("…")
    assert not any(key.startswith(("logger", "hydra")) for key in params)
    assert all(len(key) <= MAX_KEY for key in params)
