"""Helpers for the service tests: real databases, a live uvicorn server, real report documents."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx
import numpy as np
import uvicorn
from sqlalchemy import create_engine, text

from panoramia.measure import measure
from panoramia.report.document import report_document
from panoramia.service.api.app import create_app
from panoramia.service.server import running_service
from panoramia.service.settings import ServiceSettings
from panoramia.store import ReportStore
from tests.conftest import simulated_scores

POSTGRES_URL = os.environ.get(
    "PANORAMIA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("PANORAMIA_TEST_REDIS_URL", "redis://127.0.0.1:6379")
REDIS_SLOTS = 4
"""Redis databases each test process may use (slots 0–3)."""
TLS = ssl.create_default_context()
"""One TLS context for every test client (httpx builds and loads one per client otherwise,
~20 ms each; the service under test speaks plain HTTP on loopback)."""
MAX_WORKERS = 3
"""xdist workers with databases of their own (4–15; database 0, a local stack's, is never used)."""


def redis_database(slot: int) -> int:
    """The Redis database of ``slot`` for this test process: 12–15 for a serial run or xdist
    worker gw0, 8–11 for gw1, 4–7 for gw2 (a test's queue is never flushed by another
    worker's test)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    if not 0 <= slot < REDIS_SLOTS:
        raise ValueError(f"Redis slot {slot} is not in 0..{REDIS_SLOTS - 1}")
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > MAX_WORKERS:
        raise RuntimeError(f"run the service tests with at most {MAX_WORKERS} xdist workers")
    # A worker that replaces a crashed one is numbered past the count (gw3 of three): it takes
    # the slots of the one it replaces, whose tests have ended.
    index = int(worker.removeprefix("gw") or 0) % MAX_WORKERS
    return 16 - REDIS_SLOTS * (index + 1) + slot


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A fresh schema in the local PostgreSQL; yields a URL whose search_path is that schema."""
    schema = f"panoramia_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class LiveService:
    """A running service: its base URL, store and settings."""

    url: str
    store: ReportStore
    settings: ServiceSettings
    tokens: dict[str, str] = field(default_factory=dict)
    """Tokens issued so far, by contributor."""
    app: object = None
    """The app it serves (:func:`live_service`'s)."""

    def client(self, token: str | None, **options: object) -> httpx.Client:
        """A client of the service with ``token`` (none: anonymous); ``options`` go to httpx."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        options = {"timeout": 60} | options
        return httpx.Client(base_url=self.url, headers=headers, verify=TLS, **options)  # type: ignore[arg-type]

    def token(self, name: str, *, admin: bool = False) -> str:
        """Contributor ``name``'s token: created on first use, the same one afterwards."""
        if name not in self.tokens:
            self.tokens[name] = self.store.create_contributor(name, admin=admin)
        return self.tokens[name]


class _PromptServer(uvicorn.Server):
    """uvicorn's server, looking at ``should_exit`` every 10 ms instead of every 100 ms."""

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            await asyncio.sleep(0.01)


@contextmanager
def live_service(settings: ServiceSettings) -> Iterator[LiveService]:
    """The real app under uvicorn on a loopback port, in a thread of this process. On exit
    the server stops listening and finishes its requests before its store and queue close;
    its thread is not joined (see the ``finally``)."""
    with running_service(settings) as (store, queue):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        app = create_app(settings, store, queue)
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        server = _PromptServer(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        try:
            yield LiveService(f"http://127.0.0.1:{sock.getsockname()[1]}", store, settings, app=app)
        finally:
            server.should_exit = True
            # Wait until it has stopped listening and finished its connections and tasks
            # (~10-100 ms), not for its thread: that ends up to ~10 s later where a request
            # ran in AnyIO's worker threads (its loop ends once they have idled that long),
            # and is a daemon, so the test process does not wait for it at exit either.
            deadline = time.monotonic() + 5
            while (
                thread.is_alive()
                and time.monotonic() < deadline
                and (
                    sock.fileno() != -1
                    or server.server_state.connections
                    or server.server_state.tasks
                )
            ):
                time.sleep(0.005)


@contextmanager
def queued_only_service(
    home: Path, database_url: str, queue_db: int, **changes: object
) -> Iterator[LiveService]:
    """A live service whose audits go to a Celery queue in Redis database ``queue_db`` with no
    worker listening (they stay queued); the queue is emptied before and after."""
    import redis

    broker = f"{REDIS_URL}/{queue_db}"
    redis.Redis.from_url(broker).flushdb()
    settings = settings_for(home, database_url, queue="celery", redis_url=broker, **changes)
    try:
        with live_service(settings) as running:
            yield running
    finally:
        redis.Redis.from_url(broker).flushdb()


def settings_for(home: Path, database_url: str, **changes: object) -> ServiceSettings:
    return replace(ServiceSettings(home=home, database_url=database_url), **changes)


def report_document_for_test(seed: int = 0, *, shift: float = 1.0) -> dict:
    """A real report document of the measurement of simulated scores, as schema 1.3 wrote it
    (no in-audit null: its verdict follows the earlier rule, docs/SPEC.md §3.1)."""
    rng = np.random.default_rng(seed)
    membership, attack = simulated_scores(rng, 400, shift=shift)
    baseline = np.clip(attack + rng.normal(0, 0.05, attack.size), 0, 1)
    result = measure(membership, baseline_scores=baseline, attack_scores=attack, seed=seed)
    return report_document(
        modality="tabular", measurement=result, o1=None, rmrn=None, seed=seed,
        config={"source": "test"}, timings={}, target={"name": "test"}, data={},
        distinguishers={},
    ) | {"schema_version": "1.3"}  # fmt: skip


def poll(client: httpx.Client, audit_id: str) -> dict:
    """The audit's current view."""
    return client.get(f"/v1/audits/{audit_id}").json()


def wait_ended(client: httpx.Client, audit_id: str, *, timeout: float) -> dict:
    """The audit's view once it has succeeded or failed (AssertionError after ``timeout`` s)."""
    return wait_for(
        lambda: (a := poll(client, audit_id))["status"] in ("succeeded", "failed") and a,
        timeout=timeout,
    )


def healthy(client: httpx.Client) -> bool:
    """Whether the server answers its health check (False while it starts or stops)."""
    try:
        return client.get("/healthz").status_code == 200
    except httpx.HTTPError:
        return False


def audit_processes(audit_id: str) -> list[str]:
    """Pids of the processes that still run audit ``audit_id`` (its run directory)."""
    import subprocess

    found = subprocess.run(["pgrep", "-f", f"audits/{audit_id}"], capture_output=True, text=True)
    return found.stdout.split()


def wait_for(predicate, *, timeout: float, every: float = 0.25):  # type: ignore[no-untyped-def]
    """Poll ``predicate()`` until it returns a truthy value; that value, or AssertionError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s")


BIN = Path(sys.executable).parent
"""Where the installed console scripts (``panoramia``, ``panoramia-audit``) are."""


def start_detached(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    """``command`` in a session of its own (so that its whole group can be killed), its
    output appended to ``log``."""
    with log.open("ab") as output:
        return subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL to the process's whole group, then reap it."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def served_by_hand(env: dict, contributor: str = "alice") -> tuple[list[str], httpx.Client]:
    """For a ``panoramia serve`` the test starts, stops and restarts itself: the database
    upgraded, ``contributor``'s token created, and (the serve command on a free port, a
    client of it with that token)."""
    subprocess.run([BIN / "panoramia", "db", "upgrade"], env=env, check=True)
    create = [BIN / "panoramia", "tokens", "create", "--contributor", contributor]
    token = subprocess.run(create, env=env, check=True, capture_output=True, text=True)
    port = free_port()
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120,
                          headers={"Authorization": f"Bearer {token.stdout.strip()}"})  # fmt: skip
    return [str(BIN / "panoramia"), "serve", "--port", str(port)], client
