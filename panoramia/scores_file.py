"""Reading named columns from a scores file (CSV, optionally compressed, Parquet or NPZ).

Every failure raises :class:`InputError` naming the file or column. A file holds at most
:data:`MAX_ROWS` rows. NPZ files are read member by member: only the requested columns, each
after its ``.npy`` header was checked (no object array, so nothing is ever unpickled; at most
:data:`MAX_ROWS` values of at most :data:`MAX_VALUE_BYTES` bytes; no more data than the archive
member holds), so that a crafted header claiming 10¹² rows is refused before anything is
allocated.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from panoramia.data.files import npy_header, read_frame, require_file
from panoramia.errors import InputError

MAX_ROWS = 10**8
"""Most rows (values per column) a scores file may hold: 0.8 GB per float64 column, far
beyond any audit set (PANORAMIA's have 10³ to 10⁵ examples)."""
MAX_VALUE_BYTES = 16
"""Widest NPZ value read (bytes): numbers, booleans and short strings such as ``"1"``."""


def read_columns(path: str | Path, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Return ``{name: 1-D array}`` for each requested column of the file at ``path``."""
    path = Path(path)
    if path.name.lower().endswith(".npz"):
        available, table = _read_npz(require_file(path, what="scores file"), columns)
    else:
        frame = read_frame(path, what="scores file", formats=".csv[.gz], .parquet or .npz")
        table = {str(column): frame[column].to_numpy() for column in frame.columns}
        available = list(table)
    missing = [column for column in dict.fromkeys(columns) if column not in table]
    if missing:
        shown = ", ".join(sorted(available)) or "none"
        raise InputError(
            f"scores file {str(path)!r}: missing column(s) {', '.join(map(repr, missing))}; "
            f"available: {shown}"
        )
    out = {column: np.asarray(table[column]) for column in columns}
    for column, values in out.items():
        if values.size > MAX_ROWS:
            raise InputError(
                f"scores file {str(path)!r}: column {column!r} holds {values.size} values; "
                f"at most {MAX_ROWS} rows are read"
            )
    if out and next(iter(out.values())).size == 0:
        raise InputError(f"scores file {str(path)!r}: no rows")
    return out


def _check_member(info: zipfile.ZipInfo, name: str, shape: tuple, dtype: np.dtype) -> None:
    """Refuse an array that is pickled, too large, or larger than its archive member."""
    if dtype.hasobject:
        raise InputError(f"column {name!r}: holds pickled objects, which are never loaded")
    count = math.prod(shape)
    if count > MAX_ROWS:
        raise InputError(
            f"column {name!r}: declares {count} values; at most {MAX_ROWS} rows are read"
        )
    if dtype.itemsize > MAX_VALUE_BYTES:
        raise InputError(
            f"column {name!r}: values of {dtype.itemsize} bytes ({dtype}); at most "
            f"{MAX_VALUE_BYTES} are read"
        )
    if count * dtype.itemsize > info.file_size:
        raise InputError(
            f"column {name!r}: declares {count * dtype.itemsize} bytes of data but its "
            f"member holds {info.file_size}"
        )


def _read_npz(path: Path, columns: Sequence[str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """(every column name of the archive, the requested columns that it holds)."""
    where = f"scores file {str(path)!r}"
    try:
        with zipfile.ZipFile(path) as archive:
            members = {
                info.filename.removesuffix(".npy"): info
                for info in archive.infolist()
                if info.filename.endswith(".npy")
            }
            table = {}
            for name in dict.fromkeys(columns):
                if name not in members:
                    continue
                with archive.open(members[name]) as stream:
                    shape, dtype = npy_header(stream, name)
                _check_member(members[name], name, shape, dtype)
                with archive.open(members[name]) as stream:
                    table[name] = np.lib.format.read_array(stream, allow_pickle=False)
            return list(members), table
    except InputError as error:
        raise InputError(f"{where}: {error}") from None
    except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError) as error:
        raise InputError(f"{where}: cannot read npz: {_flat(error)}") from None
    except (NotImplementedError, RuntimeError) as error:  # compression method, encryption
        raise InputError(f"{where}: cannot read npz: {_flat(error)}") from None


def _flat(error: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(str(error).split())
