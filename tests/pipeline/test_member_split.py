"""The split of the known members: D_G follows generation_seed alone; the rest follows seed."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.pipeline.stages.splits import MEMBER_SETS, member_parts, split_sizes

FRACTIONS = {"generator": 0.4, "attack_train": 0.25, "attack_val": 0.1, "audit": 0.25}


def test_parts_are_disjoint_and_sized() -> None:
    sizes = split_sizes(1001, FRACTIONS)
    assert sizes == {"generator": 400, "attack_train": 250, "attack_val": 100, "audit": 250}
    parts = member_parts(1001, sizes, generation_seed=3, seed=5)
    assert [parts[name].size for name in MEMBER_SETS] == [sizes[name] for name in MEMBER_SETS]
    together = np.concatenate([parts[name] for name in MEMBER_SETS])
    assert np.unique(together).size == together.size
    assert together.min() >= 0
    assert together.max() < 1001


def test_generation_seed_fixes_the_generators_members_only() -> None:
    sizes = split_sizes(1000, FRACTIONS)
    first = member_parts(1000, sizes, generation_seed=0, seed=0)
    second = member_parts(1000, sizes, generation_seed=0, seed=1)
    np.testing.assert_array_equal(first["generator"], second["generator"])
    assert not np.array_equal(np.sort(first["audit"]), np.sort(second["audit"]))
    # Both seeds deal out the same remaining members.
    rest = [np.sort(np.concatenate([p[n] for n in MEMBER_SETS[1:]])) for p in (first, second)]
    np.testing.assert_array_equal(*rest)
    other = member_parts(1000, sizes, generation_seed=1, seed=0)
    assert not np.array_equal(np.sort(first["generator"]), np.sort(other["generator"]))
    again = member_parts(1000, sizes, generation_seed=0, seed=1)
    for name in MEMBER_SETS:
        np.testing.assert_array_equal(second[name], again[name])


def test_fractions_over_one_or_tiny_parts_are_refused() -> None:
    with pytest.raises(InputError, match="more than 1"):
        split_sizes(1000, {**FRACTIONS, "audit": 0.5})
    with pytest.raises(InputError, match="under 10 rows"):
        split_sizes(30, FRACTIONS)
