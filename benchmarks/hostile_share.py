"""A hostile contributor against a live service: does everyone keep a fair share?

Starts ``panoramia serve`` (and, with ``--queue celery``, one ``panoramia worker``) in
processes of their own on a fresh home and database, with one audit at a time
(``PANORAMIA_WORKERS=1``), then replays what mallory tried (issue 41) and prints each request
with its answer:

1. **Filling the database**: a 15 MB ``declared`` and one with 300,000 keys.
2. **Bad choices**: ``generator.synthesizer=nope``, ``audit.attack_side=evil``,
   ``audit.baseline_side=bogus+x``, reference models on the attack's side alone, two renamed
   settings, a split past 1 and a DP-SGD claim the accounting cannot take: answered at the
   door, and how fast.
3. **Pricing**: eight 4096-wide layers for 500 epochs, then mallory's usage.
4. **Probing by id**: alice stores a report with a 15 MB page; mallory asks for it by id and
   for an unknown id, interleaved (``--probes`` each), on ``/v1/reports/{id}``,
   ``/v1/reports/{id}/html`` and the console's ``/console/reports/{id}/page``: medians.
5. **An image file that would expand**: a 1.5 MB ``.npz`` declaring 20,000 × 3 × 160 × 160
   bytes is read as an audit would, in a process of its own: seconds and peak RSS.
6. **Queue wait** (the benchmark's figure): alice's tiny audit alone, then alice's tiny audit
   submitted after mallory queued 4 heavier ones. Prints how long alice's audit waited
   (submission → start) and how many of mallory's audits started before it. The remaining
   audits are then cancelled.

    .venv/bin/python benchmarks/hostile_share.py [--database-url URL] [--queue local|celery]
        [--redis-url redis://127.0.0.1:6379/3] [--mallory-epochs 60] [--probes 150]

Defaults: SQLite and the local pool. ``--database-url
postgresql+psycopg://postgres@127.0.0.1:5432/test`` runs in a fresh schema of that database.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import numpy as np
from serving import free_port, wait_healthy
from sqlalchemy import create_engine, text

from panoramia.store import ReportStore, make_engine, upgrade

BIN = Path(sys.executable).parent
TINY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"}}
"""alice's audit: the demo's tabular audit (10-epoch MLP)."""


@contextmanager
def database(url: str | None, home: Path):  # type: ignore[no-untyped-def]
    """A fresh database: a SQLite file in ``home``, or a new schema of PostgreSQL ``url``."""
    if url is None:
        yield f"sqlite:///{home / 'service.db'}"
        return
    schema = f"panoramia_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def timed(call):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    response = call()
    return response, time.perf_counter() - started


def shown(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:160]
    if isinstance(detail, list):
        detail = f"at {detail[0].get('loc')}: {detail[0].get('msg')}"
    return str(detail)[:200]


def replay_flood(mallory: httpx.Client) -> None:
    print("\n## 1. Filling the database through `declared`")
    for label, declared in (
        ("15 MB string", {"notes": "x" * 15_000_000}),
        ("300,000 keys", {f"k{i}": i for i in range(300_000)}),
    ):
        body = TINY | {"model": TINY["model"] | {"declared": declared}}
        response, seconds = timed(lambda body=body: mallory.post("/v1/audits", json=body))
        print(f"- {label}: {response.status_code} in {seconds:.2f} s: {shown(response)}")
    print(f"- mallory's usage afterwards: {mallory.get('/v1/usage').json()}")


def replay_choices(mallory: httpx.Client) -> None:
    print("\n## 2. Bad choices")
    for override in (
        "generator.synthesizer=nope",
        "audit.attack_side=evil",
        "audit.baseline_side=bogus+x",
        "audit.attack_side=target+helper+reference_models",  # without its baseline side
        "audit.reference.rmrn=false",  # renamed
        "helper=reference",  # renamed
        "data.split.generator=0.9",  # the split's fractions past 1
    ):
        body = TINY | {"overrides": [override]}
        response, seconds = timed(lambda body=body: mallory.post("/v1/audits", json=body))
        print(f"- `{override}`: {response.status_code} in {seconds:.3f} s: {shown(response)}")
    claim = {"kind": "dpsgd", "neighbouring": "add_remove", "phases": [
        {"noise_multiplier": 0.01, "sample_rate": 0.01, "steps": 100}]}  # fmt: skip
    body = TINY | {"model": TINY["model"] | {"claim": claim}}
    response, seconds = timed(lambda: mallory.post("/v1/audits", json=body))
    print(f"- a DP-SGD claim with σ = 0.01: {response.status_code} in {seconds:.3f} s: "
          f"{shown(response)}")  # fmt: skip


def replay_pricing(mallory: httpx.Client) -> None:
    print("\n## 3. An audit priced past the budget")
    wide = "target.hidden=[" + ",".join(["4096"] * 8) + "]"
    body = TINY | {"overrides": [wide, "target.epochs=500"]}
    response, seconds = timed(lambda: mallory.post("/v1/audits", json=body))
    print(f"- eight 4096-wide layers, 500 epochs: {response.status_code} in {seconds:.3f} s: "
          f"{shown(response)}")  # fmt: skip


def report_document() -> dict:
    from panoramia.measure import measure
    from panoramia.report.document import report_document as document

    rng = np.random.default_rng(0)
    membership = rng.integers(0, 2, 2000)
    attack = 1 / (1 + np.exp(-(rng.normal(size=2000) + 0.8 * membership)))
    baseline = np.clip(attack + rng.normal(0, 0.1, 2000), 0, 1)
    result = measure(membership, baseline_scores=baseline, attack_scores=attack, seed=0)
    return document(modality="tabular", measurement=result, o1=None, rmrn=None, seed=0,
                    config={}, timings={}, target={"name": "probe"}, data={},
                    distinguishers={})  # fmt: skip


def console_client(url: str, token: str) -> httpx.Client:
    import re

    client = httpx.Client(base_url=url, follow_redirects=False, timeout=60)
    form = client.get("/console/login").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
    signed = client.post("/console/login", content=f"csrf={csrf}&token={token}",
                         headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert signed.status_code == 303, signed.text
    return client


def replay_probe(url: str, alice: httpx.Client, mallory: httpx.Client, token: str,
                 probes: int) -> None:  # fmt: skip
    print("\n## 4. Probing another contributor's report by id")
    body = {"model": {"name": "private", "version": "1"}, "report": report_document(),
            "html": "<p>" + "y" * 15_000_000 + "</p>"}  # fmt: skip
    stored = alice.post("/v1/reports", json=body)
    assert stored.status_code == 201, stored.text
    theirs, nobodys = stored.json()["id"], str(uuid.uuid4())
    console = console_client(url, token)
    routes = (
        ("GET /v1/reports/{id}", mallory, "/v1/reports/{}"),
        ("GET /v1/reports/{id}/html", mallory, "/v1/reports/{}/html"),
        ("GET /console/reports/{id}/page", console, "/console/reports/{}/page"),
    )
    print(f"| route | alice's id (ms, median of {probes}) | unknown id (ms) | answers |")
    print("|---|---|---|---|")
    for label, client, route in routes:
        times: dict[str, list[float]] = {theirs: [], nobodys: []}
        codes = set()
        for _ in range(probes):
            for report_id in (theirs, nobodys):
                address = route.format(report_id)
                response, seconds = timed(lambda c=client, a=address: c.get(a))
                times[report_id].append(seconds * 1000)
                codes.add(response.status_code)
        print(f"| {label} | {statistics.median(times[theirs]):.2f} | "
              f"{statistics.median(times[nobodys]):.2f} | {sorted(codes)} |")  # fmt: skip
    console.close()


def expanding_npz(path: Path) -> None:
    """A small ``.npz`` whose ``images`` header declares 20,000 × 3 × 160 × 160 uint8 (the
    zero bytes it holds are streamed through deflate, never held)."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1,), np.uint8))
    header["shape"] = (20000, 3, 160, 160)
    chunk = b"\0" * 2**24
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("images.npy", "w", force_zip64=True) as images:
            np.lib.format.write_array_header_1_0(images, header)
            left = 20000 * 3 * 160 * 160
            while left:
                images.write(chunk[: min(left, len(chunk))])
                left -= min(left, len(chunk))
        labels = io.BytesIO()
        np.save(labels, np.zeros(20000, np.int64))
        archive.writestr("labels.npy", labels.getvalue())


