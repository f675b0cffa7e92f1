"""Content-addressed artifact store: one directory per (stage, key), published atomically.

A stage writes into a private temporary directory; only when it finishes is ``_done.json``
written and the directory renamed to ``<root>/<stage>/<key>``. A killed run therefore leaves
no half artifact behind: at most a temporary directory, never read, that the next build of the
same key sweeps once the process that made it (named in it, with its host) is gone. A rerun
reuses every finished stage. Concurrent runs (joblib, SLURM) that need the same key take turns:
:meth:`ArtifactStore.building` holds an advisory lock (``.locks/<stage>/<key>``, ``flock``) while
one builds it, and the others then reuse its copy instead of building their own. Where the file
system has no ``flock`` they race, and whichever copy lands first is kept: both are equal by
construction.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

DONE = "_done.json"
LOCKS = ".locks"
"""The folder of the stages' build locks (empty files), beside the stages' folders."""
UNLOCKABLE = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)
"""``flock``'s errors on a file system without it: the build then runs unlocked."""


class ArtifactStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key

    def is_done(self, stage: str, key: str) -> bool:
        return (self.path(stage, key) / DONE).is_file()

    def record(self, stage: str, key: str) -> dict:
        return json.loads((self.path(stage, key) / DONE).read_text())

    def lock_path(self, stage: str, key: str) -> Path:
        """The empty file whose ``flock`` says that a process is building (stage, key)."""
        return self.root / LOCKS / stage / key

    @contextmanager
    def building(self, stage: str, key: str, *, waiting: Callable[[], None]) -> Iterator[None]:
        """Hold (stage, key)'s build lock for the block; ``waiting()`` is called once if
        another process holds it first (the block then starts when that process ends its
        build or dies: the kernel drops a dead holder's lock). Without ``flock`` support
        (some network file systems) the block runs unlocked."""
        path = self.lock_path(stage, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # read-only is enough for flock, and lets another user of a shared store take it too
        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            try:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    waiting()
                    fcntl.flock(descriptor, fcntl.LOCK_EX)
            except OSError as error:
                if error.errno not in UNLOCKABLE:
                    raise
            yield
        finally:
            # unlock first: a child forked meanwhile (a data loader's worker) shares the lock
            # through its copy of the descriptor, and would otherwise hold it until it exits
            with suppress(OSError):
                fcntl.flock(descriptor, fcntl.LOCK_UN)
            os.close(descriptor)

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
