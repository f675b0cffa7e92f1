"""Reading named columns from a scores file (CSV, optionally compressed, Parquet or NPZ).

Every failure raises :class:`InputError` naming the file or column; NPZ files are read with
``allow_pickle=False`` so that no object array is ever unpickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from panoramia.data.files import read_frame, require_file
from panoramia.errors import InputError


def read_columns(path: str | Path, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Return ``{name: 1-D array}`` for each requested column of the file at ``path``."""
    path = Path(path)
    if path.name.lower().endswith(".npz"):
        table = _read_npz(require_file(path, what="scores file"))
    else:
        frame = read_frame(path, what="scores file", formats=".csv[.gz], .parquet or .npz")
        table = {str(column): frame[column].to_numpy() for column in frame.columns}
    missing = [column for column in dict.fromkeys(columns) if column not in table]
    if missing:
        available = ", ".join(sorted(table)) or "none"
        raise InputError(
            f"scores file {str(path)!r}: missing column(s) {', '.join(map(repr, missing))}; "
            f"available: {available}"
        )
    out = {column: np.asarray(table[column]) for column in columns}
    if out and next(iter(out.values())).size == 0:
        raise InputError(f"scores file {str(path)!r}: no rows")
    return out


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except ValueError as error:
        if "pickle" in str(error).lower():
            raise InputError(
                f"scores file {str(path)!r}: holds pickled objects, which are never loaded"
            ) from None
        raise InputError(f"scores file {str(path)!r}: cannot read npz: {error}") from None
    except (OSError, EOFError) as error:
        raise InputError(f"scores file {str(path)!r}: cannot read npz: {error}") from None
