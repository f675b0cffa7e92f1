"""Attacks and limits that need an audit to run or a server process: a model manifest naming a
callable, the per-audit wall-clock limit, SIGTERM, the service's start-up checks, tokens.

Audits run for real (the local pool; tiny configs), servers as ``panoramia serve`` processes.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import httpx
import redis

from tests.conftest import TINY_AUDIT
from tests.service_support import (
    REDIS_URL,
    audit_processes,
    free_port,
    healthy,
    live_service,
    poll,
    redis_database,
    report_document_for_test,
    settings_for,
    wait_ended,
    wait_for,
)

BIN = Path(sys.executable).parent
BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"},
        "overrides": TINY_AUDIT}  # fmt: skip


def test_a_manifest_naming_a_callable_runs_nothing_in_the_worker(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}",
                            heartbeat_s=0.5)  # fmt: skip
    model = settings.models_dir / "evil"
    model.mkdir(parents=True)
    (model / "weights.safetensors").write_bytes(b"not even weights")
    (model / "target.json").write_text(json.dumps({
        "format": "torch-safetensors", "modality": "image", "module": "subprocess:Popen",
        "kwargs": {"args": f"touch {marker}", "shell": True}, "weights": "weights.safetensors",
        "normalization": {"mean": [0.5], "std": [0.5]},
    }))  # fmt: skip
    body = {"model": {"name": "shared"}, "target": {"path": "evil"},
            "data": {"source": "digits"}, "overrides": ["data.pool_size=500"]}  # fmt: skip
    with live_service(settings) as service, service.client(service.token("mallory")) as mallory:
        response = mallory.post("/v1/audits", json=body)
        assert response.status_code == 202, response.text
        done = wait_ended(mallory, response.json()["id"], timeout=180)
    assert done["status"] == "failed"
    assert "'subprocess' is not trusted" in done["error"]
    assert not marker.exists()


def test_an_audit_past_the_wall_clock_limit_is_stopped_and_failed(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}",
                            heartbeat_s=0.5)  # fmt: skip
    settings = replace(settings, limits=replace(settings.limits, audit_timeout_s=2))
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=BODY).json()["id"]
        done = wait_ended(alice, audit_id, timeout=60)
    assert done["status"] == "failed"
    assert "PANORAMIA_AUDIT_TIMEOUT_S" in done["error"]
    assert done["timings"]["run_s"] < 20
    assert not audit_processes(audit_id)


def _environment(tmp_path: Path, **extra: str) -> dict:
    return (
        os.environ
        | {
            "PANORAMIA_HOME": str(tmp_path / "home"),
            "PANORAMIA_DATABASE_URL": f"sqlite:///{tmp_path / 'home' / 'panoramia.db'}",
            "PANORAMIA_HEARTBEAT_S": "0.5",
            "PANORAMIA_STALE_AFTER_S": "600",
        }
        | extra
    )


def _cli(*arguments: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "panoramia"), *arguments], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_sigterm_requeues_the_servers_running_audits_at_once(tmp_path: Path) -> None:
    """``panoramia serve`` gets SIGTERM mid-audit: the audit is stopped and queued again (not
    left running until the stale timeout), and what the service wrote is its user's only."""
    env = _environment(tmp_path)
    token = _cli("tokens", "create", "--contributor", "alice", env=env).stdout.strip()
    port = free_port()
    log = (tmp_path / "serve.log").open("ab")
    server = subprocess.Popen([str(BIN / "panoramia"), "serve", "--port", str(port)], env=env,
                              stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    try:
        wait_for(lambda: healthy(client), timeout=60)
        audit_id = client.post("/v1/audits", json=BODY).json()["id"]
        wait_for(lambda: poll(client, audit_id)["progress"].get("done", 0) >= 2, timeout=120)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
        client.close()
        log.close()
    from panoramia.store import ReportStore, make_engine

    store = ReportStore(make_engine(env["PANORAMIA_DATABASE_URL"]))
    audit = store.get_audit(None, audit_id)
    assert (audit.status, audit.error) == ("queued", "re-queued: the worker pool stopped")
    assert not audit_processes(audit_id)
    home = tmp_path / "home"
    for path in [home / "panoramia.db", *(home / "audits").rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_the_service_refuses_to_start_on_bad_settings(tmp_path: Path) -> None:
    for variable, value in (("PANORAMIA_RATE_LIMIT", "lots"), ("PANORAMIA_MAX_EPOCHS", "-1"),
                            ("PANORAMIA_TRUSTED_MODULES", "ok,not a module")):  # fmt: skip
        result = _cli("serve", "--port", str(free_port()), env=_environment(tmp_path, **{
            variable: value}))  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert variable in result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    several = _cli("serve", "--workers", "2", env=_environment(tmp_path))
    assert several.returncode == 2
    assert "PANORAMIA_QUEUE=celery" in several.stderr


def test_several_server_processes_share_one_sqlite_store(tmp_path: Path) -> None:
    broker = f"{REDIS_URL}/{redis_database(0)}"
    redis.Redis.from_url(broker).flushdb()
    env = _environment(tmp_path, PANORAMIA_QUEUE="celery", PANORAMIA_REDIS_URL=broker,
                       PANORAMIA_RATE_LIMIT="100000/minute")  # fmt: skip
    tokens = [_cli("tokens", "create", "--contributor", f"c{i}", env=env).stdout.strip()
              for i in range(4)]  # fmt: skip
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "panoramia"), "serve", "--port", str(port), "--workers", "2"], env=env,
        stdout=(tmp_path / "serve.log").open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    codes: list[int] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as probe:
            wait_for(lambda: healthy(probe), timeout=90)
        document = report_document_for_test()

        def upload(number: int) -> None:
            headers = {"Authorization": f"Bearer {tokens[number % 4]}"}
            body = {"model": {"name": "m"}, "report": document}
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                              timeout=120) as client:  # fmt: skip
                codes.append(client.post("/v1/reports", json=body).status_code)

        threads = [threading.Thread(target=upload, args=(n,)) for n in range(60)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        redis.Redis.from_url(broker).flushdb()
    assert codes == [201] * 60


def test_tokens_list_and_revoke(tmp_path: Path) -> None:
    env = _environment(tmp_path)
    created = _cli("tokens", "create", "--contributor", "alice", "--expires-in-days", "30",
                   env=env)  # fmt: skip
    assert created.returncode == 0
    assert created.stdout.startswith("pan_")
    assert _cli("tokens", "create", "--contributor", "bob", env=env).returncode == 0
    assert _cli("tokens", "revoke", "--contributor", "bob", env=env).returncode == 0
    listed = json.loads(_cli("tokens", "list", "--json", env=env).stdout)
    states = {row["contributor"]: (row["state"], bool(row["expires_at"])) for row in listed}
    assert states == {"alice": ("active", True), "bob": ("revoked", False)}
    assert "pan_" not in _cli("tokens", "list", env=env).stdout
    unknown = _cli("tokens", "revoke", "--contributor", "carol", env=env)
    assert unknown.returncode == 2
    assert "carol" in unknown.stderr
    bad = _cli("tokens", "create", "--contributor", "d", "--expires-in-days", "-1", env=env)
    assert bad.returncode == 2
    assert "--expires-in-days" in bad.stderr
