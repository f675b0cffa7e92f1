"""XGBoost targets saved as JSON (never pickles), over encoded rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost as xgb

from panoramia.data.encoding import TabularEncoder
from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.manifest import manifest_file


@dataclass
class XGBoostTarget:
    booster: xgb.Booster
    encoder: TabularEncoder
    files: dict[str, str]

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
        encoder_path = manifest_file(directory, manifest, "encoder")
        files = {"file": file_sha256(model_path), "encoder": file_sha256(encoder_path)}
        return cls(booster, TabularEncoder.load(encoder_path), files)

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        output = self.booster.predict(xgb.DMatrix(self.encoder.features(rows)))
        probabilities = np.column_stack([1 - output, output]) if output.ndim == 1 else output
        return loss_from_probabilities(probabilities, self.encoder.labels(rows))

    def identity(self) -> dict[str, object]:
        return {"format": "xgboost-json", "sha256": self.files}
