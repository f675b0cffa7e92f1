"""Running ``panoramia-audit`` in a child process, as a user would (the three audits' tests).

Each run is its own process, with its own exit status, standard output and standard error, but
it is forked from a server process that imported the audit's heavy libraries once (Lightning,
torch, transformers, sdv, xgboost: ~10 s per process on 2 cores), instead of starting Python
afresh. The child then calls the console script's own entry point
(:func:`panoramia.pipeline.app.main`) with the command line, the environment and the working
directory of the test. What the child does not get from the test: environment variables
that libraries read when imported (``HF_HUB_OFFLINE``, ``OMP_NUM_THREADS``: the server's
values), and a hash seed of its own (every child shares the server's). So the installed console
script runs where either matters: the kill-and-resume test, the second run of the rerun test
(stage keys must not depend on the interpreter) and a bad setting per modality
(``run_console_script``).
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
    "tests.cli_support", "panoramia.pipeline.app", "panoramia.modalities.tabular.pipeline",
    "panoramia.modalities.image.pipeline", "panoramia.modalities.text.pipeline", "lightning",
    "transformers", "sdv.single_table", "xgboost", "sklearn.ensemble",
)  # fmt: skip
"""Modules the fork server imports once; each audit process starts with them loaded."""

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(list(PRELOAD))


def _main_in_child(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    stdout_path: str,
    stderr_path: str,
    plugins: tuple[str, ...] = (),
) -> None:
    """The child's body: the console script's ``main()`` with this command line, environment,
    working directory and output files, with the modality ``plugins`` (``module:name`` of a
    test's own declarations) registered first; exits with the status the script would exit
    with."""
    code = 1
    try:
        from panoramia.modality_plugin import resolve
        from panoramia.plugins import register

        for path in plugins:
            register(resolve(path))
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
            raise SystemExit(main())  # as the console script does: sys.exit(main())
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:  # sys.exit("message"): Python prints it and exits 1
                print(stop.code, file=sys.stderr)
                code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        _charge_cpu()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


FORKED_CPU = "forked-{worker}.log"
"""Where a forked audit adds its CPU seconds, in ``$SUITE_CPU_DIR`` (``benchmarks/
cpu_per_test.py`` charges them to the test that waited for it: the fork server, not the test,
reaps it, so the test's own accounting never sees it)."""


def _charge_cpu() -> None:
    """Add this forked audit's CPU seconds (its own and its reaped children's, since the fork)
    to its test worker's file, where ``SUITE_CPU_DIR`` is set (``benchmarks/suite_time.py
    --by-file``); nothing otherwise."""
    directory = os.environ.get("SUITE_CPU_DIR")
    if not directory:
        return
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(directory) / FORKED_CPU.format(worker=worker), "a") as charged:
        charged.write(f"{seconds}\n")


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    plugins: Sequence[str] = (),
) -> subprocess.CompletedProcess:
    """``panoramia-audit ARGV`` in a child process of the fork server, in ``cwd`` (default: the
    current directory) with ``env`` (default: the current environment), with a test's own
    modality ``plugins`` registered (``module:name`` of their declarations), output captured;
    a failing run is returned, not raised (like ``subprocess.run(..., check=False)``)."""
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
                tuple(plugins),
            ),
        )
        child.start()
        try:
            child.join()
        except BaseException:  # interrupted: stop the audit, as subprocess.run would
            child.kill()
            child.join()
            raise
        return subprocess.CompletedProcess(
            [str(AUDIT_COMMAND), *argv], child.exitcode, out.read_text(), err.read_text()
        )


def run_console_script(argv: Sequence[str]) -> subprocess.CompletedProcess:
    """The installed ``panoramia-audit ARGV`` in a new interpreter, output captured."""
    return subprocess.run([str(AUDIT_COMMAND), *argv], capture_output=True, text=True, check=False)


def run_audit(
    config: list[str],
    *overrides: str,
    artifacts: Path,
    run_dir: Path | None = None,
    console_script: bool = False,
) -> subprocess.CompletedProcess:
    """``panoramia-audit CONFIG artifacts_dir=ARTIFACTS OVERRIDES [hydra.run.dir=RUN_DIR]``,
    output captured (the installed script in a new interpreter with ``console_script``); a
    failing run is returned, not raised."""
    command = [*config, f"artifacts_dir={artifacts}", *overrides]
    with _one_at_a_time(artifacts, command):
        if run_dir is not None:
            command.append(f"hydra.run.dir={run_dir}")
        return run_console_script(command) if console_script else run_command(command)


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
