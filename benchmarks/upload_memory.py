"""Peak memory of the report service while contributors upload large reports at once.

Starts ``panoramia serve`` in its own process (SQLite store in a fresh ``PANORAMIA_HOME``),
then ``--uploads`` clients each send one report upload of ~``--mb`` MB (a real report document
with an HTML page of that size), all at once, at ``--rate-mb-s`` MB/s each (0: as fast as the
loopback goes). Prints the server's resident memory before, its peak (``VmHWM``) after, the
answers' status codes and the wall time. Goal (issue 34): uploads are spooled to disk while
they arrive and at most a few are parsed at once, so the peak does not grow with the number
of concurrent uploads.

    .venv/bin/python benchmarks/upload_memory.py [--uploads 20] [--mb 19] [--rate-mb-s 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parents[1]))
from tests.service_support import report_document_for_test

BIN = Path(sys.executable).parent


def memory_mb(pid: int, field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of process ``pid``, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for {pid}")


async def upload(base: str, token: str, body: bytes, rate: float) -> int:
    async def paced():  # one 64 KiB chunk at a time, at ``rate`` bytes/s
        for start in range(0, len(body), 2**16):
            yield body[start : start + 2**16]
            if rate:
                await asyncio.sleep(2**16 / rate)

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=600) as client:
        answer = await client.post(f"{base}/v1/reports", content=paced(), headers=headers)
    return answer.status_code


async def upload_all(base: str, tokens: list[str], body: bytes, rate: float) -> list[int]:
    return await asyncio.gather(*(upload(base, token, body, rate) for token in tokens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--mb", type=float, default=19)
    parser.add_argument("--rate-mb-s", type=float, default=0)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="upload-memory-"))
    env = os.environ | {
        "PANORAMIA_HOME": str(home),
        "PANORAMIA_DATABASE_URL": f"sqlite:///{home / 'db.sqlite'}",
        "PANORAMIA_RATE_LIMIT": "1000/minute",
        "PANORAMIA_MAX_STORAGE_MB": "100000",
    }
    tokens = []
    for i in range(args.uploads):
        made = subprocess.run(
            [str(BIN / "panoramia"), "tokens", "create", "--contributor", f"c{i}"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        tokens.append(made.stdout.split()[-1])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(BIN / "panoramia"), "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/healthz").raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        html = "<p>" + "x" * int(args.mb * 2**20) + "</p>"
        body = json.dumps(
            {"model": {"name": "big"}, "report": report_document_for_test(), "html": html}
        ).encode()
        before = memory_mb(server.pid, "VmRSS")
        started = time.perf_counter()
        codes = asyncio.run(upload_all(base, tokens, body, args.rate_mb_s * 2**20))
        seconds = time.perf_counter() - started
        peak = memory_mb(server.pid, "VmHWM")
        print(
            f"{args.uploads} concurrent uploads of {len(body) / 2**20:.1f} MB: server RSS "
            f"{before:.0f} MB before, peak {peak:.0f} MB (+{peak - before:.0f} MB); answers "
            f"{dict(Counter(codes))}; {seconds:.1f} s"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
