"""A compromised audit stays in its box by every channel, not only files and TCP (issue 68,
findings 1 and 2): a probe run under the very launcher and rules the worker gives a real
audit, on a SQLite and a PostgreSQL service, reaches no Unix socket (PostgreSQL's own, a
served one standing for Redis's, an abstract one), no TCP or UDP port, no io_uring, none of the
service's files and nothing the operator protects; an ``http`` target's audit reaches its one
port and nothing else; an audit child's stdin answers no question; and no transformers call
may run an upload's code."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from panoramia.sandbox import fully_confined, landlock_abi, launcher
from panoramia.service.worker.launch import audit_confinement, private_folders
from tests.service_support import settings_for

needs_both = pytest.mark.skipif(
    not fully_confined(), reason="this kernel or machine offers no Landlock or no libseccomp"
)
POSTGRES_SOCKET = Path("/var/run/postgresql/.s.PGSQL.5432")
PROBE = r"""
import ctypes, json, os, socket, sys
targets = json.loads(sys.argv[1])
results = {}

def attempt(name, action):
    try:
        action()
        results[name] = "reached"
    except PermissionError:
        results[name] = "refused"
    except OSError as error:
        results[name] = f"failed: {error.strerror}"

def unix(path):
    def action():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(path)
    return action

def tcp(port):
    def action():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
    return action

def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"PING\r\n", ("127.0.0.1", 6379))

def io_uring():
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    if libc.syscall(425, 8, params) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

def read(path):
    def action():
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").read(1)
    return action

for name, path in targets.get("unix", {}).items():
    attempt(name, unix(path))
for name, port in targets.get("tcp", {}).items():
    attempt(name, tcp(port))
attempt("UDP to Redis's port", udp)
attempt("io_uring", io_uring)
for name, path in targets.get("read", {}).items():
    attempt(name, read(path))
