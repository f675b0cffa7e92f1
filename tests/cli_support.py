"""Running ``panoramia-audit`` in a child process, as a user would (the three audits' tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

AUDIT_COMMAND = Path(sys.executable).parent / "panoramia-audit"


def run_audit(
    config: list[str], *overrides: str, artifacts: Path, run_dir: Path | None = None
) -> subprocess.CompletedProcess:
    """``panoramia-audit CONFIG artifacts_dir=ARTIFACTS OVERRIDES [hydra.run.dir=RUN_DIR]``,
    output captured; a failing run is returned, not raised."""
    command = [str(AUDIT_COMMAND), *config, f"artifacts_dir={artifacts}", *overrides]
    if run_dir is not None:
        command.append(f"hydra.run.dir={run_dir}")
    return subprocess.run(command, capture_output=True, text=True, check=False)
