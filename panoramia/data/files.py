"""Reading user tables (CSV, optionally compressed, or Parquet) with one-line errors."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from panoramia.errors import InputError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
"""The image files a folder of images is read from (the image plug-in's reader and the
service's door alike)."""

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")
PARQUET_SUFFIXES = (".parquet", ".pq")

if TYPE_CHECKING:
    import pandas as pd


def require_file(path: str | Path, *, what: str) -> Path:
    """``path`` as a Path; InputError naming ``what`` when it is not an existing file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} {str(path)!r} does not exist or is not a file")
    return path


def read_frame(
    path: str | Path, *, what: str, formats: str = ".csv[.gz] or .parquet"
) -> pd.DataFrame:
    """The table at ``path``; every failure is an InputError naming ``what`` and the path.

    ``formats`` completes the message for an unknown suffix (callers accepting more formats
    say so).
    """
    import pandas as pd  # kept off the start-up path of the CLI

    path = require_file(path, what=what)
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES):
        kind = "csv"
    elif name.endswith(PARQUET_SUFFIXES):
        kind = "parquet"
    else:
        raise InputError(f"{what} {str(path)!r}: unknown format; use {formats}")
    try:
        return pd.read_csv(path, skipinitialspace=True) if kind == "csv" else pd.read_parquet(path)
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} {str(path)!r}: empty") from None
    except Exception as error:  # parser errors of pandas/pyarrow: report them in one line
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise InputError(f"{what} {str(path)!r}: cannot read {kind}: {first_line}") from None


def npy_header(stream: IO[bytes], name: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from the ``.npy`` header at the start of ``stream``."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise InputError(f"column {name!r}: unsupported .npy format version {version}")
    return shape, dtype


def check_npz_arrays(
    path: Path, *, max_bytes: int, where: str
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Refuse an ``.npz`` before loading it when its arrays' headers declare more than
    ``max_bytes`` in all, pickled objects, or more data than their members hold: a small
    compressed file can expand to gigabytes (InputError naming ``where``). Returns each
    array's (shape, dtype) as its header declares it."""
    total = 0
    headers: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                name = info.filename.removesuffix(".npy")
                with archive.open(info) as stream:
                    shape, dtype = npy_header(stream, name)
                if dtype.hasobject:
                    raise InputError(f"{where}: array {name!r} holds pickled objects")
                headers[name] = (tuple(shape), dtype)
                declared = math.prod(shape) * dtype.itemsize
                if declared > info.file_size:
                    raise InputError(
                        f"{where}: array {name!r} declares {declared} bytes but holds "
                        f"{info.file_size}"
                    )
                total += declared
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise InputError(f"{where}: not a readable .npz ({error})") from None
    if total > max_bytes:
        raise InputError(
            f"{where}: its arrays hold {total} bytes once read; at most {max_bytes} are read"
        )
    return headers
