"""What the audit form proposes before she chooses: read from her uploads' names, kinds and
what their checks recorded, never from their rows (issue 72: the first upload in sort order
was proposed as the members, the control as the model, the first column as the label).

Every proposal is a name she can see in the form and change; where nothing fits, the field
proposes nothing (a required field then waits for her choice) rather than a guess. Pure
functions over :class:`~panoramia.store.tables.Upload` rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

HELD_OUT = re.compile(
    r"held|hold|out|non[-_ ]?member|unseen|test|valid|eval|reference|population", re.IGNORECASE
)
"""A name that says its rows were not trained on (held-out rows, a test split)."""
MEMBERS = re.compile(r"member|train|fit|used|seen", re.IGNORECASE)
"""A name that says the model was trained on its rows (tried after :data:`HELD_OUT`:
``nonmembers`` is held-out)."""
CONTROL = re.compile(r"control|baseline|reference|null|untrained|disjoint", re.IGNORECASE)
"""A model's name that says it is a control (trained without her members)."""
LABEL_NAMES = ("label", "target", "class", "y", "outcome", "income", "diagnosis", "response")
"""Column names commonly given to what a model predicts, most telling first."""


def _held_out(name: str) -> bool:
    return HELD_OUT.search(name) is not None


def _members_named(name: str) -> bool:
    return not _held_out(name) and MEMBERS.search(name) is not None


def proposed_members(data: Sequence[Any]) -> str | None:
    """The data upload to propose as her members: one whose name says so, else the first
    whose name does not say held-out; None where every name says held-out."""
    named = [u.name for u in data if _members_named(u.name)]
    if named:
        return named[0]
    plain = [u.name for u in data if not _held_out(u.name)]
    return plain[0] if plain else None


def proposed_nonmembers(data: Sequence[Any], members: str) -> str | None:
    """The data upload to propose as held-out rows: another upload of the members' kind
    whose name says held-out; None (no held-out rows) where none does."""
    kind = next((_kind(u) for u in data if u.name == members), None)
    for upload in data:
        if upload.name != members and _held_out(upload.name) and _kind(upload) == kind:
            return str(upload.name)
    return None


def _kind(upload: Any) -> str:
    summary = upload.summary or {}
    return "table" if summary.get("columns") else "other"


def proposed_model(models: Sequence[Any], modality: str | None) -> str | None:
    """The model upload to propose as the audited one: of the data's audit (``modality``,
    where known) and not named as a control; None where only controls fit."""
    fitting = [m for m in models if modality is None or (m.summary or {}).get("modality")
               in (None, modality)]  # fmt: skip
    plain = [m.name for m in fitting if CONTROL.search(m.name) is None]
    return plain[0] if plain else None


def proposed_label(columns: Sequence[str], data_summary: dict, model_summary: dict) -> str | None:
    """The label column to propose: the one the model says it predicts (its encoder's), else
    the only column whose recorded values are exactly the model's classes, else the only one
    whose values are all among them, else the first
    column with a name commonly given to labels (any case), else None: she must choose."""
    label = model_summary.get("label")
    if isinstance(label, str) and label in columns:
        return label
    classes = model_summary.get("classes")
    values = data_summary.get("values") or {}
    if isinstance(classes, list) and classes:
        known = {str(c) for c in classes}
        seen = {c: {str(v) for v in values[c]} for c in columns if values.get(c)}
        for fits in ([c for c in seen if seen[c] == known], [c for c in seen if seen[c] <= known]):
            if len(fits) == 1:  # the only column that takes every class, else the only within
                return fits[0]
    by_name = {c.lower(): c for c in reversed(columns)}
    for name in LABEL_NAMES:
        if name in by_name:
            return by_name[name]
    return None
