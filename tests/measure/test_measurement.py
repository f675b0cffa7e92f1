"""The PANORAMIA measurement: conformance with the published numbers, null and leaky audits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from panoramia.errors import InputError
from panoramia.measure import measure
from tests.conftest import simulated_scores


@pytest.fixture(scope="module")
def official() -> pd.DataFrame:
    from tests.conftest import OFFICIAL_SCORES

    return pd.read_csv(OFFICIAL_SCORES)


@pytest.mark.parametrize(
    ("attack", "c_plus_eps", "eps_tilde"),
    [("mia_mlp10_pred", 4.607, 0.092), ("mia_mlp100_pred", 4.533, 0.018)],
)
def test_conformance_with_official_adult_scores(
    official: pd.DataFrame, attack: str, c_plus_eps: float, eps_tilde: float
) -> None:
    result = measure(
        official["member"],
        baseline_scores=official["baseline_pred"],
        attack_scores=official[attack],
        thresholds="grid:100",
        confidence=0.95,
    )
    assert result.c_lb == pytest.approx(4.515, abs=1e-3)
    assert result.c_plus_eps_lb == pytest.approx(c_plus_eps, abs=1e-3)
    assert result.eps_tilde == pytest.approx(eps_tilde, abs=1e-3)
    assert result.alpha_per_test == pytest.approx(0.05 / 200)
    assert result.m == 11023
    # the published maxima sit at precision 1: flagged, and at the ceiling for their r
    assert result.saturated
    assert result.baseline.best.saturated
    assert result.attack.best.saturated
    assert result.baseline.best.theta_lb == pytest.approx(result.baseline.best.ceiling)


def test_result_document_shape(official: pd.DataFrame) -> None:
    document = measure(
        official["member"],
        baseline_scores=official["baseline_pred"],
        attack_scores=official["mia_mlp10_pred"],
    ).to_dict(include_table=True)
    for key in ("c_lb", "c_plus_eps_lb", "eps_tilde", "alpha_per_test", "thresholds", "m"):
        assert key in document
    for side in ("baseline", "attack"):
        for key in ("threshold", "r", "v", "precision", "recall", "ceiling", "saturated"):
            assert key in document[side]
        assert len(document[side]["table"]["tau"]) == 100
    assert document["thresholds"] == "grid:100"
    assert document["eps_tilde"] == pytest.approx(document["c_plus_eps_lb"] - document["c_lb"])


@pytest.mark.parametrize("thresholds", ["grid:100", "all", "split:0.5"])
def test_null_audits_report_leakage_at_most_at_the_error_rate(thresholds: str) -> None:
    """Membership independent of both scores: ε̃ > 0 (and c_lb > 0) in at most β of 500 runs."""
    rng = np.random.default_rng(2024)
    runs, beta = 500, 0.05
    positive_eps, positive_c = 0, 0
    for seed in range(runs):
        membership, attack = simulated_scores(rng, 600, shift=0.0)
        baseline = rng.random(600)
        result = measure(
            membership,
            baseline_scores=baseline,
            attack_scores=attack,
            thresholds=thresholds,
            confidence=1 - beta,
            seed=seed,
        )
        positive_eps += result.eps_tilde > 0
        positive_c += result.c_lb > 0
    assert positive_eps <= beta * runs
    assert positive_c <= beta * runs


def test_a_leaky_attack_is_detected_and_ordered() -> None:
    rng = np.random.default_rng(7)
    membership, baseline = simulated_scores(rng, 5000, shift=0.5)
    weak = np.clip(baseline + 0.05 * membership * rng.random(5000), 0, 1)
    strong = np.clip(baseline + 0.3 * membership * rng.random(5000), 0, 1)
    weak_result = measure(membership, baseline_scores=baseline, attack_scores=weak)
    strong_result = measure(membership, baseline_scores=baseline, attack_scores=strong)
    assert weak_result.c_lb > 0
    assert strong_result.eps_tilde > weak_result.eps_tilde > 0


def test_strategies_use_their_bonferroni_level() -> None:
    rng = np.random.default_rng(8)
    membership, scores = simulated_scores(rng, 1000, shift=1.0)
    levels = {
        spec: measure(
            membership, baseline_scores=scores, attack_scores=scores, thresholds=spec
        ).alpha_per_test
        for spec in ("grid:50", "all", "split:0.5")
    }
    assert levels == pytest.approx({"grid:50": 0.05 / 100, "all": 0.05 / 2000, "split:0.5": 0.025})


def test_grid_needs_probabilities() -> None:
    rng = np.random.default_rng(9)
    membership = rng.integers(0, 2, 100)
    with pytest.raises(InputError, match=r"attack scores: grid:100 thresholds lie in \[0, 1\]"):
        measure(membership, baseline_scores=rng.random(100), attack_scores=rng.normal(size=100))
    result = measure(
        membership,
        baseline_scores=rng.random(100),
        attack_scores=rng.normal(size=100),
        thresholds="all",
    )
    assert result.eps_tilde >= 0


@pytest.mark.parametrize(
    ("membership", "baseline", "message"),
    [
        ([], [], "membership: no rows"),
        ([1, 1, 1], [0.1, 0.2, 0.3], "holds only members"),
        ([0, 0], [0.1, 0.2], "holds only non-members"),
        ([0, 1, 2], [0.1, 0.2, 0.3], "labels must be 0"),
        ([0, 1, np.nan], [0.1, 0.2, 0.3], "labels must be 0"),
        ([0, 1, 1], [0.1, np.nan, 0.3], "baseline scores: 1 NaN"),
        ([0, 1, 1], [0.1, np.inf, 0.3], "baseline scores: 0 NaN and 1 infinite"),
        ([0, 1, 1], [0.1, 0.3], "baseline scores: 2 scores for 3"),
        ([[0, 1], [1, 0]], [0.1, 0.3], "expected a 1-D vector"),
    ],
)
def test_bad_input_is_named(membership: list, baseline: list, message: str) -> None:
    with pytest.raises(InputError, match=message):
        measure(membership, baseline_scores=baseline, attack_scores=baseline)


@pytest.mark.parametrize(
    ("option", "message"),
    [({"confidence": 1.0}, "confidence"), ({"gamma": -0.1}, "gamma"), ({"delta": 1.0}, "delta")],
)
def test_bad_parameters_are_named(option: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        measure([0, 1], baseline_scores=[0.1, 0.9], attack_scores=[0.1, 0.9], **option)
