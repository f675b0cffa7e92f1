"""The tabular helper h and the tabular labeler.

**h**: the target's architecture and task, trained on labelled synthetic rows. h never sees
the target or any real row: its per-example loss stands in for the target's in the baseline
distinguisher. Its epoch is chosen on a synthetic validation split.

**The labeler**: a classifier trained on D_G that labels synthetic rows. A tabular generator
samples the label column with the features, but its p(y | x) is often far from the real one;
the target f then finds synthetic rows "mislabelled", and its loss tells synthetic from real
for reasons unrelated to membership. Relabelling draws each synthetic row's label from the
labeler's predicted class probabilities (:func:`panoramia.baselines.labels.draw_classes`), so p(y |
x) follows a model of the real data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from panoramia.baselines.labels import draw_classes, held_out
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.modalities.tabular.table import TabularSchema
from panoramia.modalities.tabular.training import MlpConfig, train_mlp_directory

if TYPE_CHECKING:
    import xgboost as xgb


def train_helper(
    synthetic: pd.DataFrame,
    schema: TabularSchema,
    config: MlpConfig,
    directory: Path,
    *,
    seed: int,
    validation_fraction: float = 0.2,
) -> dict[str, object]:
    """Train h on labelled rows (synthetic ones for h, real ones for the stand-in f̂),
    holding out a validation split whose lowest loss picks the epoch; with
    ``validation_fraction`` 0, on all rows for every epoch."""
    order = np.random.default_rng(seed).permutation(len(synthetic))
    n_val = held_out(validation_fraction, len(synthetic))
    validation = synthetic.iloc[order[:n_val]].reset_index(drop=True) if n_val else None
    train = synthetic.iloc[order[n_val:]].reset_index(drop=True)
    return train_mlp_directory(train, schema, config, directory, seed=seed, validation=validation)


class TabularLabeler:
    def __init__(self, schema: TabularSchema, *, seed: int) -> None:
        self.schema = schema
        self.seed = seed
        self.encoder: TabularEncoder | None = None
        self.model: xgb.XGBClassifier | None = None

    def fit(self, real: pd.DataFrame) -> TabularLabeler:
        """Train on real labelled rows (D_G: the generator's training members only)."""
        import xgboost as xgb

        self.encoder = TabularEncoder.fit(real, self.schema)
        self.model = xgb.XGBClassifier(
            n_estimators=200, max_depth=4, learning_rate=0.1, n_jobs=1, random_state=self.seed
        )
        self.model.fit(self.encoder.features(real), self.encoder.labels(real))
        return self

    def relabel(self, rows: pd.DataFrame, *, seed: int) -> pd.DataFrame:
        """A copy of ``rows`` whose label column is drawn from the labeler's probabilities."""
        assert self.encoder is not None
        assert self.model is not None
        probabilities = self.model.predict_proba(self.encoder.features(rows))
        classes = draw_classes(probabilities, seed=seed)
        out = rows.copy()
        out[self.schema.label] = np.asarray(self.encoder.classes)[classes]
        return out
