"""Running ``panoramia-audit`` in a child process, as a user would (the three audits' tests).

Each run is its own process, with its own exit status, standard output and standard error, but
it is forked from a server process that imported the audit's heavy libraries once (Lightning,
torch, transformers, sdv, xgboost: ~10 s per process on 2 cores), instead of starting Python
afresh. The child then calls the console script's own entry point
(:func:`panoramia.pipeline.app.main`) with the command line, the environment and the working
directory of the test. Tests that must kill a real ``panoramia-audit`` process (resumption)
start the installed console script instead, so the script itself is exercised as well.
"""

from __future__ import annotations

import fcntl
import hashlib
import multiprocessing
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

AUDIT_COMMAND = Path(sys.executable).parent / "panoramia-audit"
PRELOAD = (
    "tests.cli_support", "panoramia.pipeline.app", "panoramia.pipeline.tabular.pipeline",
    "panoramia.pipeline.image.pipeline", "panoramia.pipeline.text.pipeline", "lightning",
    "transformers", "sdv.single_table", "xgboost", "sklearn.ensemble",
)  # fmt: skip
"""Modules the fork server imports once; each audit process starts with them loaded."""

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(list(PRELOAD))


def _main_in_child(
    argv: list[str], env: dict[str, str], cwd: str, stdout_path: str, stderr_path: str
) -> None:
    """The child's body: the console script's ``main()`` with this command line, environment,
    working directory and output files; exits with the status the script would exit with."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        for fd, path in ((1, stdout_path), (2, stderr_path)):
            target = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)
        sys.argv = ["panoramia-audit", *argv]
        from panoramia.pipeline.app import main

        try:
            main()
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:  # sys.exit("message"): Python prints it and exits 1
                print(stop.code, file=sys.stderr)
                code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_command(
    argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``panoramia-audit ARGV`` in a child process of the fork server, in ``cwd`` (default: the
    current directory) with ``env`` (default: the current environment), output captured; a
    failing run is returned, not raised (like ``subprocess.run(..., check=False)``)."""
    with tempfile.TemporaryDirectory(prefix="panoramia-cli-") as scratch:
        out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
        out.touch()
        err.touch()
        child = _CONTEXT.Process(
            target=_main_in_child,
            args=(
                list(argv),
                dict(os.environ if env is None else env),
                str(cwd or Path.cwd()),
                str(out),
                str(err),
            ),
        )
        child.start()
        child.join()
        return subprocess.CompletedProcess(
            [str(AUDIT_COMMAND), *argv], child.exitcode, out.read_text(), err.read_text()
        )


def run_audit(
    config: list[str], *overrides: str, artifacts: Path, run_dir: Path | None = None
) -> subprocess.CompletedProcess:
    """``panoramia-audit CONFIG artifacts_dir=ARTIFACTS OVERRIDES [hydra.run.dir=RUN_DIR]``,
    output captured; a failing run is returned, not raised."""
    command = [*config, f"artifacts_dir={artifacts}", *overrides]
    with _one_at_a_time(artifacts, command):
        if run_dir is not None:
            command.append(f"hydra.run.dir={run_dir}")
        return run_command(command)


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
