"""The kernel confines an audit child (SECURITY.md, "Confinement"): under the very rules the
worker gives a real audit, a child asked directly to open another contributor's file, another
audit's run directory or the store is refused by Landlock, while the code, the configs, the
shared models and its own run directory stay usable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from panoramia.errors import InputError
from panoramia.sandbox import landlock_abi, launcher
from panoramia.service.worker.launch import audit_confinement, private_folders
from tests.service_support import settings_for

needs_landlock = pytest.mark.skipif(
    not landlock_abi(), reason="this kernel offers no Landlock (the service says so at start)"
)
PROBE = """
import json, os, sys
results = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        if name.startswith("write"):
            with open(path, "w") as handle:
                handle.write("x")
        elif os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").read()
        results[name] = "allowed"
    except PermissionError:
        results[name] = "refused"
import torch, panoramia.pipeline.graph  # the audit's own imports still work
print(json.dumps(results))
"""


def _home(tmp_path: Path):  # type: ignore[no-untyped-def]
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'panoramia.db'}")
    for who in ("alice", "mallory"):
        (settings.data_dir / who).mkdir(parents=True)
        (settings.data_dir / who / "members.csv").write_text(f"{who}'s rows\n")
    (settings.home / "panoramia.db").write_text("the store")
    (settings.models_dir / "shared").mkdir(parents=True)
    (settings.models_dir / "shared" / "target.json").write_text("{}")
    (settings.audits_dir / "other-audit").mkdir(parents=True)
    (settings.audits_dir / "other-audit" / "report.json").write_text("{}")
    (settings.artifacts_dir / "2" / "data").mkdir(parents=True)
    run_dir = settings.audits_dir / "mine"
    run_dir.mkdir(parents=True)
    return settings, run_dir


@needs_landlock
def test_a_confined_audit_child_reaches_only_its_own_files(tmp_path: Path) -> None:
    settings, run_dir = _home(tmp_path)
    own_artifacts = settings.artifacts_dir / "1"
    probes = {
        "another contributor's data": settings.data_dir / "alice" / "members.csv",
        "its own contributor's folder (it reads the worker's copy)":
            settings.data_dir / "mallory" / "members.csv",
        "the data folder": settings.data_dir,
        "another audit": settings.audits_dir / "other-audit" / "report.json",
        "the SQLite store": settings.home / "panoramia.db",
        "another contributor's artifacts": settings.artifacts_dir / "2" / "data",
        "a shared model": settings.models_dir / "shared" / "target.json",
        "write its run directory": run_dir / "report.json",
        "write its artifact store": own_artifacts / "stage",
        "write another audit": settings.audits_dir / "other-audit" / "x",
        "write /tmp": Path("/tmp") / f"panoramia-escape-{tmp_path.name}",
        "another process's command line": Path(f"/proc/{os.getpid()}/cmdline"),
        "another process's environment": Path(f"/proc/{os.getpid()}/environ"),
        "the list of processes": Path("/proc"),
        "its own status": Path("/proc/self/status"),
        "its own threads": Path("/proc/thread-self/stat"),
        "the machine's processors": Path("/proc/cpuinfo"),
    }  # fmt: skip
    command = launcher(
        audit_confinement(settings, run_dir, own_artifacts),
        [sys.executable, "-c", PROBE, json.dumps({k: str(v) for k, v in probes.items()})],
        chdir=run_dir,
    )
    result = subprocess.run(
        command, capture_output=True, text=True, cwd="/", timeout=120,
        env={"PATH": "/usr/bin:/bin", **private_folders(run_dir)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    allowed = {"a shared model", "write its run directory", "write its artifact store",
               "its own status", "its own threads", "the machine's processors"}  # fmt: skip
    assert outcome == {name: "allowed" if name in allowed else "refused" for name in probes}


def test_the_confinement_can_be_required(tmp_path: Path) -> None:
    settings, _ = _home(tmp_path)
    with pytest.raises(InputError, match="PANORAMIA_REQUIRE_SANDBOX=1"):
        replace(settings, sandbox=False, require_sandbox=True).check_sandbox()
    assert replace(settings, sandbox=False).check_sandbox().startswith("none: turned off")
    if landlock_abi():
        required = replace(settings, require_sandbox=True)
        assert required.check_sandbox().startswith(f"landlock ABI {landlock_abi()}; sockets")


def test_the_worker_never_follows_what_a_confined_child_planted(tmp_path: Path) -> None:
    """A child may leave links (or hard links) in its run directory for the unconfined worker
    to read or append to: the worker refuses them; and a module planted there never runs
    before the next attempt's confinement (the launcher starts with ``python -I`` from ``/``)."""
    from panoramia.service.worker.launch import open_log
    from panoramia.service.worker.record import read_own_file

    settings, run_dir = _home(tmp_path)
    secret = settings.data_dir / "alice" / "members.csv"
    (run_dir / "progress.json").symlink_to(secret)
    os.link(secret, run_dir / "report.json")
    (run_dir / "attempt-2.log").symlink_to(secret)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        read_own_file(run_dir / "progress.json")
    with pytest.raises(OSError, match="not a plain file of the audit's own"):
        read_own_file(run_dir / "report.json")
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        open_log(run_dir / "attempt-2.log")
    assert secret.read_text() == "alice's rows\n"
    (run_dir / "json.py").write_text("raise SystemExit('planted code ran')\n")
    command = launcher(audit_confinement(settings, run_dir, settings.artifacts_dir / "1"),
                       [sys.executable, "-c", "import os; print(os.getcwd())"],
                       chdir=run_dir)  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd="/", timeout=60,
                          env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    if landlock_abi():
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(run_dir)


@needs_landlock
def test_a_confined_child_reaches_no_tcp_port_and_signals_no_one(tmp_path: Path) -> None:
    settings, run_dir = _home(tmp_path)
    probe = (
        "import os, socket, sys\n"
        "try:\n    socket.socket().connect(('127.0.0.1', 6379)); print('connected')\n"
        "except PermissionError: print('refused')\n"
        "except OSError: print('closed')\n"
        f"try:\n    os.kill({os.getpid()}, 0); print('signalled')\n"
        "except PermissionError: print('no signal')\n"
    )
    command = launcher(audit_confinement(settings, run_dir, settings.artifacts_dir / "1"),
                       [sys.executable, "-c", probe], chdir=run_dir)  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd="/", timeout=60,
                          env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    network, signal = done.stdout.splitlines()
    assert network == ("refused" if landlock_abi() >= 4 else network)
    assert signal == ("no signal" if landlock_abi() >= 6 else signal)
