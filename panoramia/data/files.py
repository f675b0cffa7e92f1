"""Reading user tables (CSV, optionally compressed, or Parquet) with one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from panoramia.errors import InputError

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
