"""CatBoost's reader tried on an untrusted model file in a process of its own, before the
audit's process reads it.

CatBoost's C++ reader trusts its input: a ``.cbm`` or ``.json`` model altered in a few bytes
can crash the process that loads it (a segmentation fault, a division by zero: measured on
mutated copies of a model CatBoost saved), which no ``except`` catches. So
:func:`probe_catboost` runs ``python -m panoramia.modalities.tabular.catboost_probe FORMAT
PATH`` (:func:`main`): it loads the file, reads what the adapter reads of it and predicts one
row of the model's own features; a child that dies or times out is one line naming the file.
The parent then opens the same bytes (the caller's private copy) itself: CatBoost's reading of
the same bytes is the same.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from panoramia.errors import InputError

PROBE_TIMEOUT_S = 600
"""The longest a probe may take (a large model loads in seconds)."""


def _try(path: Path, kind: str) -> None:
    """What the adapter does with the file, in this (throwaway) process."""
    import pandas as pd
    from catboost import CatBoostClassifier, Pool

    model = CatBoostClassifier()
    model.load_model(str(path), format=kind)
    model.get_all_params()
    list(model.classes_)
    names = [str(n) for n in model.feature_names_]
    categorical = set(model.get_cat_feature_indices())
    if model.get_text_feature_indices() or model.get_embedding_feature_indices():
        return  # refused by the adapter before any prediction
    row = {n: ["0"] if i in categorical else [0.0] for i, n in enumerate(names)}
    model.predict_proba(Pool(pd.DataFrame(row), cat_features=sorted(categorical)))


def main(argv: list[str]) -> int:
    """``FORMAT PATH``: prints one JSON line, ``{"ok": true}`` or ``{"error": its first
    line}`` (a CatBoost error); exits 0 unless CatBoost took the process down."""
    kind, path = argv[1], Path(argv[2])
    try:
        _try(path, kind)
        answer: dict[str, object] = {"ok": True}
    except Exception as error:  # any library error type: reported, the parent decides
        lines = str(error).strip().splitlines()
        answer = {"error": (lines[0] if lines else type(error).__name__)[:300]}
    print(json.dumps(answer), flush=True)
    return 0


def probe_catboost(path: Path, kind: str, *, shown: str) -> str | None:
    """Run :func:`main` on ``path`` (CatBoost ``kind``: ``cbm`` or ``json``) in a child
    process: None when CatBoost opened it and predicted, else CatBoost's own error line.
    InputError naming ``shown`` when the child crashed or timed out."""
    environment = os.environ | {"OMP_NUM_THREADS": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__, kind, str(path)],
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            env=environment,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InputError(
            f"model {shown!r}: not a CatBoost model (CatBoost took over {PROBE_TIMEOUT_S} s "
            "to read it)"
        ) from None
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise InputError(
            f"model {shown!r}: not a CatBoost model (CatBoost's reader crashed on it: {name})"
        )
    try:
        answer = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        answer = {"error": f"its reader exited with status {done.returncode}"}
    return None if answer.get("ok") else str(answer.get("error", "unreadable"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
