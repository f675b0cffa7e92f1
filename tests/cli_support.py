"""Running ``panoramia-audit`` in a child process, as a user would (the three audits' tests)."""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

AUDIT_COMMAND = Path(sys.executable).parent / "panoramia-audit"


def run_audit(
    config: list[str], *overrides: str, artifacts: Path, run_dir: Path | None = None
) -> subprocess.CompletedProcess:
    """``panoramia-audit CONFIG artifacts_dir=ARTIFACTS OVERRIDES [hydra.run.dir=RUN_DIR]``,
    output captured; a failing run is returned, not raised."""
    command = [str(AUDIT_COMMAND), *config, f"artifacts_dir={artifacts}", *overrides]
    with _one_at_a_time(artifacts, command):
        if run_dir is not None:
            command.append(f"hydra.run.dir={run_dir}")
        return subprocess.run(command, capture_output=True, text=True, check=False)


@contextmanager
def _one_at_a_time(artifacts: Path, command: list[str]) -> Iterator[None]:
    """Hold a lock on this exact audit (same settings, same store) while it runs: where tests
    on two xdist workers run the same audit on a shared store, the second waits and reuses
    every stage instead of building them all a second time."""
    digest = hashlib.sha256("\0".join(command).encode()).hexdigest()[:16]
    locks = Path(artifacts) / ".test-locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / digest, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
