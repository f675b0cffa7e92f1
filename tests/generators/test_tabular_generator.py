"""The sdv generator (point masses, seeding, save/load) and the quality filter; the CART
synthesizer (the default) has tests/generators/test_tabular_cart.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from panoramia.errors import InputError
from panoramia.modalities.tabular.adult import SCHEMA, load_adult
from panoramia.modalities.tabular.generator import (
    TABLE,
    TabularGenerator,
    TabularGeneratorConfig,
    find_point_masses,
    merge_point_masses,
    split_point_masses,
)
from panoramia.modalities.tabular.generator_filter import filter_synthetic

COPULA = TabularGeneratorConfig(synthesizer="gaussian_copula")


@pytest.fixture(scope="module")
def members() -> pd.DataFrame:
    return load_adult()[0].iloc[:800].reset_index(drop=True)


@pytest.fixture(scope="module")
def fitted(members: pd.DataFrame) -> TabularGenerator:
    return TabularGenerator(SCHEMA, COPULA).fit(members, seed=3)


def test_point_masses_split_and_merge_back(members: pd.DataFrame) -> None:
    masses = find_point_masses(members, SCHEMA, 0.3)
    assert {"capital-gain", "capital-loss"} <= {m.column for m in masses}
    split = split_point_masses(members, masses, np.random.default_rng(0))
    assert (split["capital-gain"] != 0).all()
    pd.testing.assert_frame_equal(merge_point_masses(split, masses), members)


def test_samples_are_reproducible_and_keep_zero_inflation(
    fitted: TabularGenerator, members: pd.DataFrame, tmp_path: Path
) -> None:
    first, again = fitted.sample(500, seed=1), fitted.sample(500, seed=1)
    pd.testing.assert_frame_equal(first, again)
    assert not first.equals(fitted.sample(500, seed=2))
    assert list(first.columns) == list(SCHEMA.columns)
    real_zero = (members["capital-gain"] == 0).mean()
    assert abs((first["capital-gain"] == 0).mean() - real_zero) < 0.05
    fitted.save(tmp_path)
    loaded = TabularGenerator.load(tmp_path, SCHEMA, COPULA)
    pd.testing.assert_frame_equal(loaded.sample(500, seed=1), first)


def test_metadata_declares_no_primary_key_for_a_unique_integer_column(
    members: pd.DataFrame,
) -> None:
    """A unique positive integer column (``fnlwgt`` of a small sample) is what sdv's detection
    takes for a primary key of sdtype ``id``; the metadata must keep it numerical and fit."""
    rows = members.iloc[:150].copy()
    rows["fnlwgt"] = np.random.default_rng(0).permutation(np.arange(10_000, 10_150))
    generator = TabularGenerator(SCHEMA, COPULA)
    described = generator._metadata(rows).to_dict()["tables"][TABLE]
    assert described.get("primary_key") is None
    assert {name: column["sdtype"] for name, column in described["columns"].items()} == {
        **dict.fromkeys((*SCHEMA.categorical, SCHEMA.label), "categorical"),
        **dict.fromkeys(SCHEMA.continuous, "numerical"),
    }
    sample = generator.fit(rows, seed=0).sample(40, seed=1)
    assert list(sample.columns) == list(SCHEMA.columns)
    assert len(sample) == 40


def test_unknown_synthesizer_is_named() -> None:
    with pytest.raises(InputError, match=r"generator\.synthesizer"):
        TabularGenerator(SCHEMA, TabularGeneratorConfig(synthesizer="diffusion"))


def test_quality_filter_keeps_real_looking_rows(
    fitted: TabularGenerator, members: pd.DataFrame
) -> None:
    held_out_real = load_adult()[0].iloc[5000:5200].reset_index(drop=True)
    candidates = pd.concat([held_out_real, fitted.sample(600, seed=5)], ignore_index=True)
    is_real = np.r_[np.ones(200, bool), np.zeros(600, bool)]
    result = filter_synthetic(
        members,
        fitted.sample(800, seed=4),
        candidates,
        SCHEMA,
        real_quantile=0.05,
        max_drop=0.5,
        seed=0,
    )
    kept = result.real_probability >= result.threshold
    assert kept.sum() == len(result.kept) >= 400  # never more than max_drop dropped
    assert kept[is_real].mean() > 0.85
    assert kept[is_real].mean() > kept[~is_real].mean() + 0.2


def test_fidelity_auc_tells_synthetic_from_real_rows_apart(
    fitted: TabularGenerator, members: pd.DataFrame
) -> None:
    """Held-out real rows against other real rows: about 0.5; against the copula's rows: well
    above (the figure the synthetic stage reports)."""
    from panoramia.modalities.tabular.generator_filter import synthetic_fidelity

    other_real = load_adult()[0].iloc[5000:5800].reset_index(drop=True)
    real_vs_real = synthetic_fidelity(members, other_real, SCHEMA, seed=0)
    real_vs_copula = synthetic_fidelity(members, fitted.sample(800, seed=4), SCHEMA, seed=0)
    assert 0.4 < real_vs_real < 0.6
    assert real_vs_copula > real_vs_real + 0.1
