"""What an audit will cost, estimated from its settings before it is queued, and the
contributor's budget.

The estimate (multiply-adds of forward passes, :mod:`panoramia.audit_cost`) is the audit's
modality plug-in's (``cost`` of :mod:`panoramia.plugins`), over the rows its data has: the
contributor's file measured from its size or headers, else the embedded pool. It ranks the
project's own recipes correctly (the demo's tabular audit is ~10⁹–10¹⁰, the tiny image and
text ones ~10¹¹–10¹², CIFAR-10 at paper scale ~10¹⁴). The service refuses an audit whose
estimate, added to the same contributor's queued and running audits, is past the operator's
budget (``PANORAMIA_MAX_AUDIT_COST``; :func:`check_budget`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from panoramia.audit_cost import CostEstimate, CostModel, number, value
from panoramia.errors import InputError
from panoramia.plugins import MODALITIES, default_modality

FOLDER_BYTES_PER_ROW = 256
"""Rows of a contributor's folder (of documents or images) counted at one per 256 bytes."""
COMPRESSION_RATIO = 20
"""How much a compressed file is counted to expand (text of numbers and categories)."""


class OverBudget(InputError):
    """An audit past the contributor's budget: ``alone`` when the audit by itself is past it
    (422: it can never run), otherwise it waits for her own queued and running ones (429)."""

    def __init__(self, estimate: CostEstimate, active: float, budget: float):
        self.estimate, self.active, self.budget = estimate, active, budget
        self.alone = estimate.total > budget
        queued = "" if self.alone else f" with your queued and running audits' {active:.2g}"
        super().__init__(
            f"audit cost estimate {estimate.total:.2g} multiply-adds ({estimate.largest()})"
            f"{queued} is over your budget {budget:.2g} (PANORAMIA_MAX_AUDIT_COST)"
        )


def check_budget(estimate: CostEstimate, active: float, budget: float) -> None:
    """:class:`OverBudget` when ``estimate`` plus ``active`` (the contributor's queued and
    running audits' estimates) is past ``budget``."""
    if estimate.total + active > budget:
        raise OverBudget(estimate, active, budget)


def cost_model(config: Mapping[str, Any]) -> CostModel:
    """The ``cost`` module of the plug-in that ``config``'s ``modality`` names (the default
    modality's when it names none)."""
    entry = MODALITIES.get(str(value(config, "modality")), default_modality())
    return cast("CostModel", entry.cost_model())


def data_rows(config: Mapping[str, Any]) -> float:
    """Rows (images, chunks) the audit's data has: the contributor's file measured from its
    size or headers, else the embedded source's pool; ``data.max_members`` caps it."""
    model = cost_model(config)
    pool = number(config, model.POOL_SETTING, 0)
    members = value(config, "data.members_path")
    if isinstance(members, str) and members and not members.startswith("${"):
        pool = _file_rows(Path(members), model.BYTES_PER_ROW) or pool
    cap = number(config, "data.max_members", 0)
    rows = min(pool, cap) if cap > 0 else pool
    return max(rows, 1.0)


def _file_rows(path: Path, bytes_per_row: int) -> float:
    """Rows of a contributor's members file or folder: an npz's image count from its
    header, a parquet file's from its metadata, otherwise from its size
    (``bytes_per_row``, a folder's :data:`FOLDER_BYTES_PER_ROW`); 0 when unreadable. Never through
    a link: the file is opened with ``O_NOFOLLOW`` (a file swapped for a link to someone else's
    after the submission's checks prices as unreadable) and a folder is walked without following any
    (:func:`panoramia.service.submission.usage.folder_bytes`)."""
    from panoramia.service.submission.usage import folder_bytes

    try:
        if path.is_dir():
            return folder_bytes(path) / FOLDER_BYTES_PER_ROW
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(descriptor, "rb") as opened:
            if path.suffix == ".npz":
                from panoramia.data.files import check_npz_arrays

                headers = check_npz_arrays(opened, max_bytes=2**62, where=str(path))  # type: ignore[arg-type]
                shape, _dtype = headers["images"]
                return float(shape[0])
            if path.suffix == ".parquet":
                import pyarrow.parquet as parquet

                return float(parquet.ParquetFile(opened).metadata.num_rows)
            size = os.fstat(opened.fileno()).st_size
        packed = COMPRESSION_RATIO if path.suffix in (".gz", ".bz2", ".xz", ".zst") else 1
        return size / bytes_per_row * packed
    except Exception:  # unreadable here: the audit's own reader says why, in the worker
        return 0.0


def estimate_cost(config: Mapping[str, Any]) -> CostEstimate:
    """The training stages of the composed, unresolved ``config`` and their MACs."""
    return CostEstimate(tuple(cost_model(config).stages(config, data_rows(config))))
