"""LightGBM targets saved as LightGBM's own text model (``"format": "lightgbm-text"``):
``booster.save_model("model.txt")`` (or ``LGBMClassifier(...).booster_.save_model``), opened
with ``lightgbm.Booster(model_str=...)``: a text format that holds trees and numbers, never
code (nothing is unpickled), whose structure is checked first
(:func:`panoramia.modalities.tabular.lightgbm_text.check_model_text`: LightGBM's own parser
trusts its input).

The model is fed as LightGBM saw it when it was trained on a pandas DataFrame: its own
``feature_names`` say which data columns it reads, in which order; the features it treats as
categorical (its saved ``categorical_feature`` parameter) take the data's values as pandas
categories over the categories LightGBM stored at training (``pandas_categorical``, the file's
last line), matched by value (``"1"`` is 1); a value it never saw is missing to it. A model
trained with integer-coded categorical columns (no pandas categories) takes the data's numbers.
The manifest's ``classes`` lists the data's label values in the model's class order (class 0
first: a model trained on 0/1 for ``<=50K``/``>50K`` takes ``["<=50K", ">50K"]``); the label is
the one data column the model does not read.

Only objectives whose predictions are class probabilities are audited: ``binary`` (the
prediction is class 1's probability) and ``multiclass`` (softmax over the classes). LightGBM's
JSON dump (``booster.dump_model()``) is not a format LightGBM can load, so it is not one here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.modalities.tabular.frame_features import (
    as_categories,
    class_indices,
    class_probabilities,
    first_line,
    label_column,
    manifest_classes,
    numbers,
)
from panoramia.modalities.tabular.lightgbm_text import check_model_text
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.manifest import manifest_file

FORMAT = "lightgbm-text"
PROBABILITY_OBJECTIVES = ("binary", "multiclass")
"""LightGBM objectives whose predictions are class probabilities (the losses need them)."""


@dataclass
class LightGBMTarget:
    """A LightGBM booster seen through its per-example losses (see the module docstring)."""

    booster: lgb.Booster
    classes: list[str]
    """The data's label values in the model's class-index order."""
    categories: dict[str, list[object] | None]
    """Each categorical feature's stored categories (None: fed as integer codes)."""
    files: dict[str, str]

    @classmethod
    def load(cls, directory: Path, manifest: dict) -> LightGBMTarget:
        """The target of ``manifest`` in ``directory``: its ``file`` a LightGBM text model
        with a probability objective, its ``classes`` the label values in class order."""
        path = manifest_file(directory, manifest, "file")
        checked = check_model_text(path)  # before LightGBM's parser reads it
        objective = checked.objective
        if objective not in PROBABILITY_OBJECTIVES:
            raise InputError(
                f"model {str(path)!r}: objective {objective!r} does not predict class "
                f"probabilities; train with objective {' or '.join(PROBABILITY_OBJECTIVES)}"
            )
        classes = manifest_classes(manifest, where=str(directory), model="a LightGBM model")
        try:
            booster = lgb.Booster(model_str=checked.text)  # the characters checked
        except (lgb.basic.LightGBMError, ValueError, UnicodeDecodeError) as error:
            raise InputError(
                f"model {str(path)!r}: not a LightGBM model ({first_line(error)})"
            ) from None
        categories = _categorical_features(booster, shown=str(path))
        return cls(booster, classes, categories, {"file": checked.sha256})

    def _features(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """The booster's features from ``rows``, typed as it was trained, and the label."""
        names = list(self.booster.feature_name())
        label = label_column(rows, names)
        frame = pd.DataFrame(index=rows.index)
        for name in names:
            known = self.categories.get(name)
            if known is None:  # a number, or a category coded as an integer
                frame[name] = numbers(rows, name)
            else:
                frame[name] = as_categories(rows[name], known)
        return frame, label

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        """−log p(true class) in nats, float64 of shape (n,), from the booster's
        probabilities (``Booster.predict``, as ``LGBMClassifier.predict_proba`` gives them)."""
        features, label = self._features(rows)
        labels = class_indices(rows, label, self.classes)
        try:
            # One thread: an audit's few thousand rows take milliseconds, and LightGBM's
            # default (every core) oversubscribes parallel jobs sized by their own threads.
            output = np.asarray(self.booster.predict(features, num_threads=1), dtype=np.float64)
        except (lgb.basic.LightGBMError, ValueError) as error:
            raise InputError(
                f"target: the LightGBM model refused the data ({first_line(error)})"
            ) from None
        return loss_from_probabilities(class_probabilities(output, self.classes), labels)

    def identity(self) -> dict[str, object]:
        return {"format": FORMAT, "sha256": self.files}


def _categorical_features(booster: lgb.Booster, *, shown: str) -> dict[str, list[object] | None]:
    """Each categorical feature's name → the categories LightGBM stored for it (the
    ``pandas_categorical`` line, one list per pandas category column, in column order), or
    None where the model was trained on integer codes. InputError when only some of them
    were pandas categories (which is which is not in the file)."""
    names = list(booster.feature_name())
    indices = booster.params.get("categorical_feature") or []
    if isinstance(indices, int | str):
        indices = [indices]
    try:
        categorical = [names[int(i)] for i in indices]
    except (ValueError, IndexError, TypeError):
        raise InputError(
            f"model {shown!r}: its categorical_feature parameter {indices!r} does not name "
            "its features by index"
        ) from None
    stored = booster.pandas_categorical or []
    if not stored:
        return dict.fromkeys(categorical)
    if len(stored) != len(categorical):
        raise InputError(
            f"model {shown!r}: {len(stored)} pandas category columns stored for "
            f"{len(categorical)} categorical features; train with every categorical feature "
            "as a pandas category (or none)"
        )
    return {name: list(values) for name, values in zip(categorical, stored, strict=True)}
