"""Marginal matching (panoramia/modalities/tabular/marginals.py): each continuous column of
synthetic rows is mapped onto D_G's values by quantile, keeping the generator's ranks."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp, spearmanr

from panoramia.modalities.tabular.marginals import MarginalMatch


def _real(rng: np.random.Generator, n: int = 4000) -> pd.DataFrame:
    """Heaped hours (40, 50, 45 hold 50 %, 20 %, 10 %), a zero-inflated gain on a few amounts,
    and a weight with a unique value per row."""
    hours = rng.choice([40, 50, 45], size=n, p=[0.625, 0.25, 0.125])
    spread = rng.random(n) < 0.2
    hours[spread] = rng.integers(1, 100, spread.sum())
    gain = np.where(rng.random(n) < 0.9, 0, rng.choice([2174, 7688, 15024], size=n))
    weight = rng.lognormal(12, 0.5, n)
    return pd.DataFrame({"hours": hours, "gain": gain, "weight": weight, "kind": "a"})


def _synthetic(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """A smooth generator's version: no heaps, gain smeared out, a shifted weight."""
    hours = np.clip(np.rint(rng.normal(42, 12, n)), 1, 99).astype(np.int64)
    gain = np.where(rng.random(n) < 0.8, 0.0, rng.uniform(1000, 20000, n))
    weight = rng.lognormal(12.3, 0.7, n)
    return pd.DataFrame({"hours": hours, "gain": gain, "weight": weight, "kind": "a"})


def _matched(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    real = _real(rng)
    match = MarginalMatch.fit(real, _synthetic(rng, 20_000), ["hours", "gain", "weight"])
    rows = _synthetic(rng, 10_000)
    return real, rows, match.apply(rows, np.random.default_rng(1))


def test_a_heaped_column_gets_real_values_in_real_proportions() -> None:
    real, rows, matched = _matched()
    assert set(matched["hours"]) <= set(real["hours"])
    assert set(matched["gain"]) <= set(real["gain"])
    for column, value in (("hours", 40), ("hours", 50), ("hours", 45), ("gain", 0)):
        share_real = (real[column] == value).mean()
        assert abs((matched[column] == value).mean() - share_real) < 0.02, (column, value)
        assert abs((rows[column] == value).mean() - share_real) > 0.05  # the generator missed it


def test_ranks_are_kept_so_the_dependence_between_columns_is_kept() -> None:
    _, rows, matched = _matched()
    # Rows the generator gives different values stay in that order (ties broken at random).
    spans = matched.groupby(rows["hours"])["hours"].agg(["min", "max"])
    assert np.all(spans["max"].to_numpy()[:-1] <= spans["min"].to_numpy()[1:])
    # A continuous column keeps its order up to the reference draw's resolution.
    assert spearmanr(rows["weight"], matched["weight"]).statistic > 0.9999


def test_a_continuous_column_is_interpolated_inside_the_real_range() -> None:
    real, rows, matched = _matched()
    weight = matched["weight"].to_numpy()
    assert real["weight"].min() <= weight.min()
    assert weight.max() <= real["weight"].max()
    assert np.isin(weight, real["weight"].to_numpy()).mean() < 0.01  # no unique value copied
    assert ks_2samp(weight, real["weight"]).statistic < 0.03
    assert ks_2samp(rows["weight"], real["weight"]).statistic > 0.2


def test_dtypes_and_other_columns_are_kept_and_the_draw_is_seeded() -> None:
    _, rows, matched = _matched()
    assert matched.dtypes.equals(rows.dtypes)
    assert (matched["kind"] == "a").all()
    _, _, again = _matched()
    pd.testing.assert_frame_equal(matched, again)


def test_whole_numbers_stay_whole_where_d_g_holds_only_whole_numbers() -> None:
    """Conformed rows hold continuous columns as float64: a census weight (unique integers)
    is interpolated, then rounded, and still copies almost no real row's value."""
    rng = np.random.default_rng(3)
    real = pd.DataFrame({"weight": rng.choice(np.arange(10_000, 1_000_000), 4000, replace=False)})
    real = real.astype(np.float64)
    synthetic = pd.DataFrame({"weight": rng.lognormal(12, 0.8, 30_000)})
    match = MarginalMatch.fit(real, synthetic.iloc[:20_000], ["weight"])
    assert not match.columns["weight"].discrete
    matched = match.apply(synthetic.iloc[20_000:], np.random.default_rng(4))["weight"]
    assert matched.dtype == np.float64
    assert np.all(matched == np.rint(matched))
    assert matched.isin(real["weight"]).mean() < 0.05
