"""A contributor's data files reach an audit as a copy the worker made, never as her path.

Just before an audit's child starts, the worker opens each data file (or folder) of the
request from its contributor's folder one path component at a time, never following a
symbolic link (``O_NOFOLLOW`` on every component, opened relative to the previous one), and
copies what it opened into the audit's run directory under a name it chooses
(``inputs/members.csv``). The child is given that copy's path. So:

- there is no window between the check and the read: what is copied is what was opened, and a
  file swapped for a link afterwards is not read (the copy is already made);
- a file or folder name never reaches the child's config: the config holds the worker's own
  name, so a name carrying ``${…}`` is never interpolated;
- a link anywhere on the way (the path given, or inside a folder) is refused with one line.

Only the file suffixes survive (``.csv``, ``.csv.gz``, ``.npz``, …: the readers go by them),
and only when they are plain (letters and digits).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path
from typing import Protocol

from hydra.core.override_parser.overrides_parser import OverridesParser

from panoramia.errors import InputError

UPLOAD_PREFIX = "upload:"
"""How a stored command line names an upload: ``upload:<id>`` (never a server path)."""


class UploadSource(Protocol):
    """Where a worker copies uploads from (:mod:`panoramia.service.uploads.sources`)."""

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


def stage_data_files(
    overrides: list[str],
    data_dir: Path,
    run_dir: Path,
    uploads: UploadSource | None = None,
) -> tuple[list[str], dict[str, str]]:
    """``overrides`` with each data path replaced by a copy under ``run_dir/inputs`` (see the
    module docstring), and each copy's path mapped to the name the contributor knows (its
    path inside her folder, or the upload's), for messages. A data path is ``upload:<id>``,
    copied from ``uploads`` (a model upload's ``target.path`` too; a shared model's is left
    as it is), or lies in one contributor's folder of ``data_dir``; StagingError naming the
    path inside that folder otherwise. Earlier copies of a previous attempt are replaced."""
    parser = OverridesParser.create()
    inputs = run_dir / INPUTS
    if inputs.is_symlink() or inputs.is_file():  # planted by an earlier attempt's child
        inputs.unlink()
    elif inputs.exists():
        shutil.rmtree(inputs)
    inputs.mkdir(parents=True)
    base = data_dir.resolve()
    staged, names = [], {}
    for line in overrides:
        key = line.split("=", 1)[0]
        if key not in UPLOADED_KEYS:
            staged.append(line)
            continue
        (parsed,) = parser.parse_overrides([line])
        value = str(parsed.value())
        if value.startswith(UPLOAD_PREFIX):
            if uploads is None:
                raise StagingError(f"{key}: uploads cannot be read by this worker")
            upload_id = value.removeprefix(UPLOAD_PREFIX)
            copy = uploads.copy(upload_id, inputs / UPLOADED_KEYS[key])
            names[copy] = f"upload {upload_id}"
        elif key not in DATA_PATH_KEYS:  # a shared model, read where the operator put it
            staged.append(line)
            continue
        else:
            try:
                relative = Path(value).relative_to(base)
            except ValueError:
                raise StagingError(f"{key}: outside the data folder") from None
            if not base.is_dir():
                raise StagingError(
                    f"{key}: a file of the service's data folder, which this worker does not "
                    "have; upload it (panoramia data upload)"
                )
            if len(relative.parts) < 2:
                raise StagingError(f"{key}: not a file or folder of a contributor's folder")
            owner, *inside = relative.parts
            shown = "/".join(inside)
            suffix = "".join(Path(inside[-1]).suffixes)
            name = DATA_PATH_KEYS[key] + (suffix if PLAIN_SUFFIX.fullmatch(suffix) else "")
            copy_beneath(base, (owner, *inside), inputs / name, shown)
            copy = str(inputs / name)
            names[copy] = shown
        quoted = copy.replace("\\", "\\\\").replace("'", "\\'")
        staged.append(f"{key}='{quoted}'")
    return staged, names


def in_contributor_terms(message: str, names: dict[str, str]) -> str:
    """``message`` with every copy's path replaced by the contributor's own name for it."""
    for copy, shown in sorted(names.items(), key=lambda item: -len(item[0])):
        message = message.replace(copy, shown)
    return message
