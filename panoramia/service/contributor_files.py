"""Opening and copying a contributor's files without following a link, and the names an
audit's stored command line gives them: the primitives the submission's checks, the
worker's staging (:mod:`panoramia.service.worker.staging`) and the uploads share.

A path is opened one component at a time, each relative to the folder opened before, with
``O_NOFOLLOW``: a link anywhere on the way is refused, and what is copied is what was opened.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path
from typing import Protocol

from panoramia.errors import InputError

UPLOAD_PREFIX = "upload:"
"""How a stored command line names an upload: ``upload:<id>`` (never a server path)."""


class UploadSource(Protocol):
    """Where a worker copies uploads from (:mod:`panoramia.service.worker.upload_sources`)."""

    def copy(self, upload_id: str, destination: Path) -> str:
        """Copy the upload to ``destination`` plus its format suffix (a file) or to
        ``destination`` (a folder); the path made. InputError (one line) otherwise."""
        ...


DATA_PATH_KEYS = {"data.members_path": "members", "data.nonmembers_path": "nonmembers"}
"""The overrides that name a contributor's data, and the name of their copy."""
UPLOADED_KEYS = DATA_PATH_KEYS | {"target.path": "target"}
"""The overrides that may name an upload (a model folder too), and the name of their copy."""
INPUTS = "inputs"
"""The run directory's folder of copied inputs."""
MAX_ENTRIES = 100_000
"""Entries of a data folder copied at most (the service's scan cap)."""
MAX_BYTES = 8 * 2**30
"""Bytes copied at most for one audit (sizes as the files declare them)."""
MAX_DEPTH = 32
"""Folders nested at most in a data folder."""
PLAIN_SUFFIX = re.compile(r"(\.[A-Za-z0-9]{1,10}){1,3}")
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
"""No link followed; a FIFO opens without waiting for a writer (and is then refused)."""


def unreadable_entry(info: os.stat_result) -> str | None:
    """Why a data entry (its ``lstat`` or ``fstat``) is never read: a link, a FIFO, a
    device or socket, or a regular file with several names (a hard link: a second name of a
    file that may be someone else's); None for a folder or a regular file with one name.
    The submission's check and the worker's copy both ask this."""
    if stat.S_ISDIR(info.st_mode):
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a link (links are not followed)"
    if not stat.S_ISREG(info.st_mode):
        return "neither a file nor a folder"
    if info.st_nlink != 1:
        return "a file with several names (a hard link)"
    return None


class StagingError(InputError):
    """A data path that cannot be copied safely; the message names it inside its folder."""


def open_beneath(root: Path, parts: tuple[str, ...], shown: str) -> int:
    """A descriptor of ``root / parts`` opened component by component without following any
    link; StagingError (naming ``shown``) on a link, ``..``, or a missing entry."""
    descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for index, part in enumerate(parts):
            if part in ("", ".", ".."):
                raise StagingError(f"{shown}: must stay inside your folder")
            last = index == len(parts) - 1
            flags = _FLAGS if last else _FLAGS | os.O_DIRECTORY
            try:
                following = os.open(part, flags, dir_fd=descriptor)
            except OSError as error:
                raise StagingError(
                    f"{shown}: not usable ({_reason(error)}; links are not followed)"
                ) from None
            os.close(descriptor)
            descriptor = following
        return descriptor
    except BaseException:
        os.close(descriptor)
        raise


def _reason(error: OSError) -> str:
    import errno

    return {
        errno.ELOOP: "a symbolic link",
        errno.ENOTDIR: "a symbolic link or not a folder",
        errno.ENOENT: "not found",
    }.get(error.errno or 0, type(error).__name__)


def _copy_descriptor(
    descriptor: int, destination: Path, shown: str, budget: list[int], depth: int = 0
) -> None:
    """Copy the open file or folder ``descriptor`` to ``destination``; links, hard-linked
    files (a second name of a file that may be someone else's), FIFOs and devices are
    refused, and at most :data:`MAX_ENTRIES` entries, :data:`MAX_BYTES` bytes and
    :data:`MAX_DEPTH` levels are copied (``budget``: entries and bytes left)."""
    info = os.fstat(descriptor)
    budget[0] -= 1
    if budget[0] < 0:
        raise StagingError(f"{shown}: more than {MAX_ENTRIES} entries")
    problem = unreadable_entry(info)
    if problem is not None:
        raise StagingError(f"{shown}: {problem}")
    if stat.S_ISREG(info.st_mode):
        budget[1] -= info.st_size
        if budget[1] < 0:
            raise StagingError(f"{shown}: more than {MAX_BYTES} bytes of data in all")
        with os.fdopen(os.dup(descriptor), "rb") as source, destination.open("xb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        return
    if depth >= MAX_DEPTH:
        raise StagingError(f"{shown}: folders nested more than {MAX_DEPTH} deep")
    destination.mkdir()
    for entry in sorted(os.listdir(descriptor)):
        inner = f"{shown}/{entry}"
        try:
            child = os.open(entry, _FLAGS, dir_fd=descriptor)
        except OSError as error:
            raise StagingError(f"{inner}: not usable ({_reason(error)})") from None
        try:
            _copy_descriptor(child, destination / entry, inner, budget, depth + 1)
        finally:
            os.close(child)


def copy_beneath(root: Path, parts: tuple[str, ...], destination: Path, shown: str) -> None:
    """Copy ``root / parts`` (opened component by component, no link followed) to
    ``destination``, within the staging's caps; StagingError naming ``shown`` otherwise."""
    descriptor = open_beneath(root, parts, shown)
    try:
        _copy_descriptor(descriptor, destination, shown, [MAX_ENTRIES, MAX_BYTES])
    except (OSError, RecursionError) as error:  # too long a name, too many files open
        raise StagingError(f"{shown}: cannot be copied ({type(error).__name__})") from None
    finally:
        os.close(descriptor)