a, b = socket.socketpair()
a.send(b"x")
results["socketpair"] = "works" if b.recv(1) == b"x" else "broken"
print(json.dumps(results))
"""


class _Listener:
    """A Unix (path or abstract) or TCP socket served by this test: a probe that connects is
    accepted, so "reached" means reached."""

    def __init__(self, family: int, address: object):
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.bind(address)
        self.socket.listen(8)
        self.address = self.socket.getsockname()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            connection.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.socket.close()


def _probe(settings, run_dir: Path, targets: dict, request: dict | None = None) -> dict:  # type: ignore[no-untyped-def]
    rules = audit_confinement(settings, run_dir, settings.artifacts_dir / "1", request)
    command = launcher(rules, [sys.executable, "-c", PROBE, json.dumps(targets)], chdir=run_dir)
    done = subprocess.run(
        command, capture_output=True, text=True, cwd="/", timeout=120,
        stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", **private_folders(run_dir)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _home(tmp_path: Path, database_url: str):  # type: ignore[no-untyped-def]
    secrets = tmp_path / "opt" / "credentials"
    secrets.mkdir(parents=True)
    (secrets / "pgpass").write_text("127.0.0.1:5432:*:postgres:secret\n")
    settings = settings_for(tmp_path / "home", database_url, sandbox_protect=(secrets,))
    (settings.artifacts_dir / "2" / "data").mkdir(parents=True)
    (settings.models_dir / "shared").mkdir(parents=True)
    run_dir = settings.audits_dir / "mine"
    run_dir.mkdir(parents=True)
    return replace(settings), run_dir, secrets


@needs_both
def test_a_compromised_audit_reaches_no_socket_of_the_service(
    tmp_path: Path, database_url: str
) -> None:
    settings, run_dir, secrets = _home(tmp_path, database_url)
    served = _Listener(socket.AF_UNIX, str(tmp_path / "redis.sock"))  # Redis's, where it has one
    name = f"\0panoramia-test-{uuid.uuid4().hex}"
    abstract = _Listener(socket.AF_UNIX, name)
    unix = {"a served Unix socket (Redis's)": str(tmp_path / "redis.sock"),
            "an abstract Unix socket": name}  # fmt: skip
    if POSTGRES_SOCKET.exists():
        unix["PostgreSQL's Unix socket"] = str(POSTGRES_SOCKET)
    reads = {
        "another contributor's store": str(settings.artifacts_dir / "2" / "data"),
        "the service's home": str(settings.home),
        "a path the operator protects": str(secrets / "pgpass"),
        "PostgreSQL's settings": "/etc/postgresql",
    }
    if database_url.startswith("sqlite"):
        reads["the SQLite store"] = database_url.removeprefix("sqlite:///")
        Path(reads["the SQLite store"]).write_text("the store")
    try:
        outcome = _probe(settings, run_dir, {"unix": unix, "read": reads,
                                             "tcp": {"PostgreSQL's port": 5432,
                                                     "Redis's port": 6379}})  # fmt: skip
    finally:
        served.close()
        abstract.close()
    assert outcome.pop("socketpair") == "works"
    assert all(value in ("refused", "failed: No such file or directory")
               for value in outcome.values()), outcome  # fmt: skip
    assert outcome["a served Unix socket (Redis's)"] == "refused"
    assert outcome["PostgreSQL's port"] == outcome["UDP to Redis's port"] == "refused"
    assert outcome["io_uring"] == "refused"
    assert outcome["a path the operator protects"] == "refused"


@needs_both
def test_an_http_targets_audit_reaches_its_port_and_nothing_else(tmp_path: Path) -> None:
    settings, run_dir, _ = _home(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    target = _Listener(socket.AF_INET, ("127.0.0.1", 0))
    served = _Listener(socket.AF_UNIX, str(tmp_path / "redis.sock"))
    port = target.address[1]  # type: ignore[index]
    folder = settings.models_dir / "remote"
    folder.mkdir()
    (folder / "target.json").write_text(
        json.dumps({"format": "http", "url": f"http://127.0.0.1:{port}/predict"})
    )
    try:
        outcome = _probe(
            settings, run_dir,
            {"unix": {"a served Unix socket": str(tmp_path / "redis.sock")},
             "tcp": {"its target": port, "PostgreSQL's port": 5432}},
            request={"target": {"path": "remote"}},
        )  # fmt: skip
    finally:
        target.close()
        served.close()
    assert outcome["its target"] == "reached"
    assert outcome["PostgreSQL's port"] == "refused"
    assert outcome["a served Unix socket"] == "refused"


def test_the_confinement_says_both_layers_and_can_require_them(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    line = settings.check_sandbox()
    if fully_confined():
        assert line == f"landlock ABI {landlock_abi()}; sockets: seccomp (socketpair only)"
        assert replace(settings, require_sandbox=True).check_sandbox() == line
    elif landlock_abi():
        assert "sockets open" in line


def test_a_relative_protected_path_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from panoramia.errors import InputError
    from panoramia.service.settings import ServiceSettings

    monkeypatch.setenv("PANORAMIA_SANDBOX_PROTECT", "/etc/mine:secrets")
    with pytest.raises(InputError, match="PANORAMIA_SANDBOX_PROTECT: 'secrets' is not an absolute"):
        ServiceSettings.from_env()


def test_an_audit_childs_stdin_answers_nothing(tmp_path: Path) -> None:
    """Finding 2: the child inherited the server's stdin, so a library's "run the custom
    code? [y/N]" was answered by whatever the server's stdin held. Here the worker's own
    stdin says "y": the child reads nothing."""
    from panoramia.service.worker.run import _start_child

    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    reader, writer = os.pipe()
    os.write(writer, b"y\n")
    os.close(writer)
    saved = os.dup(0)
    os.dup2(reader, 0)
    try:
        process = _start_child(
            None, settings, "a1", "w", tmp_path, tmp_path / "child.log",  # type: ignore[arg-type]
            [sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"],
            {"PATH": "/usr/bin:/bin"}, False,
        )  # fmt: skip
        process.wait(timeout=60)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(reader)
    assert (tmp_path / "child.log").read_text().strip() == "''"


def test_a_tokenizer_folder_with_code_never_runs_it(tmp_path: Path) -> None:
    """A tokenizer folder whose ``auto_map`` names its own Python file: with a stdin that
    answers "y", transformers ran it before ``trust_remote_code=False`` was passed."""
    from panoramia.errors import InputError
    from panoramia.modalities.text.tokenizer import load_tokenizer

    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}})
    )
    reader, writer = os.pipe()
    os.write(writer, b"y\n")
    os.close(writer)
    saved_stdin = sys.stdin
    sys.stdin = os.fdopen(reader)
    try:
        with pytest.raises(InputError, match="custom code"):
            load_tokenizer(tmp_path)
    finally:
        sys.stdin.close()
        sys.stdin = saved_stdin
    assert not marker.exists()


def test_every_transformers_load_refuses_remote_code() -> None:
    """Each ``Auto*.from_pretrained`` call in the package passes ``trust_remote_code=False``
    (transformers asks on stdin, or follows its default, otherwise)."""
    import panoramia

    missing = []
    for path in Path(panoramia.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            if node.func.attr != "from_pretrained" or not (
                isinstance(owner, ast.Name) and owner.id.startswith("Auto")
            ):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            value = keywords.get("trust_remote_code")
            if not (isinstance(value, ast.Constant) and value.value is False):
                missing.append(f"{path.name}:{node.lineno} {owner.id}")
    assert missing == []
