"""What the tree boosters saved from a pandas frame share (XGBoost, LightGBM, CatBoost), and
the ONNX tabular target with them (:mod:`panoramia.modalities.tabular.onnx_target`): the
data's columns matched to the model's own feature names, categories matched by value, the
label values mapped to the model's class order, and the class probabilities checked against
the manifest's ``classes``.

The rows are those the audit hands a target (:func:`panoramia.modalities.tabular.table.conform`):
categorical columns and the label as stripped text, continuous columns as float64; the label
is the one column of the rows that the model does not read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.targets.interface import shown_values as _shown


def canonical(value: object) -> str:
    """A category's value as text that matches across types: 1, 1.0 and "1.0" are "1"."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)


def as_categories(values: pd.Series, known: Sequence[object] | None) -> pd.Series:
    """``values`` as a pandas categorical over the model's ``known`` categories (in their
    stored type, in their stored order); a value the model never saw is missing to it.
    Without stored categories, the values' text."""
    if not known:
        return values.astype(str).astype("category")
    lookup = {canonical(category): category for category in known}
    mapped = values.map(lambda value: lookup.get(canonical(value)))
    return pd.Series(pd.Categorical(mapped, categories=list(known)), index=values.index)


def numbers(rows: pd.DataFrame, name: str) -> pd.Series:
    """Feature ``name`` of ``rows`` as float64; one-line InputError when the data's values
    are not numbers (the model reads it as a number)."""
    values = pd.to_numeric(rows[name], errors="coerce")
    if values.isna().any():
        raise InputError(
            f"target: feature {name!r} is numeric for the model but the data's "
            f"values are not numbers (e.g. {str(rows[name].iloc[0])[:40]!r})"
        )
    return values.astype(np.float64)


def label_column(
    rows: pd.DataFrame, names: Sequence[str], label: str | None = None, *, reads: str = "features"
) -> str:
    """The label: ``label`` where the manifest names it, else the one column of ``rows`` that
    is none of the model's features ``names``. One-line InputError naming them when the data
    lacks a feature or the named label, or (no label named) holds more than one column
    besides them (``reads`` names what the model reads in the message)."""
    missing = [n for n in names if n not in rows.columns]
    others = [str(c) for c in rows.columns if c not in names]
    if label is not None and label not in rows.columns:
        missing.append(label)
    if missing or (label is None and len(others) != 1):
        problems = [f"the data lacks {_shown(missing)}"] if missing else []
        if label is None and len(others) != 1:
            problems.append(
                f"the data has {_shown(others)} besides them, where only the label should be"
            )
        raise InputError(
            f"target: the model reads {reads} {_shown(list(names))}; {'; '.join(problems)} "
            "(declare the data's columns to match: data.categorical and data.continuous)"
        )
    return others[0] if label is None else label


def class_indices(
    rows: pd.DataFrame,
    label: str,
    classes: Sequence[str],
    whose: str = "manifest's classes",
    hint: str = "",
) -> np.ndarray:
    """Each row's label as its index in ``classes`` (the data's label values in the model's
    class order), int64 of shape (n,); one-line InputError naming values not among them
    (``whose`` says where the classes came from, ``hint`` what to do)."""
    index = {c: i for i, c in enumerate(classes)}
    labels = rows[label].astype(str).map(index)
    if labels.isna().any():
        unknown = sorted(set(rows[label].astype(str)) - set(index))
        raise InputError(
            f"label {label!r}: the data's values {_shown(unknown)} are not among the "
            f"{whose} {_shown(list(classes))}{hint}"
        )
    return labels.to_numpy(np.int64)


def manifest_classes(manifest: dict, *, where: str, model: str) -> list[str]:
    """The manifest's ``classes`` (at least two) as text; one-line InputError naming the
    target folder ``where`` without them (``model`` names the kind in the message)."""
    classes = manifest.get("classes")
    if not isinstance(classes, list) or len(classes) < 2:
        raise InputError(
            f"target {where!r}: {model} needs 'classes' in target.json: the data's label "
            'values in the model\'s class order (e.g. "classes": ["<=50K", ">50K"] for a '
            "model trained on 0/1)"
        )
    return [str(c) for c in classes]


def class_probabilities(output: np.ndarray, classes: Sequence[str] | None) -> np.ndarray:
    """(n, n_classes) probabilities from a booster's prediction: a 1-D output is class 1's
    probability of a binary model. One-line InputError when the model's class count is not
    the manifest's (``classes``; None: not checked)."""
    probabilities = np.column_stack([1 - output, output]) if output.ndim == 1 else output
    if classes is not None and probabilities.shape[1] != len(classes):
        raise InputError(
            f"target: the model has {probabilities.shape[1]} classes, the manifest's "
            f"'classes' {len(classes)}"
        )
    return probabilities


def first_line(error: BaseException) -> str:
    """A library error's first line (its type's name where it has none), at most 300
    characters: what a one-line refusal quotes of it."""
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__)[:300]
