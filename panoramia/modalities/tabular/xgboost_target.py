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
from panoramia.modalities.tabular.frame_features import (
    as_categories,
    class_indices,
    class_probabilities,
    label_column,
    manifest_classes,
    numbers,
)
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.manifest import manifest_file


def _objective(booster: xgb.Booster) -> str:
    """The booster's learning objective (e.g. ``binary:logistic``)."""
    import json

    try:
        return str(json.loads(booster.save_config())["learner"]["objective"]["name"])
    except (KeyError, ValueError, TypeError):
        return "unknown"


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
        where = str(directory)
        model = "an XGBoost model without an 'encoder'"
        return cls(booster, None, files, manifest_classes(manifest, where=where, model=model))

    def _split(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """The booster's features from ``rows``, typed as it was trained, and the label column:
        the one column of ``rows`` the model does not read."""
        names = list(self.booster.feature_names or [])
        types = list(self.booster.feature_types or ["float"] * len(names))
        label = label_column(rows, names)
        known = self._training_categories()
        frame = pd.DataFrame(index=rows.index)
        for name, kind in zip(names, types, strict=True):
            if kind == "c":  # the model's own categories, matched by value ("1.0" is 1)
                frame[name] = as_categories(rows[name], known.get(name))
            else:
                frame[name] = numbers(rows, name)
        return frame, label

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

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        if self.encoder is not None:
            output = self.booster.predict(xgb.DMatrix(self.encoder.features(rows)))
            labels = self.encoder.labels(rows)
        else:
            features, label = self._split(rows)
            labels = class_indices(rows, label, self.classes or [])
            try:
                output = self.booster.predict(xgb.DMatrix(features, enable_categorical=True))
            except (xgb.core.XGBoostError, ValueError) as error:
                first = str(error).strip().splitlines()[-1][:300]
                raise InputError(f"target: the xgboost model refused the data ({first})") from None
        probabilities = class_probabilities(output, self.classes)
        return loss_from_probabilities(probabilities, labels)

    def identity(self) -> dict[str, object]:
        return {"format": "xgboost-json", "sha256": self.files}
