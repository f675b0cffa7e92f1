"""Fixtures of the target tests: Adult rows and a small MLP target directory trained on them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from panoramia.modalities.tabular.adult import SCHEMA, load_adult
from panoramia.modalities.tabular.training import MlpConfig, train_mlp_directory


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return load_adult()[0].iloc[:600].reset_index(drop=True)


@pytest.fixture(scope="module")
def mlp_dir(rows: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("mlp")
    train_mlp_directory(rows, SCHEMA, MlpConfig(epochs=2, hidden=[16, 8]), directory, seed=0)
    return directory
