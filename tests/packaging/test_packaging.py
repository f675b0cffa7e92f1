"""The environment the Makefile builds: CPU torch 2.13.0 and no CUDA packages; shipped data."""

from __future__ import annotations

import gzip
from importlib import metadata

from panoramia.datasets import OFFICIAL_ADULT_SCORES, path_of
from tests.conftest import OFFICIAL_SCORES


def test_torch_is_the_pinned_cpu_build() -> None:
    assert metadata.version("torch").split("+")[0] == "2.13.0"
    cuda = [
        d.metadata["Name"]
        for d in metadata.distributions()
        if d.metadata["Name"].lower().startswith(("nvidia-", "triton"))
    ]
    assert cuda == []


def test_embedded_scores_equal_the_test_fixture() -> None:
    with gzip.open(path_of(OFFICIAL_ADULT_SCORES), "rb") as shipped:
        assert shipped.read() == OFFICIAL_SCORES.read_bytes()
