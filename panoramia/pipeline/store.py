"""Content-addressed artifact store: one directory per (stage, key), published atomically.

A stage writes into a private temporary directory; only when it finishes is ``_done.json``
written and the directory renamed to ``<root>/<stage>/<key>``. A killed run therefore leaves
no half artifact behind: at most a temporary directory, never read, that the next build of the
same key sweeps once the process that made it (named in it, with its host) is gone. A rerun
reuses every finished stage. Concurrent runs (joblib, SLURM) that race on the same key keep
whichever copy landed first: both are equal by construction.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DONE = "_done.json"


class ArtifactStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key

    def is_done(self, stage: str, key: str) -> bool:
        return (self.path(stage, key) / DONE).is_file()

    def record(self, stage: str, key: str) -> dict:
        return json.loads((self.path(stage, key) / DONE).read_text())

    @contextmanager
    def writing(self, stage: str, key: str, record: dict) -> Iterator[Path]:
        """Yield a fresh directory; on success publish it as (stage, key) with ``record``."""
        final = self.path(stage, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        self._sweep(final.parent, key)
        host = socket.gethostname().replace("-", "_")
        partial = final.parent / f".partial-{key}-{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        partial.mkdir()
        try:
            yield partial
            (partial / DONE).write_text(json.dumps(record, indent=1, default=str))
            try:
                os.rename(partial, final)
            except OSError:
                if not self.is_done(stage, key):
                    raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    @staticmethod
    def _sweep(directory: Path, key: str) -> None:
        """Remove temporary directories of ``key`` left by dead processes on this host."""
        host = socket.gethostname().replace("-", "_")
        for stale in directory.glob(f".partial-{key}-{host}-*"):
            pid = int(stale.name.split("-")[3])
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                shutil.rmtree(stale, ignore_errors=True)
            except PermissionError:
                continue
