"""XGBoost targets saved as JSON or UBJSON (never pickles).

Two ways to feed the booster:

* with an ``encoder`` (the project's :class:`~panoramia.modalities.tabular.encoding.TabularEncoder`
  JSON): the model was trained on encoded rows (one-hot categories, standardised numbers);
* without one, as xgboost saves a model trained on a pandas DataFrame: the booster's own
  ``feature_names`` and ``feature_types`` say which columns it reads and which are
  categorical (``c``: fed as pandas categories, which xgboost re-codes to its training
  categories); the manifest's ``classes`` lists the data's label values in the model's
  class-index order (as for ``http``); the label is the one data column the model does not
  read. A feature the data lacks, or a data column besides the label that the model does not
  read, is one line naming them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost as xgb

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.interface import shown_values as _shown
from panoramia.targets.manifest import manifest_file


def _objective(booster: xgb.Booster) -> str:
    """The booster's learning objective (e.g. ``binary:logistic``)."""
    import json

    try:
        return str(json.loads(booster.save_config())["learner"]["objective"]["name"])
    except (KeyError, ValueError, TypeError):
        return "unknown"


def _canonical(value: object) -> str:
    """A category's value as text that matches across types: 1, 1.0 and "1.0" are "1"."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)


def _as_categories(values: pd.Series, known: list | None) -> pd.Series:
    """``values`` as a pandas categorical over the booster's ``known`` categories (in their
    stored type); a value the model never saw is missing to it. Without stored categories,
    the values' text."""
    if not known:
        return values.astype(str).astype("category")
    lookup = {_canonical(category): category for category in known}
    mapped = values.map(lambda value: lookup.get(_canonical(value)))
    return pd.Series(pd.Categorical(mapped, categories=known), index=values.index)


PROBABILITY_OBJECTIVES = ("binary:logistic", "multi:softprob")
"""Objectives whose predictions are class probabilities (the losses need them)."""


@dataclass
class XGBoostTarget:
    booster: xgb.Booster
    encoder: TabularEncoder | None
    files: dict[str, str]
    classes: list[str] | None = None
    """Without an encoder: the data's label values in the model's class-index order."""

    @classmethod
    def load(cls, directory: Path, manifest: dict) -> XGBoostTarget:
        model_path = manifest_file(directory, manifest, "file")
        if model_path.suffix not in (".json", ".ubj"):
            raise InputError(f"model {str(model_path)!r}: XGBoost targets must be .json or .ubj")
        booster = xgb.Booster()
        try:
            booster.load_model(str(model_path))
        except xgb.core.XGBoostError as error:
            first = str(error).strip().splitlines()[0]
            raise InputError(f"model {str(model_path)!r}: not an XGBoost model ({first})") from None
        files = {"file": file_sha256(model_path)}
        objective = _objective(booster)
        if objective not in PROBABILITY_OBJECTIVES:
            raise InputError(
                f"model {str(model_path)!r}: objective {objective!r} does not predict class "
                f"probabilities; train with {' or '.join(PROBABILITY_OBJECTIVES)}"
            )
        if "encoder" in manifest:
            encoder_path = manifest_file(directory, manifest, "encoder")
            files["encoder"] = file_sha256(encoder_path)
            return cls(booster, TabularEncoder.load(encoder_path), files)
        if not booster.feature_names:
            raise InputError(
                f"model {str(model_path)!r}: no feature names; train it on a pandas DataFrame "
                "(its columns name the features) or give an 'encoder' in target.json"
            )
        classes = manifest.get("classes")
        if not isinstance(classes, list) or len(classes) < 2:
            raise InputError(
                f"target {str(directory)!r}: an XGBoost model without an 'encoder' needs "
                "'classes' in target.json: the data's label values in the model's class "
                'order (e.g. "classes": ["<=50K", ">50K"] for a model trained on 0/1)'
            )
        return cls(booster, None, files, [str(c) for c in classes])

    def _split(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """The booster's features from ``rows``, typed as it was trained, and the label column:
        the one column of ``rows`` the model does not read."""
        names = list(self.booster.feature_names or [])
        types = list(self.booster.feature_types or ["float"] * len(names))
        missing = [n for n in names if n not in rows.columns]
        others = [str(c) for c in rows.columns if c not in names]
        if missing or len(others) != 1:
            problems = [f"the data lacks {_shown(missing)}"] if missing else []
            if len(others) != 1:
                problems.append(
                    f"the data has {_shown(others)} besides them, where only the label should be"
                )
            raise InputError(
                f"target: the model reads features {_shown(names)}; {'; '.join(problems)} "
                "(declare the data's columns to match: data.categorical and data.continuous)"
            )
        known = self._training_categories()
        frame = pd.DataFrame(index=rows.index)
        for name, kind in zip(names, types, strict=True):
            if kind == "c":  # the model's own categories, matched by value ("1.0" is 1)
                frame[name] = _as_categories(rows[name], known.get(name))
                continue
            values = pd.to_numeric(rows[name], errors="coerce")
            if values.isna().any():
                raise InputError(
                    f"target: feature {name!r} is numeric for the model but the data's "
                    f"values are not numbers (e.g. {str(rows[name].iloc[0])[:40]!r})"
                )
            frame[name] = values.astype(np.float64)
        return frame, others[0]

    def _training_categories(self) -> dict[str, list]:
        """Each categorical feature's categories as the booster stored them, in their own
        type (xgboost ≥ 3.1 re-codes by them and refuses any other); {} where it stored none."""
        try:
            stored = self.booster.get_categories(export_to_arrow=True).to_arrow()
        except (AttributeError, ValueError, TypeError, xgb.core.XGBoostError):
            return {}
        return {
            str(name): values.to_pylist() for name, values in (stored or []) if values is not None
        }

    def _labels(self, rows: pd.DataFrame, label: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.classes or [])}
        labels = rows[label].astype(str).map(index)
        if labels.isna().any():
            unknown = sorted(set(rows[label].astype(str)) - set(index))
            raise InputError(
                f"label {label!r}: the data's values {_shown(unknown)} are not among the "
                f"manifest's classes {_shown(self.classes or [])}"
            )
        return labels.to_numpy(np.int64)

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        if self.encoder is not None:
            output = self.booster.predict(xgb.DMatrix(self.encoder.features(rows)))
            labels = self.encoder.labels(rows)
        else:
            features, label = self._split(rows)
            labels = self._labels(rows, label)
            try:
                output = self.booster.predict(xgb.DMatrix(features, enable_categorical=True))
            except (xgb.core.XGBoostError, ValueError) as error:
                first = str(error).strip().splitlines()[-1][:300]
                raise InputError(f"target: the xgboost model refused the data ({first})") from None
        probabilities = np.column_stack([1 - output, output]) if output.ndim == 1 else output
        if probabilities.shape[1] != (
            len(self.classes) if self.classes else probabilities.shape[1]
        ):
            raise InputError(
                f"target: the model has {probabilities.shape[1]} classes, the manifest's "
                f"'classes' {len(self.classes or [])}"
            )
        return loss_from_probabilities(probabilities, labels)

    def identity(self) -> dict[str, object]:
        return {"format": "xgboost-json", "sha256": self.files}
