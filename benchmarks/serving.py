"""What the benchmarks that start ``panoramia serve`` in a process of their own share: a free
loopback port, and waiting until the server answers ``/healthz``."""

from __future__ import annotations

import socket
import time

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base: str, *, attempts: int = 300) -> None:
    """Return once ``base``'s ``/healthz`` answers 200 (at most ``attempts`` tries, 0.1 s
    apart)."""
    for _ in range(attempts):
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
