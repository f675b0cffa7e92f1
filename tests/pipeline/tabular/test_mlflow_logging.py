"""``panoramia-audit … +logger=mlflow`` end to end on the tiny Adult audit, read back with
MLflow's own client from a local store: a run with the settings, the figures, the verdict and
the reports; a multirun's parent with one child per job; the same stages and figures as
without the logger; and the one line for an unreachable store, a missing extra, a bad value.

The audits share the tabular tests' artifact store, so that their stages are built once per
session (these runs reuse what the other tabular tests built, or the reverse)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from panoramia.pipeline.tracking_record import sweep_record
from tests.cli_support import run_command
from tests.conftest import TINY_AUDIT, shared_store

if TYPE_CHECKING:  # MLflow is imported by the tests that read a store, not at collection
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

TINY = [*TINY_AUDIT, "threads=1"]
pytestmark = pytest.mark.filterwarnings(  # this test's own client reading the store
    "ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"
)
EXPERIMENT = "panoramia-audit"


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tabular tests' shared artifact store (tests/pipeline/tabular/test_tabular_audit.py)."""
    return shared_store(tmp_path_factory, "tabular-artifacts")


def _client(store: Path) -> MlflowClient:
    """MLflow's client on the folder store the logger writes (its SQLite database)."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{store / 'mlflow.db'}")


def _runs(client: MlflowClient) -> list[Run]:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    return client.search_runs([experiment.experiment_id])


def _artifact(client: MlflowClient, run_id: str, name: str, into: Path) -> Path:
    return Path(client.download_artifacts(run_id, name, str(into)))


def test_an_audit_is_logged_and_read_back_with_mlflows_client(
    artifacts: Path, tmp_path: Path
) -> None:
    store, run_dir = tmp_path / "store", tmp_path / "run"
    done = run_command([*TINY, f"artifacts_dir={artifacts}", "+logger=mlflow",
                        f"logger.tracking_uri={store}", f"hydra.run.dir={run_dir}"])  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning" not in done.stderr.lower()  # MLflow's own logs and warnings kept off
    report = json.loads((run_dir / "report.json").read_text())
    assert "logger" not in report["config"]  # where results go is no setting of the audit
    client = _client(store)
    (run,) = _runs(client)
    assert run.info.status == "FINISHED"
    assert f"mlflow: run {run.info.run_id} in experiment 'panoramia-audit' at {store}" in (
        done.stdout
    )
    # the settings, flattened, as written
    params = run.data.params
    assert params["seed"] == "0"
    assert params["audit.null.draws"] == "199"
    assert params["target.hidden"] == "[16, 8]"
    assert params["artifacts_dir"] == str(artifacts)
    assert not any(key.startswith(("logger", "hydra")) for key in params)
    # the figures: the quoted ε̃ with this run's interval, the games, the null, the attacker
    metrics, verdict = run.data.metrics, report["verdict"]
    assert metrics["eps_tilde_quoted"] == pytest.approx(verdict["quote"]["value"])
    low, high = verdict["quote"]["interval"]
    assert (metrics["eps_tilde_quoted_low"], metrics["eps_tilde_quoted_high"]) == (
        pytest.approx(low), pytest.approx(high)
    )  # fmt: skip
    assert metrics["p_value"] == pytest.approx(verdict["null"]["p_value"])
    for key in ("c_lb", "c_plus_eps_lb", "eps_tilde"):
        assert metrics[key] == pytest.approx(report[key])
        assert metrics[f"two_sided.{key}"] == pytest.approx(report["two_sided"][key])
    assert metrics["o1.eps_lb"] == pytest.approx(report["reference_audits"]["o1"]["eps_lb"])
    for side in ("attack", "baseline"):
        terms = report["attacker"][side]
        assert metrics[f"{side}.tpr_at_fpr_0.01"] == pytest.approx(terms["tpr_at_fpr"]["0.01"])
        assert metrics[f"{side}.auc"] == pytest.approx(terms["auc"])
        assert terms["tpr_at_fpr"]["0.001"] is None  # unresolved at this size: not logged
        assert f"{side}.tpr_at_fpr_0.001" not in metrics
    assert run.data.tags["verdict"] == verdict["level"]
    assert run.data.tags["quoted_game"] == verdict["quote"]["game"]
    assert run.data.tags["mlflow.note.content"] == verdict["sentence"]
    assert run.data.tags["panoramia.run_dir"] == str(run_dir.resolve())
    # the reports, as written in the run directory
    listed = {item.path for item in client.list_artifacts(run.info.run_id)}
    assert listed == {"report.html", "report.json", "page_parts.json"}
    for name in listed:
        copy = _artifact(client, run.info.run_id, name, tmp_path)
        assert copy.read_bytes() == (run_dir / name).read_bytes()

    # without the logger: every stage reused (no stage key holds it), the same figures
    plain = run_command([*TINY, f"artifacts_dir={artifacts}", f"hydra.run.dir={tmp_path / 'p'}"])
    assert plain.returncode == 0, plain.stderr[-3000:]
    again = json.loads((tmp_path / "p" / "report.json").read_text())
    assert all(stage["reused"] for stage in again["timings"].values())
    assert {k: s["key"] for k, s in again["timings"].items()} == {
        k: s["key"] for k, s in report["timings"].items()
    }
    for key in ("verdict", "c_lb", "c_plus_eps_lb", "eps_tilde", "two_sided", "attacker"):
        assert again[key] == report[key], key
    assert again["config"] == report["config"]
    assert "mlflow" not in plain.stdout


def test_a_multirun_logs_one_parent_run_with_a_child_per_job(
    artifacts: Path, tmp_path: Path
) -> None:
    store, sweep = tmp_path / "store", tmp_path / "sweep"
    # a release gate that every verdict fails: the process exits 1 only once the parent run is
    # ended (the gate's callback ends last; docs/AUDIT.md, "The release gate")
    failing = tmp_path / "fails-every-level.yaml"
    failing.write_text("fail_levels: [leak_beyond_claim, clear_leak, leak_detected, borderline, "
                       "no_leak_detected, inconclusive]\n")  # fmt: skip
    done = run_command(["-m", *TINY, f"artifacts_dir={artifacts}", "seed=0,7", "+logger=mlflow",
                        f"logger.tracking_uri={store}", f"hydra.sweep.dir={sweep}",
                        f"gate={failing}"])  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    gate_lines = [line for line in done.stdout.splitlines() if line.startswith("gate failed")]
    assert gate_lines[0].startswith(f"gate failed ({failing}): mlp-e10: fail_levels: ")
    assert done.stdout.index("mlflow: sweep run") < done.stdout.index(gate_lines[0])
    client = _client(store)
    runs = _runs(client)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(runs) == 3
    assert len(parents) == 1
    parent = parents[0]
    children = [r for r in runs if r is not parent]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert sorted(r.data.params["seed"] for r in children) == ["0", "7"]
    assert {r.info.status for r in runs} == {"FINISHED"}  # the gate's exit 1 left none open
    recorded = json.loads((sweep / "mlflow.json").read_text())
    assert recorded["parent_run_id"] == parent.info.run_id
    # each child is its job's run: its figures and its reports
    for child in children:
        job = Path(child.data.tags["panoramia.run_dir"])
        report = json.loads((job / "report.json").read_text())
        assert child.data.metrics["eps_tilde_quoted"] == pytest.approx(
            report["verdict"]["quote"]["value"]
        )
        assert child.data.tags["verdict"] == report["verdict"]["level"]
        listed = {item.path for item in client.list_artifacts(child.info.run_id)}
        assert listed == {"report.html", "report.json", "page_parts.json"}
    # the parent: the pooled figures and the summary
    summary = json.loads((sweep / "summary.json").read_text())["mlp-e10"]
    metrics = parent.data.metrics
    assert metrics["runs"] == 2
    assert metrics["leak_called_runs"] == summary["detected_runs"]
    assert metrics["eps_tilde_quoted"] == pytest.approx(summary["quoted"]["mean"])
    assert metrics["c_lb"] == pytest.approx(summary["c_lb"]["mean"])
    assert metrics["c_lb_low"] == pytest.approx(summary["c_lb"]["ci_low"])
    assert 0 <= metrics["p_value"] <= 1
    assert parent.data.tags["verdict"] in {"leak_detected", "borderline", "no_leak_detected"}
    listed = {item.path for item in client.list_artifacts(parent.info.run_id)}
    assert {"summary.md", "summary.json"} <= listed
    copy = _artifact(client, parent.info.run_id, "summary.md", tmp_path)
    assert copy.read_text() == (sweep / "summary.md").read_text()
    assert f"mlflow: sweep run {parent.info.run_id}" in done.stdout

    # two summary groups (another setting swept beside the seeds): each name after its group's
    regrouped = tmp_path / "regrouped"
    for number, child in enumerate(sorted(sweep.glob("*/report.json"))):
        job = regrouped / child.parent.name
        shutil.copytree(child.parent, job)
        overrides = job / ".hydra" / "overrides.yaml"
        overrides.write_text(overrides.read_text() + f"- audit.confidence=0.9{number}\n")
    metrics, tags = sweep_record(regrouped)
    groups = {key.split("/")[0] for key in metrics}
    assert groups == {"mlp-e10 _audit.confidence_0.90_", "mlp-e10 _audit.confidence_0.91_"}
    for group in groups:
        assert metrics[f"{group}/runs"] == 1
        assert f"{group}/verdict" in tags
        assert f"{group}/eps_tilde_quoted" in metrics


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_store_is_one_warning_and_the_audit_keeps_its_outputs(
    artifacts: Path, tmp_path: Path
) -> None:
    uri = f"http://127.0.0.1:{_closed_port()}"
    no_retries = {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}  # MLflow's own setting
    done = run_command([*TINY, f"artifacts_dir={artifacts}", "+logger=mlflow",
                        f"logger.tracking_uri={uri}", f"hydra.run.dir={tmp_path}"],
                       env=no_retries)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]  # the audit's own status
    warnings = [line for line in done.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1, done.stderr[-3000:]
    assert warnings[0].startswith(f"panoramia-audit: warning: not logged to MLflow at {uri} (")
    assert (tmp_path / "report.json").is_file()
    assert (tmp_path / "report.html").is_file()
    assert "report: " in done.stdout
    assert "mlflow:" not in done.stdout


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["logger.tracking_uri=file:///tmp/mlruns"], "logger.tracking_uri: MLflow 3 refuses"),
        (["logger.tracking_uri=${oc.env:HOME}"], "logger.tracking_uri: an interpolation"),
        (["logger.kind=wandb"], "logger.kind: 'wandb' is not one of mlflow"),
    ],
)
def test_a_bad_logger_value_is_one_line_before_any_stage(
    tmp_path: Path, overrides: list[str], says: str
) -> None:
    done = run_command([f"artifacts_dir={tmp_path / 'a'}", "+logger=mlflow", *overrides,
                        f"hydra.run.dir={tmp_path / 'run'}"])  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"panoramia-audit: error: {says}")
    assert not (tmp_path / "a").exists()  # no stage ran


def test_without_the_extra_the_logger_says_how_to_install_it(tmp_path: Path) -> None:
    """A fresh interpreter in which ``import mlflow`` fails, as where the extra is not
    installed (``sys.modules["mlflow"] = None`` is Python's way to make an import fail)."""
    script = (
        "import sys; sys.modules['mlflow'] = None; "
        "from panoramia.pipeline.app import main; "
        f"sys.argv = ['panoramia-audit', 'artifacts_dir={tmp_path / 'a'}', '+logger=mlflow', "
        f"'hydra.run.dir={tmp_path / 'run'}']; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "panoramia-audit: error: logger: +logger=mlflow needs MLflow, which is not installed: "
        "pip install -c constraints.txt -e '.[mlflow]' in the project's folder"
    )
    assert not (tmp_path / "a").exists()
