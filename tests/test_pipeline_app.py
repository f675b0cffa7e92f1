"""``panoramia-audit``: the Hydra job on the embedded scores, multirun, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BIN / "panoramia-audit", *args], capture_output=True, text=True, check=False
    )


def test_default_job_reproduces_the_published_numbers(tmp_path: Path) -> None:
    done = _run(f"hydra.run.dir={tmp_path}")
    assert done.returncode == 0, done.stderr
    documents = json.loads((tmp_path / "measurement.json").read_text())
    assert [round(d["eps_tilde"], 3) for d in documents] == [0.092, 0.018]
    assert all(round(d["c_lb"], 3) == 4.515 for d in documents)
    assert len(documents[0]["baseline"]["table"]["tau"]) == 100
    assert not list(tmp_path.glob("*.partial"))


def test_multirun_over_strategies(tmp_path: Path) -> None:
    done = _run(
        "-m",
        "audit.thresholds=grid:100,split:0.5",
        "scores.mia_cols=[mia_mlp100_pred]",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr
    runs = sorted(tmp_path.glob("*/measurement.json"))
    assert len(runs) == 2
    strategies = {json.loads(run.read_text())[0]["thresholds"] for run in runs}
    assert strategies == {"grid:100", "split:0.5"}


def test_bad_scores_path_exits_2_and_keeps_earlier_output(tmp_path: Path) -> None:
    assert _run(f"hydra.run.dir={tmp_path}").returncode == 0
    before = (tmp_path / "measurement.json").read_text()
    done = _run(f"hydra.run.dir={tmp_path}", f"scores.path={tmp_path / 'missing.csv'}")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("does not exist or is not a file")
    assert (tmp_path / "measurement.json").read_text() == before


def test_config_values_are_type_checked(tmp_path: Path) -> None:
    done = _run(f"hydra.run.dir={tmp_path}", "audit.confidence=high")
    assert done.returncode != 0
    assert "confidence" in done.stderr