READ_AS_AN_AUDIT = """
import resource, sys, time
from panoramia.modalities.image.images import read_npz
from panoramia.errors import InputError
started = time.perf_counter()
try:
    read_npz(sys.argv[1])
    outcome = "read"
except InputError as error:
    outcome = str(error)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{seconds:.2f} s, peak RSS {peak:.0f} MB: {outcome}")
"""


def replay_npz(home: Path) -> None:
    print("\n## 5. An image file that would expand")
    path = home / "data" / "mallory" / "huge.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    expanding_npz(path)
    done = subprocess.run([sys.executable, "-c", READ_AS_AN_AUDIT, str(path)],
                          capture_output=True, text=True)  # fmt: skip
    print(f"- {path.stat().st_size / 2**20:.1f} MB file, read by a process of its own (its "
          f"imports included): {(done.stdout or done.stderr).strip()[-300:]}")  # fmt: skip


def wait_for_start(client: httpx.Client, audit_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.get(f"/v1/audits/{audit_id}").json()
        if found["status"] != "queued":
            return found
        time.sleep(0.5)
    raise TimeoutError(f"audit {audit_id} still queued after {timeout:.0f} s")


def queue_wait(alice: httpx.Client, mallory: httpx.Client, epochs: int, timeout: float) -> None:
    print("\n## 6. alice's queue wait, alone and behind mallory's 4 queued audits")
    submitted = time.monotonic()
    own = alice.post("/v1/audits", json=TINY)
    assert own.status_code == 202, own.text
    wait_for_start(alice, own.json()["id"], timeout)
    alone = time.monotonic() - submitted
    while alice.get(f"/v1/audits/{own.json()['id']}").json()["status"] == "running":
        time.sleep(1)  # the pool is hers until her audit ends
    heavy = TINY | {"model": {"name": "flood", "version": "1"},
                    "overrides": [f"target.epochs={epochs}"]}  # fmt: skip
    mallorys = []
    for _ in range(4):
        response = mallory.post("/v1/audits", json=heavy)
        assert response.status_code == 202, response.text
        mallorys.append(response.json()["id"])
    time.sleep(2)  # the first of hers starts
    submitted = time.monotonic()
    own = alice.post("/v1/audits", json=TINY | {"model": {"name": "census", "version": "2"}})
    assert own.status_code == 202, own.text
    found = wait_for_start(alice, own.json()["id"], timeout)
    loaded = time.monotonic() - submitted
    ahead = [
        m for m in mallorys
        if (a := mallory.get(f"/v1/audits/{m}").json())["started_at"] is not None
        and a["started_at"] <= found["started_at"]
    ]  # fmt: skip
    print("| alice's tiny audit | waited (s) | mallory's audits started before it |\n|---|---|---|")
    print(f"| alone | {alone:.1f} | — |")
    print(f"| behind mallory's 4 ({epochs}-epoch targets) | {loaded:.1f} | {len(ahead)} of 4 |")
    for audit_id in [*mallorys, own.json()["id"]]:
        (alice if audit_id == own.json()["id"] else mallory).delete(f"/v1/audits/{audit_id}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--queue", choices=["local", "celery"], default="local")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--mallory-epochs", type=int, default=60)
    parser.add_argument("--probes", type=int, default=150)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--skip-queue", action="store_true", help="steps 1-5 only")
    args = parser.parse_args()

    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hostile-")))
        url = stack.enter_context(database(args.database_url, home))
        engine = make_engine(url)
        upgrade(engine)
        store = ReportStore(engine)
        tokens = {name: store.create_contributor(name) for name in ("alice", "mallory")}
        engine.dispose()
        port = free_port()
        env = os.environ | {
            "PANORAMIA_HOME": str(home), "PANORAMIA_DATABASE_URL": url,
            "PANORAMIA_QUEUE": args.queue, "PANORAMIA_REDIS_URL": args.redis_url,
            "PANORAMIA_WORKERS": "1", "PANORAMIA_RATE_LIMIT": "1000/minute",
            "HF_HUB_OFFLINE": "1",
        }  # fmt: skip
        if args.queue == "celery":
            import redis

            redis.Redis.from_url(args.redis_url).flushdb()
        server = start([str(BIN / "panoramia"), "serve", "--port", str(port)], env,
                       home / "server.log")  # fmt: skip
        stack.callback(server.terminate)
        if args.queue == "celery":
            worker = start([str(BIN / "panoramia"), "worker"], env, home / "worker.log")
            stack.callback(worker.terminate)
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base)
        backend = "PostgreSQL" if args.database_url else "SQLite"
        print(f"# Hostile contributor replay: {backend}, {args.queue} queue, one audit at a time")
        headers = {name: {"authorization": f"Bearer {t}"} for name, t in tokens.items()}
        alice = stack.enter_context(httpx.Client(base_url=base, headers=headers["alice"],
                                                 timeout=120))  # fmt: skip
        mallory = stack.enter_context(httpx.Client(base_url=base, headers=headers["mallory"],
                                                   timeout=120))  # fmt: skip
        replay_flood(mallory)
        replay_choices(mallory)
        replay_pricing(mallory)
        replay_probe(base, alice, mallory, tokens["mallory"], args.probes)
        replay_npz(home)
        if not args.skip_queue:
            queue_wait(alice, mallory, args.mallory_epochs, args.timeout)


if __name__ == "__main__":
    main()
