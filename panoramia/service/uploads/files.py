"""An upload's bytes on the service's disk: received in chunks at stated offsets, then checked.

Layout, all under ``$PANORAMIA_HOME/uploads/<contributor id>/<upload id>/`` (folders 0700,
files 0600; names chosen here, never by the sender):

- ``incoming``: the bytes received so far. A chunk is appended only at the offset the
  sender states, which must equal the file's size (a resumed upload asks ``HEAD`` for it);
  one chunk at a time (an exclusive lock; a second sender is told 409).
- ``content/``: once the last byte arrived and its SHA-256 matched the declared one, the
  checked file (``content/<format name>``, e.g. ``content/data.csv``) or the unpacked folder
  (``content/folder``). ``incoming`` is then removed.

Nothing here follows a link: the folders are the service's own, created here.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import resource
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

from panoramia.hashing import file_sha256
from panoramia.service.uploads.checks import (
    ENTRY_BYTES,
    ModelSentAsData,
    UploadRejected,
    check_upload,
    is_archive,
    model_root,
    suffix_of,
)

INCOMING = "incoming"
CONTENT = "content"
FOLDER = "folder"


class ChunkRefused(Exception):
    """A chunk that cannot be appended: ``status`` is the HTTP status to answer (409 for a
    wrong offset or a chunk already arriving, 413 past the declared size), ``offset`` the
    bytes held now."""

    def __init__(self, status: int, message: str, offset: int):
        super().__init__(message)
        self.status, self.message, self.offset = status, message, offset


@dataclass(frozen=True)
class UploadFolder:
    """One upload's folder under the service's ``uploads`` folder."""

    root: Path

    @classmethod
    def of(cls, uploads_dir: Path, contributor_id: int, upload_id: str) -> UploadFolder:
        return cls(uploads_dir / str(contributor_id) / upload_id)

    @property
    def incoming(self) -> Path:
        return self.root / INCOMING

    @property
    def content(self) -> Path:
        return self.root / CONTENT

    def create(self) -> None:
        self.root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root.mkdir(mode=0o700)
        fd = os.open(self.incoming, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)

    def held(self) -> int:
        """Bytes received so far (0 when nothing is arriving any more)."""
        try:
            return self.incoming.stat().st_size
        except FileNotFoundError:
            return 0

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def data_path(self, filename: str) -> Path:
        """Where a ready upload's data lies: the checked file, or the unpacked folder (for a
        model, the folder holding its ``target.json``)."""
        if is_archive(filename):
            return model_root(self.content / FOLDER)
        return self.content / f"data{suffix_of(filename)}"

    def recorded_prefix(self, filename: str) -> str | None:
        """For an unpacked upload, what the names of the files under :meth:`data_path` start
        with among those recorded on arrival (``""``, or the one folder holding a model's
        ``target.json`` and ``/``); None for a single file."""
        if not is_archive(filename):
            return None
        inner = self.data_path(filename).relative_to(self.content / FOLDER).as_posix()
        return "" if inner == "." else inner + "/"


WRITE_BYTES = 2**20
"""Bytes of a chunk gathered before they are written (in a thread)."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def append_chunk(
    folder: UploadFolder, offset: int, size: int, body: AsyncIterator[bytes], max_chunk: int
) -> int:
    """Append the chunk ``body`` at ``offset`` to the upload of ``size`` bytes; the bytes held
    after it. ChunkRefused when another chunk is arriving, ``offset`` is not the bytes held,
    or the chunk passes ``size`` or ``max_chunk`` bytes (what it brought is cut off again:
    a refused chunk leaves the upload as it was)."""
    try:
        fd = os.open(folder.incoming, os.O_WRONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise ChunkRefused(409, "this upload is not receiving (complete or removed)", 0) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ChunkRefused(409, "another chunk of this upload is arriving", -1) from None
        held = os.fstat(fd).st_size
        if offset != held:
            raise ChunkRefused(409, f"Upload-Offset {offset}: {held} bytes are held", held)
        os.lseek(fd, held, os.SEEK_SET)
        written, pending = 0, bytearray()
        try:
            async for piece in body:
                written += len(piece)
                if held + written > size or written > max_chunk:
                    limit = "the declared size" if held + written > size else "a chunk's limit"
                    raise ChunkRefused(413, f"the chunk passes {limit}", held)
                pending += piece
                if len(pending) >= WRITE_BYTES:  # the disk is written off the event loop
                    await anyio.to_thread.run_sync(_write_all, fd, bytes(pending))
                    pending.clear()
            await anyio.to_thread.run_sync(_write_all, fd, bytes(pending))
            await anyio.to_thread.run_sync(os.fsync, fd)
        except BaseException:
            os.ftruncate(fd, held)  # a refused or broken-off chunk leaves nothing half-written
            raise
        return held + written
    finally:
        os.close(fd)


CHECK_MEMORY_BYTES = 2 * 2**30
"""The data memory a check's process may take (``RLIMIT_DATA``): a file built to expand
(a tar's long-name header, a CSV of a few very wide rows) fails its check, not the service."""
CHECK_CPU_S = 900
"""Processor seconds a check may take (``RLIMIT_CPU``); the wall clock allows twice that."""
CHECK_NICENESS = 10
"""How much lower a check's process is scheduled than the server (``nice``): a check takes
the processor the server's requests leave."""


@dataclass(frozen=True)
class Expected:
    """What a received upload is checked against: its file name (the format), ``data`` or
    ``model``, the declared SHA-256, the bytes it may expand to, whether a TorchScript model
    may be kept, and the room its owner's quota leaves for an unpacked archive."""

    filename: str
    kind: str
    sha256: str
    max_bytes: int
    trust_torchscript: bool
    room_bytes: int | None = None
    """What an archive may unpack to within its owner's quota (None: no quota)."""


def _limited() -> None:  # in the check's process, before it runs Python
    for which, limit in ((resource.RLIMIT_DATA, CHECK_MEMORY_BYTES),
                         (resource.RLIMIT_CPU, CHECK_CPU_S)):  # fmt: skip
        _, hard = resource.getrlimit(which)  # never above the host's own ceiling
        ceiling = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(which, (ceiling, ceiling))
    os.nice(CHECK_NICENESS)
    _die_with_parent()


def _die_with_parent() -> None:
    """Linux: the check's process is killed when the server that started it dies (a killed
    server's check cannot run on beside the one its restart starts again)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the recovery's row claim still keeps a second check off


async def finish(folder: UploadFolder, expected: Expected) -> tuple[dict[str, str], dict]:
    """Check the fully received upload in a process of its own, with a memory and a
    processor ceiling and a lower priority (:func:`check_here` there), awaited without
    holding a thread; returns each kept file's SHA-256 by its path inside the upload, and
    the check's findings. UploadRejected (one line) otherwise, ModelSentAsData where a data
    archive holds a model; the caller removes the upload. Cancelled, the process is killed."""
    filename = expected.filename
    request = {"root": str(folder.root)} | asdict(expected)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "panoramia.service.uploads.check_child", json.dumps(request),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL, preexec_fn=_limited, env=_child_environment(),
    )  # fmt: skip
    try:
        stdout, _ = await asyncio.wait_for(process.communicate(), timeout=2 * CHECK_CPU_S)
    except TimeoutError:
        raise UploadRejected(f"{filename}: its check took too long") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    try:
        answer = json.loads(stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError, UnicodeDecodeError):
        killed = (process.returncode or 0) < 0
        why = "more time or memory than a check may take" if killed else "an unreadable file"
        raise UploadRejected(f"{filename}: could not be checked ({why})") from None
    if "rejected" in answer:
        refused = ModelSentAsData if answer.get("holds_model") is True else UploadRejected
        raise refused(str(answer["rejected"]))
    return answer["files"], answer["summary"]


def _child_environment() -> dict[str, str]:
    """What a check's process inherits: enough to run Python, no secret of the service."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
    return {name: os.environ[name] for name in keep if name in os.environ} | {
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def check_here(folder: UploadFolder, expected: Expected) -> tuple[dict[str, str], dict]:
    """The check itself (run by :mod:`panoramia.service.uploads.check_child`): the SHA-256
    against ``sha256``, then the format (:func:`panoramia.service.uploads.checks.
    check_upload`); the upload moved into ``content/``. The summary gains ``unpacked_bytes``:
    what the upload keeps on disk."""
    filename, sha256 = expected.filename, expected.sha256
    digest = hashlib.sha256()
    with open(folder.incoming, "rb") as received:
        for block in iter(lambda: received.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256.lower():
        raise UploadRejected(
            f"{filename}: SHA-256 {digest.hexdigest()} does not match the declared {sha256}"
        )
    folder.content.mkdir(mode=0o700)
    checked = check_upload(
        folder.incoming, filename, expected.kind, max_bytes=expected.max_bytes,
        into=folder.content / FOLDER, trust_torchscript=expected.trust_torchscript,
        room_bytes=expected.room_bytes,
    )  # fmt: skip
    if checked.unpacked is None:
        kept = folder.data_path(filename)
        os.rename(folder.incoming, kept)
        return {kept.name: sha256.lower()}, checked.summary | {
            "unpacked_bytes": landed_bytes(folder.content)
        }
    folder.incoming.unlink()
    files = {
        str(path.relative_to(checked.unpacked)): file_sha256(path)
        for path in sorted(checked.unpacked.rglob("*"))
        if path.is_file()
    }
    return files, checked.summary | {"unpacked_bytes": landed_bytes(folder.content)}


def landed_bytes(folder: Path) -> int:
    """What ``folder`` takes on disk, as the quota counts it: each regular file's allocated
    blocks (or its size, when larger) and :data:`ENTRY_BYTES` per file and folder, the
    folder itself included. Links are not followed (the service creates none)."""
    total, stack = ENTRY_BYTES, [folder]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                total += ENTRY_BYTES
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    total += max(info.st_size, info.st_blocks * 512)
    return total
