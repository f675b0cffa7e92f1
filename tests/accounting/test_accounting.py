"""The claimed guarantee: closed forms of GDP, the PLD path against them, the docs/ACCOUNTING.md
test vectors, bad claims, the consistency check on null and leaky attacks, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from panoramia.accounting.claims import DpSgdClaim, EpsDeltaClaim, NoClaim, claim_from_dict
from panoramia.accounting.consistency import (
    check_consistency,
    clopper_pearson_upper,
    epsilon_from_error_rates,
)
from panoramia.accounting.summary import summarize_claim
from panoramia.accounting.tradeoff import (
    TradeoffCurve,
    advantage_tradeoff,
    eps_delta_curve,
    eps_delta_tradeoff,
    epsilon_for_advantage,
    gdp_advantage,
    gdp_delta,
    gdp_tradeoff,
    kairouz_advantage,
    mu_for_advantage,
    mu_for_error_rates,
    mu_from_pure_dp,
    symmetric_curve_from_pld,
)
from panoramia.cli import app
from panoramia.errors import InputError


def gaussian_pld(sigma: float) -> object:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_gaussian_mechanism(standard_deviation=sigma, use_connect_dots=True)


@pytest.mark.parametrize(("mu", "advantage"), [(0.25, 0.09948), (0.5, 0.19741), (1, 0.38292),
                                               (2, 0.68269)])  # fmt: skip
def test_gdp_advantage_vectors(mu: float, advantage: float) -> None:
    assert gdp_advantage(mu) == pytest.approx(advantage, abs=1e-5)
    assert mu_for_advantage(advantage) == pytest.approx(mu, abs=1e-4)


def test_calibration_closed_forms() -> None:
    assert mu_for_advantage(0.01) == pytest.approx(0.02507, abs=1e-5)
    assert mu_for_advantage(0.1) == pytest.approx(0.25132, abs=1e-5)
    assert mu_for_advantage(0.5) == pytest.approx(1.34898, abs=1e-5)
    assert mu_for_error_rates(0.1, 0.5) == pytest.approx(1.2816, abs=1e-4)
    assert mu_for_error_rates(0.01, 0.9) == pytest.approx(1.0448, abs=1e-4)
    assert mu_for_error_rates(0.01, 0.5) == pytest.approx(2.3263, abs=1e-4)


def test_kairouz_and_eps_delta_curve() -> None:
    assert kairouz_advantage(1, 1e-5) == pytest.approx(0.46212, abs=1e-5)
    assert kairouz_advantage(8, 1e-5) == pytest.approx(0.99933, abs=1e-5)
    # riskcal's docstring example: β for (ε, δ) = (1, 0.001) at α = 0.8.
    assert float(eps_delta_tradeoff(0.8, 1.0, 0.001)) == pytest.approx(0.073, abs=5e-4)
    curve = eps_delta_curve(1.0, 1e-3)
    alphas = np.linspace(0, 1, 1001)
    np.testing.assert_allclose(curve(alphas), eps_delta_tradeoff(alphas, 1.0, 1e-3), atol=1e-12)
    assert curve.advantage() == pytest.approx(kairouz_advantage(1.0, 1e-3), abs=1e-12)
    # f_{ε,δ} is symmetric: f(f(α)) = α on [0, 1 − δ].
    inner = alphas[alphas <= 1 - 1e-3]
    np.testing.assert_allclose(curve(curve(inner)), inner, atol=1e-9)


def test_gdp_curve_and_profile_are_consistent() -> None:
    """δ_μ(ε) is the largest gap 1 − e^ε α − f_μ(α) (the (ε, δ) ↔ f duality)."""
    alphas = np.geomspace(1e-9, 1 - 1e-9, 200_001)
    for mu, epsilon in [(0.5, 0.2), (1.0, 1.0), (2.0, 3.0)]:
        gap = np.max(1 - np.exp(epsilon) * alphas - gdp_tradeoff(alphas, mu))
        assert gap == pytest.approx(float(gdp_delta(epsilon, mu)), abs=1e-6)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
def test_gaussian_mechanism_pld_path_matches_closed_form(sigma: float) -> None:
    pld = gaussian_pld(sigma)
    curve = symmetric_curve_from_pld(pld)
    mu = curve.mu_star()
    assert mu == pytest.approx(1 / sigma, abs=1e-4)
    assert curve.regret(mu) <= 1e-7
    alphas = np.array([1e-3, 1e-2, 0.1, 0.3, 0.5])
    np.testing.assert_allclose(curve(alphas), gdp_tradeoff(alphas, 1 / sigma), atol=1e-4)
    assert pld.get_delta_for_epsilon(0.0) == pytest.approx(gdp_advantage(1 / sigma), abs=1e-4)


def test_randomized_response_is_tier_two() -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    epsilon = 1.0
    pld = pld_lib.from_randomized_response(
        noise_parameter=2 / (np.e**epsilon + 1), num_buckets=2, value_discretization_interval=1e-4
    )
    curve = symmetric_curve_from_pld(pld)
    mu = curve.mu_star()
    assert mu == pytest.approx(mu_from_pure_dp(epsilon), abs=1e-4)
    assert mu == pytest.approx(1.232035, abs=1e-5)
    assert curve.regret(mu) == pytest.approx(0.0575, abs=5e-4)


def test_mu_star_of_a_hand_made_curve_is_the_tightest_gaussian_below_it() -> None:
    alphas = np.array([0.0, 0.05, 0.2, 0.5, 1.0])
    betas = np.array([1.0, 0.6, 0.3, 0.1, 0.0])
    curve = TradeoffCurve(alphas, betas)
    mu = curve.mu_star()
    grid = np.linspace(1e-6, 1 - 1e-6, 100_001)
    assert np.all(gdp_tradeoff(grid, mu) <= curve(grid) + 1e-9)
    assert np.any(gdp_tradeoff(alphas[1:-1], mu - 1e-3) > betas[1:-1])


def test_dpsgd_summary_is_internally_consistent() -> None:
    claim = DpSgdClaim.single_phase(1.0, sample_rate=0.01, steps=100, dataset_size=1000)
    summary = summarize_claim(claim)
    assert set(summary.epsilons) == {"1e-05", "1e-06", "0.001"}
    for key, epsilon in summary.epsilons.items():
        assert summary.rdp_epsilons is not None
        assert summary.rdp_epsilons[key] >= epsilon  # RDP is the looser bound
    assert summary.tier == ("I" if summary.regret < 0.01 else "II")
    assert summary.advantage == pytest.approx(summary.curve.advantage(), abs=1e-3)
    assert summary.tpr_ceilings["0.01"] == pytest.approx(1 - summary.curve(0.01))
    # A composition of more steps gives more leakage everywhere.
    longer = summarize_claim(DpSgdClaim.single_phase(1.0, sample_rate=0.01, steps=400))
    assert longer.mu > summary.mu
    assert longer.epsilons["1e-05"] > summary.epsilons["1e-05"]
    document = json.loads(json.dumps(summary.to_dict()))
    assert document["claim"]["phases"][0]["steps"] == 100
    assert claim_from_dict(document["claim"]) == claim


def test_phases_compose_like_one_long_run() -> None:
    one = DpSgdClaim.single_phase(1.5, sample_rate=0.02, steps=200)
    two = DpSgdClaim((one.phases[0].__class__(1.5, 0.02, 100),) * 2)
    assert summarize_claim(two).epsilons["1e-05"] == pytest.approx(
        summarize_claim(one).epsilons["1e-05"], rel=1e-6
    )


def test_bare_eps_delta_claim_gives_no_mu() -> None:
    summary = summarize_claim(EpsDeltaClaim(1.0, 1e-5))
    assert summary.mu is None
    assert summary.tier is None
    assert summary.gaussian_equivalent_mu == pytest.approx(
        mu_for_advantage(kairouz_advantage(1.0, 1e-5))
    )
    assert any("no GDP μ" in note for note in summary.notes)
    assert summarize_claim(NoClaim()).curve is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"noise_multiplier": 0.0, "sample_rate": 0.01, "steps": 10}, "σ must be > 0"),
        ({"noise_multiplier": -1.0, "sample_rate": 0.01, "steps": 10}, "σ must be > 0"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.0, "steps": 10}, "q must be in (0, 1]"),
        ({"noise_multiplier": 1.0, "sample_rate": 1.5, "steps": 10}, "q must be in (0, 1]"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": -3}, "positive integer"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.01}, "exactly one of steps"),
        ({"noise_multiplier": 1.0, "steps": 10}, "batch size B and N"),
        ({"noise_multiplier": 1.0, "batch_size": 10, "dataset_size": 5, "steps": 1}, "B ≤ N"),
    ],
)
def test_bad_claims_are_rejected(kwargs: dict, message: str) -> None:
    sigma = kwargs.pop("noise_multiplier")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DpSgdClaim.single_phase(sigma, **kwargs)


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "message"),
    [
        (1e308, 0.01, 100, "outside the accounted range"),
        (1e-300, 0.01, 100, "outside the accounted range"),
        (1e-3, 0.01, 100, "outside the accounted range"),
        (1.0, 0.01, 10**12, "steps T is more than"),
        (0.1, 0.01, 10**7, "privacy loss spans"),
        (1.0, 0.01, 10**9, "privacy loss spans"),
    ],
)
def test_claims_beyond_the_accountant_are_refused_before_allocating(
    sigma: float, q: float, steps: int, message: str
) -> None:
    """Each of these once overflowed or asked for 38 GiB to 2 TiB; now one InputError, at once
    (both accounts check first)."""
    from panoramia.accounting.dpsgd import dpsgd_pld, rdp_epsilons

    claim = DpSgdClaim.single_phase(sigma, sample_rate=q, steps=steps)
    with pytest.raises(InputError, match=message):
        dpsgd_pld(claim)
    with pytest.raises(InputError, match=message):
        rdp_epsilons(claim, [1e-5])


def test_loss_span_estimate_tracks_the_pld() -> None:
    """The span estimate is of the order of the ε it stands for, on both sides of the limit."""
    from panoramia.accounting.dpsgd import MAX_LOSS_SPAN, check_accountable, loss_span

    typical = DpSgdClaim.single_phase(1.0, sample_rate=0.01, steps=10_000)
    assert loss_span(typical) < 20  # one step's span dominates: 10.5 nats
    check_accountable(typical)
    long_run = DpSgdClaim.single_phase(1.0, sample_rate=0.01, steps=10**7)
    assert 500 < loss_span(long_run) < MAX_LOSS_SPAN  # ε ≈ 1015 at δ = 1e-5 (PLD)
    two = DpSgdClaim(long_run.phases * 2)
    assert loss_span(two) == pytest.approx(2 * loss_span(long_run))
    with pytest.raises(InputError, match="privacy loss spans"):
        check_accountable(two)


def test_bad_stored_claims_are_rejected() -> None:
    with pytest.raises(InputError, match="kind must be"):
        claim_from_dict({"kind": "magic"})
    with pytest.raises(InputError, match="malformed 'dpsgd'"):
        claim_from_dict({"kind": "dpsgd"})
    with pytest.raises(InputError, match="δ must be in"):
        claim_from_dict({"kind": "eps_delta", "epsilon": 1, "delta": 2})
    assert (
        DpSgdClaim.single_phase(1.0, batch_size=100, dataset_size=10_000, epochs=2).phases[0].steps
        == 200
    )


def test_clopper_pearson_upper_matches_its_definition() -> None:
    from scipy.stats import binom

    k, n, level = np.array([0, 3, 10, 20]), np.array([20, 20, 20, 20]), 0.05
    upper = clopper_pearson_upper(k, n, level)
    for ki, ni, p in zip(k, n, upper, strict=True):
        if ki < ni:
            assert binom.cdf(ki, ni, p) == pytest.approx(level, abs=1e-9)
        else:
            assert p == 1.0


def test_consistency_null_attack_never_flags_a_strong_claim() -> None:
    """Scores independent of membership: no operating point beats even μ = 0.1."""
    curve = symmetric_curve_from_pld(gaussian_pld(10.0))
    flagged = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        membership = rng.permutation(np.r_[np.ones(500), np.zeros(500)])
        check = check_consistency(curve, rng.normal(size=1000), membership)
        flagged += not check.consistent
    assert flagged <= 1  # family-wise error ≤ 5 % per audit


def test_consistency_flags_an_attack_that_beats_the_claim() -> None:
    rng = np.random.default_rng(0)
    membership = np.r_[np.ones(1000), np.zeros(1000)]
    scores = rng.normal(size=2000) + 3.0 * membership  # a μ = 3 attack
    weak_claim = symmetric_curve_from_pld(gaussian_pld(2.0))  # μ = 0.5
    check = check_consistency(weak_claim, scores, membership)
    assert not check.consistent
    assert 2.0 < check.leakage_mu < 3.0  # bounded, hence below the true 3
    assert check.to_dict()["violations"] == check.violations.size
    loose_claim = symmetric_curve_from_pld(gaussian_pld(0.2))  # μ = 5
    assert check_consistency(loose_claim, scores, membership).consistent


def test_consistency_rejects_bad_scores() -> None:
    curve = eps_delta_curve(1.0, 0.0)
    with pytest.raises(InputError, match="NaN"):
        check_consistency(curve, np.array([0.1, np.nan]), np.array([1, 0]))
    with pytest.raises(InputError, match="both members and non-members"):
        check_consistency(curve, np.array([0.1, 0.2]), np.array([1, 1]))


def test_cli_account_and_calibrate() -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["account", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01",
              "--steps", "100", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["mu"] > 0
    assert document["tier"] in ("I", "II")
    bad = runner.invoke(
        app, ["account", "dpsgd", "--noise-multiplier", "0", "--sample-rate", "0.01",
              "--steps", "100"],
    )  # fmt: skip
    assert bad.exit_code == 2
    assert "σ must be > 0" in bad.output
    text = runner.invoke(app, ["account", "eps-delta", "--epsilon", "1", "--delta", "1e-5"])
    assert text.exit_code == 0
    assert "no membership attack exceeds TPR" in text.output


def test_calibration_without_subsampling_matches_the_gaussian_closed_form() -> None:
    """q = 1, T = 4: DP-SGD is the Gaussian mechanism with μ = 2/σ."""
    runner = CliRunner()
    result = runner.invoke(
        app, ["calibrate", "--target-advantage", "0.2", "--sample-rate", "1", "--steps", "4",
              "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    exact = 2 / mu_for_advantage(0.2)  # the smallest σ; the search returns one ≤ 1 % above
    assert exact * (1 - 1e-3) <= document["noise_multiplier"] <= exact * 1.01
    assert document["advantage"] <= 0.2 + 1e-4
    from panoramia.accounting.calibration import calibrate_dpsgd

    tpr = calibrate_dpsgd(sample_rate=1.0, steps=4, target_tpr=0.5, at_fpr=0.1)
    exact = 2 / mu_for_error_rates(0.1, 0.5)
    assert exact * (1 - 1e-3) <= tpr.noise_multiplier <= exact * 1.01
    assert tpr.tpr_at_fpr <= 0.5 + 1e-4
    with pytest.raises(InputError, match="exactly one of"):
        calibrate_dpsgd(sample_rate=1.0, steps=4)
    with pytest.raises(InputError, match="target TPR must be in"):
        calibrate_dpsgd(sample_rate=1.0, steps=4, target_tpr=0.05, at_fpr=0.1)


@pytest.mark.slow
def test_dpsgd_calibration_vector_of_accounting_md() -> None:
    """q = 0.001, T = 10,000: σ ≈ 0.704 for advantage 0.1 (slow: many 10⁴-step PLDs)."""
    from panoramia.accounting.calibration import calibrate_dpsgd

    result = calibrate_dpsgd(sample_rate=0.001, steps=10_000, target_advantage=0.1)
    assert 0.702 <= result.noise_multiplier <= 0.704 * 1.01


def test_seed_003_proposition_3_6_example() -> None:
    """Calibrating to advantage η* = 0.5 through (ε, δ*) = (ε*, 1e-5) asks for FNR 0.69999 at
    FPR 0.1 where the advantage target needs only 0.4: Δβ = 0.29999, ε* = 1.0986."""
    epsilon = epsilon_for_advantage(0.5, 1e-5)
    assert epsilon == pytest.approx(1.0986, abs=1e-4)
    assert kairouz_advantage(epsilon, 1e-5) == pytest.approx(0.5)
    gap = eps_delta_tradeoff(0.1, epsilon, 1e-5) - advantage_tradeoff(0.1, 0.5)
    assert float(gap) == pytest.approx(0.29999, abs=1e-5)


def test_epsilon_from_error_rates_matches_riskcal() -> None:
    from riskcal.analysis.conversions import get_epsilon_from_err_rates

    assert float(epsilon_from_error_rates(0.001, 0.8, 0.001)) == pytest.approx(5.293, abs=1e-3)
    rng = np.random.default_rng(0)
    for fpr, fnr in rng.uniform(0.001, 0.5, size=(20, 2)):
        ours = float(epsilon_from_error_rates(fpr, fnr, 1e-5))
        assert ours == pytest.approx(get_epsilon_from_err_rates(1e-5, fpr, fnr), abs=1e-9)


def test_only_real_non_members_can_contradict_a_claim() -> None:
    """Points against generated non-members (attack, baseline) that beat the claimed curve are
    inconclusive; real non-members (RM;RN) that beat it are a violation."""
    from panoramia.accounting.claims import EpsDeltaClaim
    from panoramia.accounting.report_section import claim_section

    rng = np.random.default_rng(0)
    membership = rng.integers(0, 2, 2000)
    separable = membership + rng.normal(0, 0.3, membership.size)
    random = rng.normal(size=membership.size)
    claim = EpsDeltaClaim(0.5, 0.0)
    both = claim_section(claim, {"attack": (separable, membership),
                                 "baseline": (separable, membership)})  # fmt: skip
    assert (both.violated_by, both.inconclusive) == ([], ["attack", "baseline"])
    assert both.banner() is None
    assert "no evidence against the claim (the baseline" in both.note()
    attack_only = claim_section(claim, {"attack": (separable, membership),
                                        "baseline": (random, membership)})  # fmt: skip
    assert (attack_only.violated_by, attack_only.inconclusive) == ([], ["attack"])
    assert attack_only.to_dict()["violation"] is False
    real = claim_section(claim, {"attack": (separable, membership),
                                 "baseline": (separable, membership),
                                 "rmrn": (separable, membership)})  # fmt: skip
    assert real.violated_by == ["rmrn"]
    assert real.banner().startswith("The audit contradicts the declared guarantee")
    assert real.to_dict()["violation"] is True
    calm = claim_section(claim, {"rmrn": (random, membership)})
    assert (calm.violated_by, calm.inconclusive, calm.note()) == ([], [], None)


@pytest.mark.parametrize(
    "law",
    [{"kind": "fixed", "runs": 10**15}, {"kind": "binomial", "trials": 10**6, "probability": 0.5}],
)
def test_tuning_laws_count_at_most_max_runs(law: dict) -> None:
    from panoramia.accounting.run_count import MAX_RUNS, run_count_from_dict

    with pytest.raises(InputError, match=f"at most {MAX_RUNS} runs"):
        run_count_from_dict(law)


@pytest.mark.parametrize(("sample_rate", "steps"), [(0.01, 1000), (0.001, 100), (0.1, 100_000)])
def test_tpr_calibration_is_within_one_percent_of_riskcals_smallest_sigma(
    sample_rate: float, steps: int
) -> None:
    """The returned σ meets the target by riskcal's own trade-off (get_beta_for_dpsgd) and
    σ/1.01 does not: it is the smallest to 1 %. q = 0.01, T = 1000 once failed in gdpnum."""
    from riskcal.calibration.dpsgd import get_beta_for_dpsgd

    from panoramia.accounting.calibration import calibrate_dpsgd

    sigma = calibrate_dpsgd(
        sample_rate=sample_rate, steps=steps, target_tpr=0.05, at_fpr=0.01
    ).noise_multiplier
    assert 1 - get_beta_for_dpsgd(sigma, sample_rate, steps, 0.01) <= 0.05
    assert 1 - get_beta_for_dpsgd(sigma / 1.01, sample_rate, steps, 0.01) > 0.05


def test_calibrate_takes_epochs_batch_and_dataset_size() -> None:
    runner = CliRunner()
    by_epochs = runner.invoke(app, ["calibrate", "--target-tpr", "0.05", "--at-fpr", "0.01",
                                    "--epochs", "10", "--batch-size", "256",
                                    "--dataset-size", "25600", "--json"])  # fmt: skip
    assert by_epochs.exit_code == 0, by_epochs.output
    document = json.loads(by_epochs.stdout)  # progress lines go to stderr
    assert (document["sample_rate"], document["steps"]) == (0.01, 1000)
    half = runner.invoke(app, ["calibrate", "--target-tpr", "0.05", "--at-fpr", "0.01",
                               "--epochs", "10", "--batch-size", "256"])  # fmt: skip
    assert half.exit_code == 2
    assert "--epochs, --batch-size and --dataset-size go together" in half.output


def test_calibrate_counts_steps_as_the_claim_does_and_checks_delta() -> None:
    runner = CliRunner()
    options = ["--epochs", "1.1", "--batch-size", "10", "--dataset-size", "100", "--json"]
    counted = runner.invoke(app, ["calibrate", "--target-advantage", "0.05", *options])
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["steps"] == 11  # ⌈1.1 / 0.1⌉, as `account dpsgd`
    bad = runner.invoke(app, ["calibrate", "--target-advantage", "0.5", "--sample-rate", "0.1",
                              "--steps", "10", "--delta", "0"])  # fmt: skip
    assert bad.exit_code == 2
    assert "--delta: must be in (0, 1)" in bad.output


def test_an_add_remove_claim_is_checked_and_read_on_the_mu_scale_as_replace_one() -> None:
    """The game compares the target trained with a shown member against it trained with a
    hidden one (replace-one, docs/SPEC.md §2.8): the claim section checks an add/remove DP-SGD
    claim through its replace-one account and the μ̃ comparison uses that account's μ*; a
    replace-one claim is checked as it is."""
    from panoramia.accounting.report_section import claim_section
    from panoramia.pipeline.reporting import claimed_mu

    add_remove = DpSgdClaim.single_phase(2.8125, sample_rate=0.0171, steps=1740,
                                         dataset_size=15000)  # fmt: skip
    section = claim_section(add_remove, {})
    checked = section.to_dict()["checked_as"]
    assert checked["neighbouring"] == "replace_one"
    assert section.summary.mu == pytest.approx(0.268, abs=0.005)
    assert claimed_mu(section) == checked["mu"] == pytest.approx(0.507, abs=0.01)
    replace_one = DpSgdClaim.single_phase(
        2.8125, sample_rate=0.0171, steps=1740, dataset_size=15000, neighbouring="replace_one"
    )
    same = claim_section(replace_one, {})
    assert same.to_dict()["checked_as"] is None
    assert claimed_mu(same) == pytest.approx(same.summary.mu)
    assert claimed_mu(claim_section(EpsDeltaClaim(1.0, 1e-5), {})) is None
