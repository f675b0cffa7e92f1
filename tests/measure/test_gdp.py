"""μ̃ on a GDP claim's scale (docs/SPEC.md §2.8): the f-DP one-run test, its null tests on
simulated Gaussian mechanisms of known μ, and the report section."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from panoramia.measure import measure, rmrn, theta_lb
from panoramia.measure.gdp import gdp_bound, mu_lb, rejects
from panoramia.report.gdp import gdp_section


def _largest_rejected_c(k: int, v: int, m: int, alpha: float) -> float:
    """The largest c whose H(c, μ = 0) the f-DP recursion rejects (bisection to 1e-4; the
    test is monotone in c)."""
    low, high = 0.0, 8.0
    while high - low > 1e-4:
        middle = (low + high) / 2
        if rejects(np.array([k]), np.array([v]), m=m, alpha=alpha, c=middle, mu=0.0)[0]:
            low = middle
        else:
            high = middle
    return low


@pytest.mark.parametrize(("k", "v", "m"), [(100, 80, 1000), (50, 50, 3750), (1875, 1100, 3750)])
def test_at_mu_zero_the_fdp_test_is_the_exact_binomial_test(k: int, v: int, m: int) -> None:
    """With μ = 0, H(c, 0) is c-closeness alone, whose exact test is the binomial one of
    §2.1: the recursion rejects up to θ_lb and no further (to the grid's step)."""
    alpha = 0.05 / 200
    expected = float(theta_lb(k, v, alpha))
    assert _largest_rejected_c(k, v, m, alpha) == pytest.approx(expected, abs=0.01)


def test_no_guess_right_or_chance_rejects_nothing() -> None:
    k = np.array([0, 100, 100])
    v = np.array([0, 0, 50])
    assert not rejects(k, v, m=1000, alpha=0.05, c=0.0, mu=np.zeros(3)).any()
    assert (mu_lb(k, v, m=1000, alpha=0.05, c=0.0) == 0).all()


def test_a_larger_closeness_leaves_less_to_mu() -> None:
    k, v = np.array([400]), np.array([330])
    bounds = [mu_lb(k, v, m=2000, alpha=1e-3, c=c)[0] for c in (0.0, 0.5, 1.0)]
    assert bounds[0] > bounds[1] > bounds[2] >= 0


def _gaussian_game(mu: float, m: int, rng: np.random.Generator, c: float):
    """m slots with fair coins s; the attack sees a μ-GDP Gaussian of s (z ~ N(μ s, 1)) and,
    when c > 0, x from a one-sided c-close generator (members' u ~ U[0, e^-c], generated
    u ~ U[0, 1]); scores are the exact posteriors. The baseline sees x only."""
    s = rng.integers(0, 2, m)
    z = rng.normal(mu * s, 1.0)
    inside = np.where(s == 1, rng.uniform(0, np.exp(-c), m), rng.uniform(0, 1, m)) <= np.exp(-c)
    baseline = np.where(inside, expit(c), 0.0) * 0.999 + rng.uniform(0, 1e-3, m)
    attack = np.where(inside, expit(c + mu * z - mu**2 / 2), 0.0)
    return s, baseline, attack


@pytest.mark.parametrize(("mu", "c"), [(0.5, 0.0), (1.0, 0.0), (1.0, 1.0)])
def test_a_gaussian_mechanism_of_known_mu_reads_at_most_mu(mu: float, c: float) -> None:
    """The null test: on simulated μ-GDP mechanisms μ̃ ≤ μ in at least 95 % of runs (c = 0:
    RM;RN's bound; c = 1: μ̃ at the baseline's c_lb, as the report computes it)."""
    rng = np.random.default_rng(int(10 * mu + c))
    runs, above = 30, 0
    for _ in range(runs):
        s, baseline, attack = _gaussian_game(mu, 1000, rng, c)
        if c == 0:
            result = rmrn(s, attack)
            table = result.attack.table
            bound = gdp_bound(table.tau, table.r, table.v, m=s.size, alpha=result.alpha, c=0.0)
        else:
            result = measure(s, baseline_scores=baseline, attack_scores=attack)
            table = result.attack.table
            bound = gdp_bound(
                table.tau, table.r, table.v, m=s.size, alpha=result.alpha_per_test,
                c=result.c_lb,
            )  # fmt: skip
        above += bound.mu_lb > mu
    assert above <= 0.05 * runs


def test_a_strong_leak_is_seen_on_the_mu_scale() -> None:
    """Power: a 3-GDP mechanism over 2,000 slots reads μ_lb above 1 (the test is not vacuous)."""
    s, _, attack = _gaussian_game(3.0, 2000, np.random.default_rng(7), 0.0)
    result = rmrn(s, attack)
    table = result.attack.table
    bound = gdp_bound(table.tau, table.r, table.v, m=s.size, alpha=result.alpha, c=0.0)
    assert 1.0 < bound.mu_lb < 3.0
    assert bound.v <= bound.r
    assert bound.tau is not None


def test_the_report_section_sits_beside_the_claim_and_skips_relaxed_tests() -> None:
    s, baseline, attack = _gaussian_game(2.0, 1000, np.random.default_rng(3), 0.5)
    result = measure(s, baseline_scores=baseline, attack_scores=attack)
    reference = rmrn(s, attack)
    section = gdp_section(result, reference, claimed_mu=0.1)
    assert section["game"] == "one-sided"
    assert section["mu_tilde"] == section["attack"]["mu_lb"] > 0
    assert section["mu_tilde_max"] > section["mu_tilde"]
    assert section["attack"]["c"] == pytest.approx(result.c_lb)
    assert section["rmrn"]["c"] == 0
    assert section["rmrn"]["mu_lb"] >= section["mu_tilde"]
    assert section["mu_tilde_above_claim"]
    assert section["rmrn_above_claim"]
    assert "not a lower bound" in section["interpretation"]
    unclaimed = gdp_section(result, None, claimed_mu=None)
    assert unclaimed["claimed_mu"] is None
    assert "mu_tilde_above_claim" not in unclaimed
    relaxed = measure(s, baseline_scores=baseline, attack_scores=attack, delta=1e-5)
    assert "skipped" in gdp_section(relaxed, None, claimed_mu=None)
    split = measure(s, baseline_scores=baseline, attack_scores=attack, thresholds="split:0.5")
    assert "skipped" in gdp_section(split, None, claimed_mu=None)


def _published_recursion(k: int, v: int, m: int, alpha: float, inverse) -> bool:
    """Mahloujifar et al. (2024)'s ``audit_rh_with_cap`` for one (k, v), written as a plain
    loop from the paper, with ``inverse`` the blow-up inverse of the hypothesis' trade-off."""
    r, h = alpha * v / m, alpha * (k - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, inverse(r))
        r = min(r + i / (k - i) * (h_new - h), 1.0)
        h = h_new
    return r + h > k / m


def test_the_vectorised_test_is_the_published_recursion_for_any_c_and_mu() -> None:
    from scipy.stats import norm

    rng = np.random.default_rng(11)
    for _ in range(150):
        m = int(rng.integers(50, 3000))
        k = int(rng.integers(1, m // 2 + 1))
        v = int(rng.integers(0, k + 1))
        alpha, c, mu = (
            float(rng.uniform(1e-5, 0.3)),
            float(rng.uniform(0, 2)),
            float(rng.uniform(0, 3)),
        )

        def inverse(y: float, c: float = c, mu: float = mu) -> float:
            return float(np.exp(-c) * norm.cdf(norm.ppf(y) - mu))

        expected = _published_recursion(k, v, m, alpha, inverse)
        got = rejects(np.array([k]), np.array([v]), m=m, alpha=alpha, c=c, mu=np.array([mu]))
        assert bool(got[0]) == expected, (k, v, m, alpha, c, mu)


def test_mu_lb_is_where_the_test_stops_rejecting() -> None:
    k, v = np.array([300, 120, 60]), np.array([240, 100, 60])
    bounds = mu_lb(k, v, m=2000, alpha=1e-3, c=0.3)
    assert (bounds > 0).all()
    assert rejects(k, v, m=2000, alpha=1e-3, c=0.3, mu=bounds - 1e-3).all()
    assert not rejects(k, v, m=2000, alpha=1e-3, c=0.3, mu=bounds + 1e-3).any()


def test_the_level_holds_on_the_worst_case_mechanism_and_a_wrong_mu_is_rejected() -> None:
    """The exact level: on the mechanism whose trade-off is exactly one-sided c-closeness ⊗
    G_μ (members' u ~ U[0, e^-c], generated u ~ U[0, 1]; z ~ N(μ s, 1)), k member guesses on
    the highest posteriors reject the true H(c, μ) at most α of the time; H(c, μ / 4) is
    rejected most of the time (the test has power, and a blow-up without e^-c or with μ's
    sign flipped would fail one of the two)."""
    rng = np.random.default_rng(5)
    m, k, alpha, c, mu = 400, 40, 0.2, 1.0, 2.0
    runs, true_rejected, wrong_rejected = 300, 0, 0
    for _ in range(runs):
        s, _, attack = _gaussian_game(mu, m, rng, c)
        guessed = np.argsort(-attack, kind="stable")[:k]
        v = np.array([int(s[guessed].sum())])
        true_rejected += rejects(np.array([k]), v, m=m, alpha=alpha, c=c, mu=mu)[0]
        wrong_rejected += rejects(np.array([k]), v, m=m, alpha=alpha, c=c, mu=mu / 4)[0]
    assert true_rejected <= alpha * runs
    assert wrong_rejected >= 0.5 * runs
