"""The release gate walked as a CI job would (docs/AUDIT.md, "The release gate"): the tiny Adult
audit of the shipped over-fitted MLP (``target=mlp_overfit``: 100 epochs) and of the
generalised one (``target=mlp_generalised``: 10 epochs), each under ``gate=strict``; then the
two as one multirun, whose gate reads the pooled verdicts; then
``panoramia gate`` on the files they left.

Only the audit's size is tiny here (TINY_AUDIT less its target settings): the targets are the
shipped recipes. The audits share the tabular tests' artifact store; the multirun reuses every
stage of the two single runs (the gate is in no stage key)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panoramia.cli import app as cli
from tests.cli_support import run_command
from tests.conftest import TINY_AUDIT, shared_store

AUDIT = [o for o in TINY_AUDIT if not o.startswith("target.")] + ["threads=1"]
"""The tiny audit with the shipped targets' own recipes."""


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tabular tests' shared artifact store (tests/pipeline/tabular/test_tabular_audit.py)."""
    return shared_store(tmp_path_factory, "tabular-artifacts")


def _cases(gate_xml: Path) -> dict[str, str]:
    """Each JUnit test case's name → ``failure``, ``skipped`` or ``passed``."""
    found = {}
    for case in ET.parse(gate_xml).getroot().iter("testcase"):
        state = "passed"
        for kind in ("failure", "skipped"):
            if case.find(kind) is not None:
                state = kind
        found[case.get("name", "")] = state
    return found


def test_the_over_fitted_model_fails_the_strict_gate_and_the_generalised_one_passes(
    artifacts: Path, tmp_path: Path
) -> None:
    summary_file = tmp_path / "step-summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary_file)}
    base = [*AUDIT, f"artifacts_dir={artifacts}", "gate=strict"]

    over = run_command([*base, "target=mlp_overfit", f"hydra.run.dir={tmp_path / 'over'}"],
                       env=env)  # fmt: skip
    report = json.loads((tmp_path / "over" / "report.json").read_text())
    # what the audit measured on this model (a precondition of what the gate must say)
    assert report["verdict"]["level"] == "leak_detected", report["verdict"]["headline"]
    low = report["verdict"]["quote"]["interval"][0]
    assert low > 0.1
    assert over.returncode == 1, over.stderr[-3000:]
    failed = [line for line in over.stdout.splitlines() if line.startswith("gate failed")]
    assert failed[0] == (
        'gate failed (strict): mlp-e100 seed 0: fail_levels: the verdict reads "Leak detected" '
        "(leak_detected), a level this policy fails"
    )
    assert failed[1].startswith("gate failed (strict): mlp-e100 seed 0: max_eps_tilde_low: ")
    assert f"its low end {low:.2f} is above the limit 0.10" in failed[1]
    assert len(failed) == 2  # the claim (none declared) and TPR at 1 % FPR pass
    assert "gate" not in report["config"]  # the gate is no setting of the audit
    cases = _cases(tmp_path / "over" / "gate.xml")
    assert cases == {
        "mlp-e100 seed 0: claim_must_hold": "passed",
        "mlp-e100 seed 0: fail_levels": "failure",
        "mlp-e100 seed 0: max_eps_tilde_low": "failure",
        "mlp-e100 seed 0: max_tpr_at_fpr.0.01": "passed",
    }

    generalised = run_command(
        [*base, "target=mlp_generalised", f"hydra.run.dir={tmp_path / 'generalised'}"], env=env
    )
    assert generalised.returncode == 0, generalised.stderr[-3000:]
    assert (
        "gate passed (strict): mlp-e10 seed 0: claim_must_hold, fail_levels, max_eps_tilde_low, "
        "max_tpr_at_fpr.0.01"
    ) in generalised.stdout.splitlines()
    assert set(_cases(tmp_path / "generalised" / "gate.xml").values()) == {"passed"}
    headings = [line for line in summary_file.read_text().splitlines() if line.startswith("#")]
    assert headings == ["### Release gate `strict`: failed", "### Release gate `strict`: passed"]

    # the same file read by `panoramia gate`: strict fails it, lenient lets it through (its
    # bars: a clear leak, ε̃'s low end above ln 2, 20 points over the baseline at 1 % FPR)
    runner = CliRunner()
    again = runner.invoke(cli, ["gate", str(tmp_path / "over"), "--policy", "strict"], env=env)
    assert again.exit_code == 1
    assert again.output.splitlines() == failed
    assert low < 0.693
    lenient = runner.invoke(cli, ["gate", str(tmp_path / "over" / "report.json"), "--policy",
                                  "lenient"], env=env)  # fmt: skip
    assert lenient.exit_code == 0, lenient.output
    assert lenient.output.startswith("gate passed (lenient): mlp-e100 seed 0: ")

    # one multirun of both: the gate reads each target's pooled verdict once the summary is
    # written (that it exits after the MLflow parent run is ended: test_mlflow_logging.py)
    sweep = tmp_path / "sweep"
    multirun = run_command(
        ["-m", *base, "target=mlp_overfit,mlp_generalised", f"hydra.sweep.dir={sweep}"], env=env
    )
    assert multirun.returncode == 1, multirun.stderr[-3000:]
    lines = multirun.stdout.splitlines()
    pooled = [line for line in lines if line.startswith("gate ")]
    assert pooled[0].startswith(
        'gate failed (strict): mlp-e100: fail_levels: the verdict reads "Leak detected (pooled)"'
    )
    assert pooled[-1].startswith("gate passed (strict): mlp-e10: ")
    assert len(pooled) == 3  # the pooled verdict and ε̃'s low end fail; the other passes
    assert (sweep / "summary.md").is_file()
    (rerun,) = [p for p in sweep.glob("*/report.json") if "mlp-e100" in p.parent.name]
    timings = json.loads(rerun.read_text())["timings"]  # every stage of the single run reused
    assert all(stage["reused"] for stage in timings.values())
    assert {k: s["key"] for k, s in timings.items()} == {
        k: s["key"] for k, s in report["timings"].items()
    }
    cases = _cases(sweep / "gate.xml")
    assert cases["mlp-e100: fail_levels"] == "failure"
    assert cases["mlp-e10: fail_levels"] == "passed"
    last = summary_file.read_text().rsplit("### ", 1)[1]
    assert last.startswith("Release gate `strict`: failed")
    assert "| mlp-e10 | `fail_levels` | passed |" in last

    # `panoramia gate` on the sweep (its directory or its summary.json): the same lines
    junit = tmp_path / "cli-gate.xml"
    arguments = ["gate", str(sweep / "summary.json"), "--policy", "strict", "--junit", str(junit)]
    swept = runner.invoke(cli, arguments, env={"GITHUB_STEP_SUMMARY": ""})
    assert swept.exit_code == 1
    assert swept.output.splitlines() == pooled
    assert _cases(junit) == cases
