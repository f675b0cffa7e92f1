"""Embedded Adult data, schema checks, reading user tables, the encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from panoramia.errors import InputError
from panoramia.modalities.tabular.adult import SCHEMA, load_adult
from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.modalities.tabular.table import TabularSchema, conform, read_table


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_adult()


def test_adult_is_complete_and_clean(adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, test = adult
    assert (len(train), len(test)) == (30162, 15060)
    assert list(train.columns) == list(SCHEMA.columns)
    assert set(train["income"]) == set(test["income"]) == {"<=50K", ">50K"}
    assert not train.isna().any().any()
    assert train["age"].dtype == np.float64


def test_conform_names_missing_columns_and_values() -> None:
    schema = TabularSchema("y", ("a",), ("b",))
    with pytest.raises(InputError, match=r"in.csv: missing declared column\(s\) 'b'"):
        conform(pd.DataFrame({"a": ["x"], "y": ["1"]}), schema, source="in.csv")
    with pytest.raises(InputError, match="continuous column 'b' has 1 missing or non-numeric"):
        conform(
            pd.DataFrame({"a": ["x", "z"], "b": [1.0, "oops"], "y": [0, 1]}),
            schema,
            source="in.csv",
        )
    with pytest.raises(InputError, match="column 'a' has 1 missing"):
        conform(pd.DataFrame({"a": ["x", None], "b": [1, 2], "y": [0, 1]}), schema, source="s")


def test_read_table_csv_and_parquet(tmp_path: Path) -> None:
    schema = TabularSchema("y", ("a",), ("b",))
    frame = pd.DataFrame({"a": ["x", "z"], "b": [1, 2], "y": [0, 1], "extra": [5, 6]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        read = read_table(tmp_path / name, schema)
        assert list(read.columns) == ["a", "b", "y"]
        assert read["y"].tolist() == ["0", "1"]
    with pytest.raises(InputError, match="does not exist"):
        read_table(tmp_path / "missing.csv", schema)


def test_encoder_round_trip(adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    train, test = adult
    encoder = TabularEncoder.fit(train.iloc[:2000], SCHEMA)
    features = encoder.features(test.iloc[:500])
    assert features.shape == (500, encoder.n_features)
    assert features.dtype == np.float32
    assert set(np.unique(encoder.labels(test.iloc[:500]))) <= {0, 1}
    encoder.save(tmp_path / "encoder.json")
    again = TabularEncoder.load(tmp_path / "encoder.json")
    np.testing.assert_array_equal(again.features(test.iloc[:500]), features)
    unseen = test.iloc[:1].copy()
    unseen["income"] = "unknown"
    with pytest.raises(InputError, match="unknown to the model"):
        encoder.labels(unseen)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="not a panoramia encoder"):
        TabularEncoder.load(tmp_path / "bad.json")


def test_adult_held_out_rows_drawn_by_the_audit(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """``data.held_out=drawn``: one permutation of adult.data and adult.test pooled deals the
    members, the control pool and the held-out rows, disjoint, from both files, and the data
    stage says it drew them; the default keeps UCI's test file and the data key it had."""
    from panoramia.modalities.tabular.config import TabularDataConfig
    from panoramia.modalities.tabular.data import build_data, data_identity

    train, test = adult
    for name in ("drawn", "file", "big"):
        (tmp_path / name).mkdir()
    drawn = TabularDataConfig(source="adult", pool_size=2000, held_out="drawn")
    info = build_data(drawn, tmp_path / "drawn")
    members = pd.read_parquet(tmp_path / "drawn" / "members.parquet")
    control = pd.read_parquet(tmp_path / "drawn" / "control_pool.parquet")
    held_out = pd.read_parquet(tmp_path / "drawn" / "nonmembers.parquet")
    assert info["held_out_drawn"] is True
    assert (len(members), len(control)) == (2000, 2000)
    assert len(held_out) == info["nonmembers"] == len(train) + len(test) - 4000
    # each side holds rows of both files (adult.test is a third of the pooled rows)
    test_rows = set(map(tuple, test.astype(str).to_numpy()))
    for part in (members, held_out):
        share = np.mean([tuple(row) in test_rows for row in part.astype(str).to_numpy()])
        assert 0.25 < share < 0.42
    assert "held_out" in data_identity(drawn)
    plain = TabularDataConfig(source="adult", pool_size=2000)
    assert "held_out" not in data_identity(plain)  # the data key it always had
    assert build_data(plain, tmp_path / "file")["held_out_drawn"] is False  # UCI's split
    assert len(pd.read_parquet(tmp_path / "file" / "nonmembers.parquet")) == len(test)
    with pytest.raises(InputError, match=r"^data\.pool_size: at most"):
        build_data(TabularDataConfig(source="adult", pool_size=22_200, held_out="drawn"),
                   tmp_path / "big")  # fmt: skip
