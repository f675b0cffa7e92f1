"""A large upload streams to disk and resumes: the service's memory while 1 GB arrives, and an
upload broken off at half that resumes without sending the first half again.

It starts ``panoramia serve`` in a process of its own (SQLite, a temporary home), writes a
CSV of ``--size-mb`` megabytes, and:

1. sends the first half in 8 MiB chunks with ``ServiceClient.send_file``'s protocol, then
   stops, as a broken connection would;
2. sends it again with ``panoramia data upload`` (a new process): the CLI asks the service for
   the bytes it holds and sends only the rest; the bytes it sent are counted;
3. samples the server's resident memory (``/proc/<pid>/status``, VmRSS) every 50 ms
   throughout, and prints its growth over the idle server's.

    .venv/bin/python benchmarks/upload_stream.py              # 1024 MB
    .venv/bin/python benchmarks/upload_stream.py --size-mb 64
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from serving import free_port, wait_healthy

from panoramia.hashing import file_sha256

BIN = Path(sys.executable).parent
CHUNK = 8 * 2**20


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """The largest resident size of ``pid`` seen while running."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.05)


def write_csv(path: Path, megabytes: int) -> None:
    row = b"".join(b"%d,%d.5,label%d,%d\n" % (i, i * 7, i % 13, i % 2) for i in range(10_000))
    with path.open("wb") as out:
        out.write(b"id,amount,group,y\n")
        while out.tell() < megabytes * 2**20:
            out.write(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="upload-bench-") as folder:
        home = Path(folder)
        env = os.environ | {
            "PANORAMIA_HOME": str(home / "home"), "PANORAMIA_MAX_FILE_MB": str(2 * args.size_mb),
            "PANORAMIA_MAX_STORAGE_MB": str(4 * args.size_mb), "PANORAMIA_WORKERS": "1",
            "PANORAMIA_RATE_LIMIT": "1000/minute",
        }  # fmt: skip
        subprocess.run([str(BIN / "panoramia"), "db", "upgrade"], env=env, check=True,
                       capture_output=True)  # fmt: skip
        token = subprocess.run(
            [str(BIN / "panoramia"), "tokens", "create", "--contributor", "alice"],
            env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        port = free_port()
        log = (home / "server.log").open("w")
        server = subprocess.Popen([str(BIN / "panoramia"), "serve", "--port", str(port)],
                                  env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base)
            data = home / "members.csv"
            started = time.perf_counter()
            write_csv(data, args.size_mb)
            size = data.stat().st_size
            digest = file_sha256(data)
            print(f"# A {size / 2**20:,.0f} MB CSV over HTTP ({time.perf_counter() - started:.1f} s"
                  " to write it)")  # fmt: skip
            idle = rss_mb(server.pid)
            sampler = Sampler(server.pid)
            sampler.start()
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=base, headers=headers, timeout=600) as client:
                body = {"name": "members", "kind": "data", "filename": "members.csv",
                        "size": size, "sha256": digest}  # fmt: skip
                upload_id = client.post("/v1/uploads", json=body).json()["id"]
                half, sent = size // 2, 0
                started = time.perf_counter()
                with data.open("rb") as source:
                    while sent < half:
                        chunk = source.read(min(CHUNK, half - sent))
                        answer = client.patch(
                            f"/v1/uploads/{upload_id}", content=chunk,
                            headers={"Upload-Offset": str(sent),
                                     "Content-Type": "application/offset+octet-stream"},
                        )  # fmt: skip
                        answer.raise_for_status()
                        sent += len(chunk)
                first = time.perf_counter() - started
            print(f"first half: {sent:,} bytes in {first:.1f} s, then the connection is dropped")
            started = time.perf_counter()
            resumed = subprocess.run(
                [str(BIN / "panoramia"), "data", "upload", str(data), "--name", "members",
                 "--url", base, "--token", token],
                env=env, capture_output=True, text=True,
            )  # fmt: skip
            second = time.perf_counter() - started
            sampler.running = False
            sampler.join()
            progress = resumed.stderr.strip().splitlines()
            print(f"resumed with `panoramia data upload`: {second:.1f} s (the rest, the SHA-256 "
                  "and the CSV's check); its first progress line: "
                  f"{progress[0] if progress else '-'}")  # fmt: skip
            print(f"service said: {resumed.stdout.strip() or resumed.stderr.strip()[-300:]}")
            with httpx.Client(base_url=base, headers=headers) as client:
                view = client.get("/v1/uploads/members").json()
            resent = size - sent
            print(f"bytes sent on resuming: {resent:,} of {size:,} ({100 * resent / size:.1f} %)")
            print(f"state: {view['state']}; rows {view['summary'].get('rows', '-'):,}")
            print(f"server memory: idle {idle:.0f} MB, peak {sampler.peak:.0f} MB, growth "
                  f"{sampler.peak - idle:.0f} MB while {size / 2**20:,.0f} MB arrived")  # fmt: skip
            kept = home / "home" / "uploads"
            on_disk = sum(p.stat().st_size for p in kept.rglob("*") if p.is_file())
            print(f"kept on the service's disk: {on_disk:,} bytes")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
