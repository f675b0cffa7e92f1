"""What the kernel confinement of an audit child costs (SECURITY.md, "Confinement").

Runs the tests' tiny tabular audit as the service's worker does, ``--repeats`` times confined
(``python -m panoramia.sandbox … -- python -m panoramia.pipeline.app …``, the rules of
:func:`panoramia.service.worker.launch.audit_confinement`) and as many times unconfined,
alternating, each from an empty artifact store, and prints the wall-clock seconds of each
and the relative difference of the medians. Needs a kernel with Landlock.

    .venv/bin/python benchmarks/confinement_cost.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from panoramia.sandbox import describe, landlock_abi, launcher
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.command import job_command
from panoramia.service.worker.launch import audit_confinement, audit_environment, private_folders

TINY = [
    "target=mlp_generalised", "data.max_members=800", "data.pool_size=2000", "target.epochs=2",
    "target.hidden=[16,8]", "helper.epochs=2", "helper.hidden=[16,8]", "helper.n_rows=300",
    "generator.filter.extra_fraction=0.5",
]  # fmt: skip


def one_audit(home: Path, confined: bool, number: int) -> float:
    """Seconds of one tiny audit in a fresh run directory and artifact store."""
    settings = ServiceSettings(home=home, database_url=f"sqlite:///{home / 'panoramia.db'}")
    run_dir = settings.audits_dir / f"run-{number}"
    artifacts = settings.artifacts_dir / f"store-{number}"
    run_dir.mkdir(parents=True)
    command = job_command(TINY, run_dir=run_dir, artifacts_dir=artifacts, threads=1)
    env = audit_environment(run_dir, 1) | {"PATH": os.environ.get("PATH", "/usr/bin")}
    if confined:
        command = launcher(audit_confinement(settings, run_dir, artifacts), command)
        env |= private_folders(run_dir)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=run_dir, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the audit failed:\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not landlock_abi():
        raise SystemExit(f"no confinement to measure: {describe()}")
    home = Path(tempfile.mkdtemp(prefix="panoramia-confinement-"))
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for number in range(args.repeats):
            for confined in (False, True):
                seconds = one_audit(home, confined, 2 * number + confined)
                times[confined].append(seconds)
                kind = "confined  " if confined else "unconfined"
                print(f"{kind} run {number + 1}: {seconds:.2f} s")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    plain, boxed = statistics.median(times[False]), statistics.median(times[True])
    print(f"confinement: {describe()}")
    print(f"median tiny audit: unconfined {plain:.2f} s, confined {boxed:.2f} s, "
          f"difference {100 * (boxed - plain) / plain:+.1f} %")  # fmt: skip


if __name__ == "__main__":
    main()
