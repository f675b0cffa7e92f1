"""Which of the contributor's records and groups the attack exposes: the report's ``exposure``.

The audit set's slot i holds member i of the audited members where its coin is 1 (the game
stage's ``member_index`` is the identity). For the members among the slots:

- **records**: the ``top`` members with the attack's highest scores (1: surely a member), with
  their values as the modality shows them (a table's columns, an image's label, a text chunk);
- **groups**: for each column named (the label's classes first, then ``audit.slices``), each
  value's share of members the attack flags at one threshold over all slots, the one at which
  ``fpr`` of the generated non-members are wrongly flagged (1 %, or 10 % where fewer than 100
  non-member slots make 1 % unresolvable). A group with fewer than ``min_group`` audited
  members is listed with its count and flagged, not ranked: its share would be noise.

A numeric column of many values is cut at its quartiles. The section holds the contributor's
own rows: a report is stored under its owner only (SECURITY.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from panoramia.measure.jsonable import number

TOP_RECORDS = 10
MIN_GROUP = 20
MAX_SLICES = 8
MAX_VALUES = 12
"""Distinct values above which a numeric column is cut at its quartiles (and a text column
keeps its 12 most frequent values)."""
MAX_CHARS = 80
"""Characters of a value shown in the records table."""


def _threshold(non_member_scores: np.ndarray) -> tuple[float, float]:
    """(threshold, FPR): the score above which at most 1 % (or 10 %) of non-members fall."""
    rate = 0.01 if non_member_scores.size >= 100 else 0.1
    if not non_member_scores.size:
        return float("inf"), rate
    return float(np.quantile(non_member_scores, 1 - rate, method="higher")), rate


def _labels(column: pd.Series) -> pd.Series:
    """Group labels of a column: its values, or quartile ranges of a many-valued number."""
    if pd.api.types.is_numeric_dtype(column) and column.nunique() > MAX_VALUES:
        bins = pd.qcut(column, 4, duplicates="drop")
        return bins.astype(str)
    values = column.astype(str)
    common = values.value_counts().index[:MAX_VALUES]
    return values.where(values.isin(common), "(other)")


def _shown(value: object) -> str:
    text = str(value).replace("\n", " ⏎ ")
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def exposure_section(
    members: pd.DataFrame,
    group_columns: list[str],
    coins: np.ndarray,
    attack_scores: np.ndarray,
    *,
    top: int = TOP_RECORDS,
    min_group: int = MIN_GROUP,
) -> dict:
    """The ``exposure`` section from the audited members (row i: slot i's member), the
    columns to group by, the game's coins and the attack's scores (one per slot)."""
    coins = np.asarray(coins).astype(bool)
    scores = np.asarray(attack_scores, dtype=float)
    slots = np.flatnonzero(coins)
    threshold, rate = _threshold(scores[~coins])
    order = slots[np.argsort(-scores[slots], kind="stable")][:top]
    present = [c for c in group_columns if c in members.columns]
    shown_columns = list(dict.fromkeys([*present, *members.columns]))[:8]
    records = [
        {
            "rank": rank,
            "score": number(scores[slot]),
            "values": {c: _shown(members.iloc[slot][c]) for c in shown_columns},
        }
        for rank, slot in enumerate(order, start=1)
    ]
    unknown = [c for c in group_columns if c not in members.columns]
    flagged = scores[slots] > threshold
    groups = []
    for column in present[: MAX_SLICES + 1]:
        labels = _labels(members.iloc[slots][column].reset_index(drop=True))
        for value, index in labels.groupby(labels, observed=True).groups.items():
            count = len(index)
            groups.append({
                "column": column,
                "value": str(value),
                "members": count,
                "tpr": number(float(flagged[np.asarray(index)].mean())) if count else None,
                "small": count < min_group,
            })  # fmt: skip
    groups.sort(key=lambda g: (g["small"], -(g["tpr"] or 0.0), g["column"], g["value"]))
    return {
        "threshold": number(threshold),
        "fpr": rate,
        "min_group": min_group,
        "members": int(slots.size),
        "overall_tpr": number(float(flagged.mean())) if slots.size else None,
        "records": records,
        "groups": groups,
        "unknown_columns": unknown,
    }
