"""The helper model h: the target's architecture and task, trained on labelled synthetic rows.

h never sees the target or any real row: its per-example loss stands in for the target's in
the baseline distinguisher. Its epoch is chosen on a synthetic validation split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from panoramia.data.tabular import TabularSchema
from panoramia.models.tabular_training import MlpConfig, train_mlp_directory


def train_helper(
    synthetic: pd.DataFrame,
    schema: TabularSchema,
    config: MlpConfig,
    directory: Path,
    *,
    seed: int,
    validation_fraction: float = 0.2,
) -> dict[str, float]:
    """Train h on labelled synthetic rows, holding out a synthetic validation split."""
    order = np.random.default_rng(seed).permutation(len(synthetic))
    n_val = max(1, round(validation_fraction * len(synthetic)))
    validation = synthetic.iloc[order[:n_val]].reset_index(drop=True)
    train = synthetic.iloc[order[n_val:]].reset_index(drop=True)
    return train_mlp_directory(train, schema, config, directory, seed=seed, validation=validation)
