"""The full demo (make demo) on the embedded Adult data: run with ``pytest -m slow``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_demo_audits_both_targets(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "panoramia-audit"), "-m", "target=mlp_generalised,mlp_overfit",
         f"artifacts_dir={tmp_path / 'artifacts'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert set(summary) == {"mlp-e10", "mlp-e100"}
    reports = {
        json.loads(p.read_text())["target"]["name"]: json.loads(p.read_text())
        for p in (tmp_path / "sweep").glob("*/report.json")
    }
    assert reports["mlp-e10"]["m"] == 3750
    # the over-fitted target leaks clearly to the reference audit with real non-members
    o1 = {name: r["reference_audits"]["o1"]["eps_lb"] for name, r in reports.items()}
    assert o1["mlp-e100"] > 1.0 > o1["mlp-e10"]
