"""One contributor floods the upload checks; does another still get answers and her upload?

Starts ``panoramia serve`` in a process of its own on a fresh home and database. Mallory
announces ``--flood`` gzip CSVs (``--expands-mb`` MiB of rows each, ~0.1 % of that sent) and
sends all their last chunks at once, so that every one of them waits for a check. Meanwhile
Alice asks ``/healthz`` and lists her uploads every 0.2 s, and, one second into the flood,
uploads a small CSV. Prints the worst and median latency of Alice's reads during the flood,
how long her upload took from its announcement to ``ready``, and when the flood's last check
ended. The issue's bar (issue 58): reads ≤ 2 s at worst and her upload ≤ 10 s, on both stores.

    .venv/bin/python benchmarks/upload_flood.py [--database-url URL] [--flood 30]
        [--expands-mb 128]

Defaults: SQLite. ``--database-url postgresql+psycopg://postgres@127.0.0.1:5432/test`` runs
in a fresh schema of that database.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent
SMALL = b"x,colour,y\n1.5,red,0\n2,blue,1\n3,red,1\n"


def expanding_csv(mib: int) -> bytes:
    """A gzip CSV of ``mib`` MiB of rows (it compresses about a thousandfold)."""
    line = b"123456,654321,a rather repetitive text value,0\n"
    rows = (mib * 2**20) // len(line)
    return gzip.compress(b"a,b,c,y\n" + line * rows, 9)


def announce(client: httpx.Client, name: str, content: bytes, filename: str) -> str:
    body = {"name": name, "kind": "data", "filename": filename, "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest()}  # fmt: skip
    answer = client.post("/v1/uploads", json=body)
    answer.raise_for_status()
    return answer.json()["id"]


def send(client: httpx.Client, upload_id: str, content: bytes) -> httpx.Response:
    headers = {"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"}
    return client.patch(f"/v1/uploads/{upload_id}", content=content, headers=headers)


def fresh_schema(url: str) -> str:
    if not url.startswith("postgresql"):
        return url
    import sqlalchemy

    schema = "flood_" + uuid.uuid4().hex[:8]
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sqlalchemy.text(f"CREATE SCHEMA {schema}"))
    engine.dispose()
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--flood", type=int, default=30)
    parser.add_argument("--expands-mb", type=int, default=128)
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="flood-"))
    url = fresh_schema(args.database_url or f"sqlite:///{home / 'db.sqlite'}")
    env = os.environ | {
        "PANORAMIA_HOME": str(home / "home"), "PANORAMIA_DATABASE_URL": url,
        "PANORAMIA_RATE_LIMIT": "10000/minute", "PANORAMIA_MAX_STORAGE_MB": "100000",
        "PANORAMIA_MAX_FILE_MB": str(2 * args.expands_mb),
    }  # fmt: skip
    panoramia = str(BIN / "panoramia")
    subprocess.run([panoramia, "db", "upgrade"], env=env, check=True, capture_output=True)
    tokens = {
        who: subprocess.run([panoramia, "tokens", "create", "--contributor", who], env=env,
                            check=True, capture_output=True, text=True).stdout.strip()
        for who in ("alice", "mallory")
    }  # fmt: skip
    log = (home / "serve.log").open("wb")
    server = subprocess.Popen([panoramia, "serve", "--port", str(args.port)], env=env,
                              stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{args.port}"

    def client(who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {tokens[who]}"} if who else {}
        return httpx.Client(base_url=base, headers=headers, timeout=600)

    try:
        with client(None) as anyone:
            for _ in range(300):
                try:
                    if anyone.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
        content = expanding_csv(args.expands_mb)
        store = url.split(":")[0]
        print(f"flood: {args.flood} gzip CSVs of {len(content) / 1024:,.0f} KiB each, "
              f"expanding to {args.expands_mb} MiB; store {store}", flush=True)  # fmt: skip
        with client("mallory") as mallory:
            ids = [announce(mallory, f"m{i}", content, "m.csv.gz") for i in range(args.flood)]
        ended: list[float] = []
        codes: list[int] = []

        def complete(upload_id: str) -> None:
            with client("mallory") as own:
                codes.append(send(own, upload_id, content).status_code)
            ended.append(time.monotonic())

        reads: dict[str, list[float]] = {"/healthz": [], "/v1/uploads": []}
        stop = threading.Event()

        def poll() -> None:
            with client("alice") as alice:
                while not stop.is_set():
                    for path, found in reads.items():
                        asked = time.monotonic()
                        answer = alice.get(path)
                        found.append(time.monotonic() - asked)
                        if answer.status_code != 200:
                            print(f"  {path}: {answer.status_code}", flush=True)
                    time.sleep(0.2)

        started = time.monotonic()
        flood = [threading.Thread(target=complete, args=(i,)) for i in ids]
        for thread in flood:
            thread.start()
        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.0)
        with client("alice") as alice:
            asked = time.monotonic()
            own = announce(alice, "small", SMALL, "small.csv")
            state = send(alice, own, SMALL).json()["state"]
            alice_s = time.monotonic() - asked
        for thread in flood:
            thread.join()
        stop.set()
        poller.join()
        print(f"alice's small upload: {state} in {alice_s:.2f} s (announced 1 s into the flood)")
        for path, found in reads.items():
            print(f"alice's {path}: {len(found)} reads during the flood, worst {max(found):.2f} s,"
                  f" median {statistics.median(found) * 1000:.0f} ms")  # fmt: skip
        print(f"the flood's checks: {codes.count(200)} of {len(codes)} ready; the last ended "
              f"{max(ended) - started:.1f} s after the flood began")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


if __name__ == "__main__":
    main()
