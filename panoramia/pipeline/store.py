"""Content-addressed artifact store: one directory per (stage, key), published atomically.

A stage writes into a private temporary directory; only when it finishes is ``_done.json``
written and the directory renamed to ``<root>/<stage>/<key>``. A killed run therefore leaves
no half artifact behind (at most a stale temporary directory, ignored and swept later), and a
rerun reuses every finished stage. Concurrent runs (joblib, SLURM) that race on the same key
keep whichever copy landed first: both are equal by construction.
"""

from __future__ import annotations

import json
import os
import shutil
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
        partial = final.parent / f".partial-{key}-{uuid.uuid4().hex[:8]}"
        partial.mkdir(parents=True)
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
