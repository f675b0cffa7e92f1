"""Query latency of the report service under concurrent clients, on PostgreSQL.

Fills a fresh PostgreSQL schema with ``--reports`` real report documents (measurements of
simulated scores, ~20 KB each, with their HTML pages) spread over ``--contributors``
contributors and ``--models`` models, starts ``panoramia serve`` in its own process, and runs
``--clients`` concurrent clients (asyncio + httpx, one process) that each send queries back to
back: the latest report of a model, a page of a model's reports, one report's JSON. Prints
p50/p90/p99/max latency, throughput and errors. Goal (issue 4): 100 clients, 10,000 reports,
p99 <= 50 ms, 0 errors.

    .venv/bin/python benchmarks/service_latency.py [--reports 10000] [--clients 100]
        [--requests 20000] [--database-url postgresql+psycopg://postgres@127.0.0.1:5432/test]

``--server-workers N`` runs ``panoramia serve --workers N`` (N > 1 with the Celery queue over
``--redis-url``; no audit is submitted, so no Celery worker is needed).

``--think-ms`` adds a pause between one client's requests (clients that read, then act). With
no pause, 100 clients saturate this 2-core machine, where the load generator needs more CPU per
request than the server: latencies then measure the queue, not the service.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import create_engine, insert, text

from panoramia.measure import measure
from panoramia.report.document import report_document
from panoramia.store import ReportStore, make_engine, upgrade
from panoramia.store.repository import ModelRef, utcnow
from panoramia.store.tables import Report, ReportPage

BIN = Path(sys.executable).parent


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` and its child processes (Linux /proc; the
    server's worker processes when it runs several)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return own + sum(cpu_seconds(int(child)) for child in children)


def documents(count: int) -> list[dict]:
    """``count`` distinct real report documents (one measurement per seed, reused cyclically)."""
    rng = np.random.default_rng(0)
    made = []
    for seed in range(min(count, 50)):
        membership = rng.integers(0, 2, 2000)
        attack = 1 / (1 + np.exp(-(rng.normal(size=2000) + 0.8 * membership)))
        baseline = np.clip(attack + rng.normal(0, 0.1, 2000), 0, 1)
        result = measure(membership, baseline_scores=baseline, attack_scores=attack, seed=seed)
        made.append(report_document(
            modality="tabular", measurement=result, o1=None, rmrn=None, seed=seed,
            config={"benchmark": True}, timings={}, target={"name": "bench"}, data={},
            distinguishers={},
        ))  # fmt: skip
    return [made[i % len(made)] for i in range(count)]


def fill(store: ReportStore, *, reports: int, contributors: int, models: int) -> tuple:
    """Tokens and model names, after inserting the reports in batches."""
    tokens = [store.create_contributor(f"contributor-{i}") for i in range(contributors)]
    principals = [store.authenticate(t) for t in tokens]
    with store.writes.begin() as session:  # each contributor names its own models
        rows = {
            (owner, i): store._model(session, ModelRef(f"model-{i}", "1"), p.contributor_id)
            for owner, p in enumerate(principals)
            for i in range(models)
        }
        session.flush()
        model_ids = {key: row.id for key, row in rows.items()}
    docs = documents(reports)
    page = "<html><body>" + "x" * 20_000 + "</body></html>"
    for start in range(0, reports, 1000):
        report_rows, page_rows = [], []
        for i in range(start, min(reports, start + 1000)):
            document = docs[i]
            report_id = str(uuid.uuid4())
            report_rows.append({
                "id": report_id, "model_id": model_ids[(i % contributors, i % models)],
                "contributor_id": principals[i % contributors].contributor_id,
                "audit_id": None, "modality": "tabular", "c_lb": document["c_lb"],
                "c_plus_eps_lb": document["c_plus_eps_lb"], "eps_tilde": document["eps_tilde"],
                "created_at": utcnow(), "artifact_location": None, "document": document,
            })  # fmt: skip
            page_rows.append({"report_id": report_id, "html": page})
        with store.writes.begin() as session:
            session.execute(insert(Report), report_rows)
            session.execute(insert(ReportPage), page_rows)
    with store.sessions() as session:
        ids = [r for (r,) in session.execute(text("SELECT id FROM reports"))]
        owners = dict(session.execute(text("SELECT id, contributor_id FROM reports")).all())
        owned_models = session.execute(
            text("SELECT DISTINCT r.contributor_id, m.name FROM reports r JOIN models m "
                 "ON m.id = r.model_id")
        ).all()  # fmt: skip
    by_owner: dict[int, list[str]] = {}
    for report_id in ids:
        by_owner.setdefault(owners[report_id], []).append(report_id)
    models_of: dict[int, list[str]] = {}
    for owner, name in owned_models:
        models_of.setdefault(owner, []).append(name)
    return tokens, principals, models_of, by_owner


async def client_loop(client, token, models, own_reports, count, think, latencies, errors):  # type: ignore[no-untyped-def]
    """One client: ``count`` queries with its token, pausing ~``think`` s between them."""
    headers = {"Authorization": f"Bearer {token}"}
    if think:  # independent clients: their first requests spread over one pause
        await asyncio.sleep(random.uniform(0, think))
    for _ in range(count):
        kind = random.random()
        if kind < 0.4:
            path, params = f"/v1/reports/{random.choice(own_reports)}", None
        elif kind < 0.7:
            path, params = f"/v1/models/{random.choice(models)}/reports", {"latest": "true"}
        else:
            path, params = f"/v1/models/{random.choice(models)}/reports", {"limit": "20"}
        started = time.perf_counter()
        try:
            response = await client.get(path, params=params, headers=headers)
            if response.status_code != 200:
                errors.append(f"{path} {response.status_code}")
        except httpx.HTTPError as error:
            errors.append(f"{path} {type(error).__name__}")
        latencies.append(time.perf_counter() - started)
        if think:
            await asyncio.sleep(random.expovariate(1 / think))


async def load(url, tokens, principals, models, by_owner, args):  # type: ignore[no-untyped-def]
    """Run ``args.clients`` clients over one connection pool (a connection each)."""
    latencies: list[float] = []
    errors: list[str] = []
    per_client = args.requests // args.clients
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        tasks = []
        for i in range(args.clients):
            owner = principals[i % len(tokens)].contributor_id
            tasks.append(client_loop(client, tokens[i % len(tokens)], models[owner],
                                     by_owner[owner], per_client, args.think_ms / 1000,
                                     latencies, errors))  # fmt: skip
        started = time.perf_counter()
        await asyncio.gather(*tasks)
    return latencies, errors, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url",
                        default="postgresql+psycopg://postgres@127.0.0.1:5432/test")  # fmt: skip
    parser.add_argument("--reports", type=int, default=10_000)
    parser.add_argument("--contributors", type=int, default=10)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--think-ms", type=float, default=0.0)
    parser.add_argument(
        "--server-workers",
        type=int,
        default=1,
        help="panoramia serve --workers (more than 1 uses the Celery queue)",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    args = parser.parse_args()

    schema = f"panoramia_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    url = f"{args.database_url}?options=-csearch_path%3D{schema}"
    server = None
    try:
        engine = make_engine(url)
        upgrade(engine)
        store = ReportStore(engine)
        started = time.perf_counter()
        tokens, principals, models, by_owner = fill(
            store, reports=args.reports, contributors=args.contributors, models=args.models
        )
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            connection.commit()
        print(f"stored {args.reports} reports in {time.perf_counter() - started:.1f} s")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = os.environ | {"PANORAMIA_DATABASE_URL": url, "PANORAMIA_HOME": f"/tmp/{schema}"}
        command = [str(BIN / "panoramia"), "serve", "--port", str(port),
                   "--workers", str(args.server_workers)]  # fmt: skip
        if args.server_workers > 1:
            env |= {"PANORAMIA_QUEUE": "celery", "PANORAMIA_REDIS_URL": args.redis_url}
        server = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(f"{base}/healthz").raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        asyncio.run(
            load(
                base,
                tokens,
                principals,
                models,
                by_owner,
                argparse.Namespace(**{**vars(args), "requests": 500}),
            )
        )  # warm-up
        server_cpu, client_cpu = cpu_seconds(server.pid), time.process_time()
        latencies, errors, seconds = asyncio.run(
            load(base, tokens, principals, models, by_owner, args)
        )
        ms = np.array(latencies) * 1000
        print(f"{len(ms)} requests from {args.clients} clients (think {args.think_ms:g} ms) "
              f"in {seconds:.1f} s: {len(ms) / seconds:.0f} req/s")  # fmt: skip
        server_cpu = cpu_seconds(server.pid) - server_cpu
        client_cpu = time.process_time() - client_cpu
        print(f"CPU per request: server {server_cpu / len(ms) * 1000:.2f} ms, "
              f"load generator {client_cpu / len(ms) * 1000:.2f} ms")  # fmt: skip
        print("latency ms: p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  max {:.1f}".format(
            *np.percentile(ms, [50, 90, 99]), ms.max()))  # fmt: skip
        print(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))


if __name__ == "__main__":
    main()
