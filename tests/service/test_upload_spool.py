"""Request bodies are received in full before the app sees them: large ones go to disk while
they arrive, and only a few large ones reach the app at once (benchmarks/upload_memory.py)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from starlette.types import Message, Receive, Scope, Send

from panoramia.service.api.request_limits import SPOOL_IN_MEMORY_BYTES, SpooledBody


def _open_in(directory: Path) -> int:
    """How many of this process's open files lie in ``directory`` (unlinked ones included)."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink(f"/proc/self/fd/{fd}").startswith(str(directory))
        except OSError:
            continue
    return found


class RecordingApp:
    """An ASGI app that reads the whole body, notes what it saw, and answers 200."""

    def __init__(self, spool_dir: Path):
        self.spool_dir = spool_dir
        self.inside = self.most_inside = 0
        self.bodies: list[bytes] = []
        self.spooled_files: list[int] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        self.spooled_files.append(_open_in(self.spool_dir))
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        await asyncio.sleep(0.05)
        self.bodies.append(body)
        self.inside -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def _request(middleware: SpooledBody, body: bytes, chunk: int = 2**15) -> list[Message]:
    """Send ``body`` in ``chunk``-byte messages without a Content-Length; the answer's events."""
    parts = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    events = [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        if events:
            await asyncio.sleep(0)
            return events.pop(0)
        await asyncio.sleep(3600)  # the client waits for the answer
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    await middleware(scope, receive, send)
    return sent


def test_large_bodies_are_spooled_to_disk_and_reach_the_app_two_at_a_time(tmp_path: Path) -> None:
    app = RecordingApp(tmp_path)
    middleware = SpooledBody(app, 8 * 2**20, spool_dir=tmp_path, max_large_at_once=2)
    filler = "y" * (2 * SPOOL_IN_MEMORY_BYTES)
    large = [json.dumps({"n": i, "x": filler}).encode() for i in range(6)]

    async def main() -> list[list[Message]]:
        return await asyncio.gather(*(_request(middleware, body) for body in large))

    answers = asyncio.run(main())
    assert all(answer[0]["status"] == 200 for answer in answers)
    assert sorted(app.bodies) == sorted(large)  # every byte replayed, in order
    assert app.most_inside == 2
    assert min(app.spooled_files) >= 1  # on disk in the spool folder, not in memory
    assert _open_in(tmp_path) == 0  # and gone once answered
    assert os.listdir(tmp_path) == []


def test_small_and_empty_bodies_pass_at_once_and_unchanged(tmp_path: Path) -> None:
    app = RecordingApp(tmp_path)
    middleware = SpooledBody(app, 2**20, spool_dir=tmp_path, max_large_at_once=1)

    async def main() -> list[list[Message]]:
        bodies = [b"", b"{}", b"x" * 5000] * 3
        return await asyncio.gather(*(_request(middleware, body, 1000) for body in bodies))

    answers = asyncio.run(main())
    assert all(answer[0]["status"] == 200 for answer in answers)
    assert sorted(app.bodies) == sorted([b"", b"{}", b"x" * 5000] * 3)
    assert app.most_inside == 9  # none waited for another
    assert set(app.spooled_files) == {0}


def test_a_body_without_length_is_cut_off_past_the_limit_before_the_app(tmp_path: Path) -> None:
    app = RecordingApp(tmp_path)
    middleware = SpooledBody(app, 10_000, spool_dir=tmp_path, max_large_at_once=1)
    answer = asyncio.run(_request(middleware, b"z" * 10_001))
    assert answer[0]["status"] == 413
    assert b"PANORAMIA_MAX_UPLOAD_MB" in answer[1]["body"]
    assert app.bodies == []
