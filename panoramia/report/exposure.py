"""Which of the contributor's records and groups the attack exposes: the report's ``exposure``.

The audit set's slot i holds member i of the audited members where its coin is 1 (the game
stage's ``member_index`` is the identity). For the members among the slots:

- **records**: the ``top`` members with the attack's highest scores (1: surely a member), with
  their values as the modality shows them (a table's columns, an image's label, a text chunk);
- **groups**: for each column named (the label's classes first, then ``audit.slices``), each
  value's share of members the attack flags at one threshold over all slots, the one at which
  ``fpr`` of the generated non-members are wrongly flagged (``audit.group_fpr``; by default
  1 %, and 10 % at least where fewer than 100 non-member slots make less unresolvable),
  beside the baseline's share of the same members at its own threshold of the same rate;
  each group of at least ``min_group`` audited members is tested against chance
  (:mod:`panoramia.measure.groups`: it *stands out* when the attack flags it more than the
  baseline by more than the in-audit null's draws allow, family-wise over the groups shown).
  A smaller group is listed with its count, not ranked or tested.

A numeric column of many values is cut at its quartiles. The section holds the contributor's
own rows: a report is stored under its owner only (SECURITY.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from panoramia.measure.jsonable import JSONDict, number

TOP_RECORDS = 10
MIN_GROUP = 20
MAX_SLICES = 8
MAX_VALUES = 12
"""Distinct values above which a numeric column is cut at its quartiles (and a text column
keeps its 12 most frequent values)."""
MAX_RECORD_COLUMNS = 8
"""Columns of a record shown in the table (the grouped ones first); the rest are named."""
MAX_CHARS = 80
"""Characters of a value shown in the records table."""


def _rate(non_members: int, asked: float | None = None) -> float:
    """The false-positive rate the groups are read at: ``asked`` (None: 1 %), raised to 10 %
    where fewer than 100 non-member slots cannot resolve less."""
    floor = 0.01 if non_members >= 100 else 0.1
    return floor if asked is None else max(float(asked), floor)


def _labels(column: pd.Series) -> pd.Series:
    """Group labels of a column: its values, or quartile ranges of a many-valued number."""
    if pd.api.types.is_numeric_dtype(column) and column.nunique() > MAX_VALUES:
        bins = pd.qcut(column, 4, duplicates="drop")
        return bins.astype(str)
    if pd.api.types.is_float_dtype(column) and column.dropna().map(float.is_integer).all():
        column = column.astype("Int64")  # whole numbers stored as floats: "1", not "1.0"
    values = column.astype(str)
    common = values.value_counts().index[:MAX_VALUES]
    return values.where(values.isin(common), "(other)")


def _shown(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a whole number read from a float column: "55", not "55.0"
    text = str(value).replace("\n", " ⏎ ")
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def exposure_section(
    members: pd.DataFrame,
    group_columns: list[str],
    coins: np.ndarray,
    attack_scores: np.ndarray,
    *,
    baseline_scores: np.ndarray | None = None,
    attack_members: np.ndarray | None = None,
    baseline_members: np.ndarray | None = None,
    tested: bool = True,
    fpr: float | None = None,
    statistic: str = "share",
    false_alarm_rate: float = 0.05,
    draws: int = 999,
    seed: int = 0,
    top: int = TOP_RECORDS,
    min_group: int = MIN_GROUP,
) -> JSONDict:
    """The ``exposure`` section from the audited members (row i: slot i's member), the
    columns to group by, the game's coins and the attack's scores (one per slot).

    ``baseline_scores`` (one per slot) gives each group the baseline's share; the ensembles'
    member scores ``attack_members`` and ``baseline_members`` ((k, m), seed order; default:
    the side's scores as one member) feed the test against chance
    (:func:`panoramia.measure.groups.groups_against_chance`), run where ``tested`` (the sides
    mirror each other) and a baseline is given; else every ``p`` is None. ``fpr``: the rate the
    groups are read at (``audit.group_fpr``; None: 1 %), at least 10 % with under 100
    non-member slots. ``statistic`` (``audit.group_statistic``): ``share`` or ``rank`` decides
    ``p`` and ``stands_out``; each group's ``tests`` holds both readings, and ``auc`` and
    ``baseline_auc`` the rank statistic's figures."""
    from panoramia.measure.groups import flag_threshold

    coins = np.asarray(coins).astype(bool)
    scores = np.asarray(attack_scores, dtype=float)
    slots = np.flatnonzero(coins)
    rate = _rate(int((~coins).sum()), fpr)
    non_members = scores[~coins]
    threshold = flag_threshold(non_members, np.ones(non_members.size), rate)
    order = slots[np.argsort(-scores[slots], kind="stable")][:top]
    present = [c for c in group_columns if c in members.columns]
    every_column = list(dict.fromkeys([*present, *members.columns]))
    shown_columns = every_column[:MAX_RECORD_COLUMNS]
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
    groups: list[JSONDict] = []
    indices: list[np.ndarray] = []
    for column in present[: MAX_SLICES + 1]:
        labels = _labels(members.iloc[slots][column].reset_index(drop=True))
        for value, index in labels.groupby(labels, observed=True).groups.items():
            count = len(index)
            share = number(float(flagged[np.asarray(index)].mean())) if count else None
            groups.append({
                "column": column, "value": str(value), "members": count, "share": share,
                "tpr": share, "baseline_share": None, "interval": None, "p": None,
                "stands_out": False, "small": count < min_group, "detectable": None,
                "auc": None, "baseline_auc": None, "tests": None,
            })  # fmt: skip
            indices.append(slots[np.asarray(index, dtype=np.int64)])
    if baseline_scores is not None and groups:
        baseline = np.asarray(baseline_scores, dtype=float)
        _test_groups(
            groups, indices, coins, scores if attack_members is None else attack_members,
            baseline if baseline_members is None else baseline_members,
            tested=tested, fpr=rate, statistic=statistic, draws=draws,
            false_alarm_rate=false_alarm_rate, seed=seed,
        )  # fmt: skip
    groups.sort(key=lambda g: (g["small"], not g["stands_out"], -_lead(g, statistic),
                               g["column"], g["value"]))  # fmt: skip
    return {
        "threshold": number(threshold),
        "fpr": rate,
        "statistic": statistic,
        "min_group": min_group,
        "members": int(slots.size),
        "overall_tpr": number(float(flagged.mean())) if slots.size else None,
        "tested": bool(tested and baseline_scores is not None),
        "false_alarm_rate": false_alarm_rate,
        "standing_out": sum(1 for g in groups if g["stands_out"]),
        "records": records,
        "record_columns": {"shown": shown_columns, "hidden": every_column[len(shown_columns) :]},
        "groups": groups,
        "unknown_columns": unknown,
    }


def _lead(group: JSONDict, statistic: str) -> float:
    """What orders the groups after standing out: the attack's share flagged (``share``), or
    its AUC's lead over the baseline's (``rank``; the share where a group has no AUC)."""
    auc, baseline_auc = group.get("auc"), group.get("baseline_auc")
    if statistic == "rank" and isinstance(auc, float) and isinstance(baseline_auc, float):
        return auc - baseline_auc
    return float(group["share"] or 0.0)


def _test_groups(
    groups: list[JSONDict],
    indices: list[np.ndarray],
    coins: np.ndarray,
    attack: object,
    baseline: object,
    *,
    tested: bool,
    fpr: float,
    statistic: str,
    draws: int,
    false_alarm_rate: float,
    seed: int,
) -> None:
    """Fill each group entry's test against chance in place (baseline share, interval, p,
    stands_out, detectable, AUCs and both statistics' readings). ``attack`` and ``baseline``:
    the sides' scores, (m,) or the ensembles' (k, m)."""
    from panoramia.measure.groups import groups_against_chance

    found = groups_against_chance(
        coins, np.atleast_2d(np.asarray(attack)), np.atleast_2d(np.asarray(baseline)), indices,
        tested=[tested and not g["small"] for g in groups], fpr=fpr, draws=draws,
        false_alarm_rate=false_alarm_rate, seed=seed, statistic=statistic,
    )  # fmt: skip
    for group, result in zip(groups, found, strict=True):
        group["baseline_share"] = number(result.baseline_share)
        group["interval"] = [number(result.interval[0]), number(result.interval[1])]
        group["p"] = number(result.p) if result.p is not None else None
        group["stands_out"] = result.stands_out
        group["detectable"] = number(result.detectable)
        group["auc"] = number(result.auc)
        group["baseline_auc"] = number(result.baseline_auc)
        group["tests"] = {
            name: {"p": number(test.p), "stands_out": test.stands_out,
                   "detectable": number(test.detectable)}
            for name, test in (result.tests or {}).items()
        }  # fmt: skip


def reference_groups_section(
    rows: pd.DataFrame,
    group_columns: list[str],
    membership: np.ndarray,
    scores: np.ndarray,
    *,
    tested: bool,
    false_alarm_rate: float = 0.05,
    draws: int = 999,
    seed: int = 0,
) -> JSONDict:
    """The reference attack by group (docs/SPEC.md §2.4, "by group"): ``rows`` the scored
    rows (members outside D_G, then the reserved held-out rows; row i: score i), the columns
    to group by (cut as the game's groups are), ``membership`` (1 = member) and the attack's
    ``scores``. Each group's AUC of its members against its held-out rows, tested family-wise
    over the groups where ``tested`` (the audit drew the split):
    :func:`panoramia.measure.reference_groups.group_readings`."""
    from panoramia.measure.reference_groups import MIN_GROUP_ROWS, group_readings

    present = [c for c in group_columns if c in rows.columns][: MAX_SLICES + 1]
    groups: list[tuple[str, str, np.ndarray]] = []
    for column in present:
        labels = _labels(rows[column].reset_index(drop=True))
        for value, index in labels.groupby(labels, observed=True).groups.items():
            mask = np.zeros(len(rows), bool)
            mask[np.asarray(index, dtype=np.int64)] = True
            groups.append((column, str(value), mask))
    readings = group_readings(
        scores, membership, groups, tested=tested, false_alarm_rate=false_alarm_rate,
        draws=draws, seed=seed,
    )  # fmt: skip
    found = [reading.to_dict() for reading in readings]
    found.sort(key=lambda g: (g["auc"] is None, not g["stands_out"],
                              -float(g["auc"] or 0.0), str(g["column"]), str(g["value"])))  # type: ignore[arg-type]  # fmt: skip
    return {
        "attack": "rmia",
        "statistic": "auc",
        "min_rows": MIN_GROUP_ROWS,
        "tested": tested,
        "false_alarm_rate": false_alarm_rate,
        "standing_out": sum(1 for g in found if g["stands_out"]),
        "groups": found,
    }
