"""θ_lb in closed form against a bisection oracle; monotonicity; ceilings; the rejection test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logit

from panoramia.measure import max_precision_allowed, rejects, saturation_ceiling, theta_lb
from tests.conftest import bisection_theta_lb


def _random_cases(seed: int, n: int) -> list[tuple[int, int, float]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        r = int(rng.integers(1, 3000))
        v = int(rng.integers(0, r + 1))
        alpha = float(10 ** rng.uniform(-8, np.log10(0.4)))
        cases.append((r, v, alpha))
    return cases


def test_closed_form_matches_bisection_oracle() -> None:
    cases = [
        *_random_cases(0, 300),
        (1, 1, 0.05),
        (5, 5, 0.001),
        (10, 9, 0.0001),
        (2000, 1999, 1e-07),
    ]
    got = theta_lb([c[0] for c in cases], [c[1] for c in cases], 0.01)  # vectorised call works
    assert got.shape == (len(cases),)
    for r, v, alpha in cases:
        assert float(theta_lb(r, v, alpha)) == pytest.approx(
            bisection_theta_lb(r, v, alpha), abs=1e-6
        ), (r, v, alpha)


def test_monotone_in_v_and_alpha() -> None:
    r = 500
    v = np.arange(r + 1)
    for alpha in (1e-6, 1e-3, 0.05):
        assert np.all(np.diff(theta_lb(r, v, alpha)) >= 0)
    alphas = np.logspace(-9, np.log10(0.4), 60)
    for v_fixed in (260, 400, 499, 500):
        values = np.array([float(theta_lb(r, v_fixed, a)) for a in alphas])
        assert np.all(np.diff(values) >= 0)
    assert float(theta_lb(r, 400, 0.05)) > float(theta_lb(r, 400, 1e-6)) > 0


def test_zero_when_nothing_correct_or_precision_not_above_half() -> None:
    assert float(theta_lb(100, 0, 0.05)) == 0.0
    assert float(theta_lb(100, 50, 0.05)) == 0.0
    assert float(theta_lb(0, 0, 0.05)) == 0.0


def test_ceiling_is_the_bound_at_full_precision() -> None:
    r = np.array([1, 7, 100, 762, 10**5])
    alpha = 0.05 / 200
    np.testing.assert_allclose(theta_lb(r, r, alpha), saturation_ceiling(r, alpha), rtol=1e-10)
    expected = np.maximum(0.0, logit(alpha ** (1 / r)))  # clipped at 0 like every bound
    np.testing.assert_allclose(saturation_ceiling(r, alpha), expected, rtol=1e-8)
    # ≈ ln(r / ln(1/α)) for large r, and no v can exceed it
    assert float(saturation_ceiling(10**5, alpha)) == pytest.approx(
        np.log(1e5 / np.log(1 / alpha)), abs=1e-3
    )
    v = np.arange(763)
    assert np.all(theta_lb(762, v, alpha) <= saturation_ceiling(762, alpha) + 1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_rejects_agrees_with_closed_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r = rng.integers(1, 200_000, 5000)
    v = np.minimum(r, (r * rng.uniform(0.4, 1.0, r.size)).astype(np.int64))
    alpha = 1e-6
    exact = theta_lb(r, v, alpha)
    for theta in (0.0, 0.5, 2.0):
        far = np.abs(exact - theta) > 1e-7  # away from exact ties, the verdicts must agree
        np.testing.assert_array_equal(
            rejects(r, v, theta=theta, alpha=alpha)[far], (exact > theta)[far]
        )


def test_max_precision_allowed_brackets_the_bound() -> None:
    for r, v, alpha in _random_cases(3, 100):
        bound = float(theta_lb(r, v, alpha))
        if bound == 0.0:
            continue
        assert v / r <= float(max_precision_allowed(r, theta=bound + 1e-6, alpha=alpha))
        assert v / r > float(max_precision_allowed(r, theta=bound - 1e-6, alpha=alpha))


def test_invalid_counts_and_alpha_raise() -> None:
    with pytest.raises(ValueError, match="0 <= v <= r"):
        theta_lb(5, 6, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        theta_lb(5, 5, 0.7)
