"""The in-audit null (docs/SPEC.md §3.1, panoramia/measure/null.py): the gap it tests is the
game's own, its false alarms stay near the stated rate when attack and baseline are
exchangeable, it detects a real gap, and its interval and threshold agree with its p-value."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.measure import measure
from panoramia.measure.null import largest_exceed, mirrored, null_test
from panoramia.measure.two_sided import measure_two_sided


def _ensemble(rng: np.random.Generator, labels: np.ndarray, k: int, signal: float) -> np.ndarray:
    """(k, m) member scores in [0, 1]: one model's opinion shared by the members (its own
    per-example noise), then each member's training noise; ``signal`` separates members."""
    model = rng.normal(0.0, 0.6, labels.size)
    logits = signal * (labels - 0.5) + model + rng.normal(0.0, 0.4, (k, labels.size))
    return 1 / (1 + np.exp(-logits))


def _null_pair(rng: np.random.Generator, m: int, k: int = 3, *, gap: float = 0.0):
    labels = rng.integers(0, 2, m)
    attack = _ensemble(rng, labels, k, 1.0 + gap)
    # The baseline's j-th member sees its own stand-in: a model of its own per member.
    baseline = np.stack([_ensemble(rng, labels, 1, 1.0)[0] for _ in range(k)])
    return labels, attack, baseline


@pytest.mark.parametrize("game", ["two_sided", "one_sided"])
def test_the_observed_gap_is_the_games_own(game: str) -> None:
    rng = np.random.default_rng(0)
    labels, attack, baseline = _null_pair(rng, 400, gap=1.0)
    found = null_test(labels, attack, baseline, game=game, draws=19, seed=1)
    if game == "two_sided":
        reference = measure_two_sided(
            labels, baseline_scores=baseline.mean(0), attack_scores=attack.mean(0)
        )
    else:
        reference = measure(labels, baseline_scores=baseline.mean(0), attack_scores=attack.mean(0))
    assert found.observed == pytest.approx(reference.c_plus_eps_lb - reference.c_lb, abs=1e-12)


def test_false_alarms_stay_near_the_rate_when_the_sides_are_exchangeable() -> None:
    rng = np.random.default_rng(7)
    runs = 40
    alarms = 0
    for _ in range(runs):
        labels, attack, baseline = _null_pair(rng, 300)
        alarms += null_test(
            labels, attack, baseline, game="one_sided", draws=99, seed=int(rng.integers(1 << 30))
        ).detected
    assert alarms <= 6  # Bin(40, 0.05) exceeds 6 with probability 0.014


def test_a_real_gap_is_detected_and_its_interval_is_above_zero() -> None:
    rng = np.random.default_rng(3)
    labels, attack, baseline = _null_pair(rng, 600, gap=3.0)
    found = null_test(labels, attack, baseline, game="two_sided", draws=199, seed=2)
    assert found.detected
    assert found.p_value <= 0.05
    low, high = found.interval
    assert 0 < low <= max(0.0, found.observed) <= high
    assert found.observed > found.threshold  # detected ⟺ Δ above the null's order statistic


def test_the_threshold_the_interval_and_the_p_value_agree() -> None:
    rng = np.random.default_rng(11)
    for _ in range(6):
        labels, attack, baseline = _null_pair(rng, 300, gap=float(rng.uniform(0, 0.6)))
        found = null_test(labels, attack, baseline, game="one_sided", draws=99, seed=5)
        assert found.detected == (found.observed > found.threshold) == (found.interval[0] > 0)
        assert 1 / 100 <= found.p_value <= 1
        assert found.to_dict()["detected"] == found.detected


def test_it_is_deterministic_in_its_seed_and_runs_the_relaxed_test() -> None:
    rng = np.random.default_rng(2)
    labels, attack, baseline = _null_pair(rng, 200)
    one = null_test(labels, attack, baseline, game="one_sided", draws=39, seed=4)
    assert one == null_test(labels, attack, baseline, game="one_sided", draws=39, seed=4)
    relaxed = null_test(
        labels, attack, baseline, game="one_sided", draws=19, gamma=0.01, delta=0.01, seed=4
    )
    assert relaxed.draws == 19
    split = null_test(
        labels, attack, baseline, game="one_sided", thresholds="split:0.5", draws=19, seed=4
    )
    assert split.draws == 19


def test_bad_settings_are_one_line() -> None:
    labels = np.array([0, 1] * 20)
    scores = np.full((2, 40), 0.5)
    with pytest.raises(InputError, match="cannot reach"):
        null_test(labels, scores, scores, game="one_sided", draws=10, false_alarm_rate=0.05)
    with pytest.raises(InputError, match="false_alarm_rate"):
        null_test(labels, scores, scores, game="one_sided", false_alarm_rate=0.7)
    with pytest.raises(InputError, match=r"\(k, 40\)"):
        null_test(labels, scores, scores[:1], game="one_sided")


def test_only_mirrored_sides_have_a_null() -> None:
    assert mirrored("target+helper", "stand_in+helper")
    assert mirrored("target", "stand_in")
    assert not mirrored("target+helper", "helper")
    assert not mirrored("target", "stand_in+helper")


@pytest.mark.parametrize(("draws", "rate"), [(99, 0.29), (999, 0.05), (19, 0.05), (199, 0.01)])
def test_the_order_statistic_follows_the_p_value_even_where_floats_round(
    draws: int, rate: float
) -> None:
    allowed = largest_exceed(draws, rate)
    assert (1 + allowed) / (draws + 1) <= rate < (2 + allowed) / (draws + 1)
