"""``panoramia account …`` and ``panoramia calibrate``: the claimed guarantee, from the CLI.

DP-SGD options are checked against the accountant's limits (:mod:`panoramia.accounting.dpsgd`:
σ in ``NOISE_MULTIPLIER_RANGE``, at most ``MAX_STEPS`` steps, a bounded privacy-loss span)
before anything is computed; a value out of range is one line naming the option, exit 2.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import typer

from panoramia.cli.common import exits_on_input_error, print_json
from panoramia.errors import InputError

if TYPE_CHECKING:
    from panoramia.accounting.claims import DpSgdClaim, EpsDeltaClaim
    from panoramia.accounting.run_count import RunCount

account = typer.Typer(help="What a declared guarantee implies (ε, f, μ*, advantage).")

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
SampleRate = Annotated[float, typer.Option("--sample-rate", help="Poisson sampling rate q = B/N.")]
Steps = Annotated[int, typer.Option(help="Number of noisy steps T.")]


def _check_steps(steps: int | None, epochs: float | None = None) -> None:
    """InputError naming the option when T or the epochs exceed the accounted steps."""
    from panoramia.accounting.dpsgd import MAX_STEPS

    if steps is not None and steps > MAX_STEPS:
        raise InputError(f"--steps: {steps} is more than the {MAX_STEPS:,} steps accounted")
    if epochs is not None and not (math.isfinite(epochs) and epochs <= MAX_STEPS):
        raise InputError(f"--epochs: {epochs:g} is more than the {MAX_STEPS:,} accounted")


def _dpsgd_claim(noise_multiplier: float, **options: object) -> DpSgdClaim:
    """``DpSgdClaim.single_phase`` with its options checked against the accountant's limits,
    each error naming its option: T and the epochs first, then the claim's own checks (σ > 0,
    q in (0, 1], …; T = ⌈epochs/q⌉ beyond what a float holds names both options), then σ in
    ``NOISE_MULTIPLIER_RANGE``. The span of the privacy loss is checked when it is accounted."""
    from panoramia.accounting.claims import DpSgdClaim
    from panoramia.accounting.dpsgd import MAX_STEPS, NOISE_MULTIPLIER_RANGE

    too_many = f"--epochs/--sample-rate: T = ⌈epochs/q⌉ is more than the {MAX_STEPS:,} steps"
    _check_steps(options.get("steps"), options.get("epochs"))  # type: ignore[arg-type]
    try:
        claim = DpSgdClaim.single_phase(noise_multiplier, **options)  # type: ignore[arg-type]
    except OverflowError:
        raise InputError(f"{too_many} accounted") from None
    low, high = NOISE_MULTIPLIER_RANGE
    if not low <= noise_multiplier <= high:
        raise InputError(
            f"--noise-multiplier: σ = {noise_multiplier:g} is outside the accounted range "
            f"[{low:g}, {high:g}]"
        )
    if claim.phases[0].steps > MAX_STEPS:
        raise InputError(f"{too_many} accounted, got {claim.phases[0].steps:.3g}")
    return claim


def _print_summary(document: dict) -> None:
    for name in ("epsilons", "rdp_epsilons"):
        if document[name]:
            label = "ε (PLD)" if name == "epsilons" else "ε (RDP, looser; as papers print)"
            values = ", ".join(f"δ={d}: {e:.4f}" for d, e in document[name].items())
            typer.echo(f"{label}: {values}")
    if document["mu"] is not None:
        typer.echo(
            f"μ* = {document['mu']:.4f}, regret Δ = {document['regret']:.2e} "
            f"(Tier {document['tier']})"
        )
    if document["gaussian_equivalent_mu"] is not None:
        typer.echo(
            f"Gaussian-equivalent μ (an aside, not a GDP guarantee): "
            f"{document['gaussian_equivalent_mu']:.4f}"
        )
    if document["advantage"] is not None:
        typer.echo(
            f"advantage η = {document['advantage']:.4f}: no attack is more than "
            f"{100 * document['max_attack_accuracy']:.2f} % accurate on a balanced guess"
        )
    for alpha, tpr in document["tpr_ceilings"].items():
        typer.echo(f"no membership attack exceeds TPR {tpr:.4f} at FPR {alpha}")
    if document["tier"] == "II" or document["mu"] is None:
        table = ", ".join(f"f({a}) = {b:.4g}" for a, b in document["tier_table"].items())
        typer.echo(f"trade-off curve: {table}")
    for note in document["notes"]:
        typer.echo(f"note: {note}")


@account.command()
@exits_on_input_error
def dpsgd(
    noise_multiplier: Annotated[
        float, typer.Option("--noise-multiplier", help="σ: noise std / clipping norm.")
    ],
    steps: Annotated[int | None, typer.Option(help="Number of steps T.")] = None,
    epochs: Annotated[float | None, typer.Option(help="Epochs (T = ⌈epochs/q⌉).")] = None,
    sample_rate: Annotated[
        float | None, typer.Option("--sample-rate", help="Poisson sampling rate q = B/N.")
    ] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="B (with N).")] = None,
    dataset_size: Annotated[
        int | None, typer.Option("--dataset-size", help="N (adds δ = 1/N).")
    ] = None,
    neighbouring: Annotated[str, typer.Option(help="add_remove or replace_one.")] = "add_remove",
    delta: Annotated[
        list[float] | None, typer.Option(help="Extra δ at which to report ε (repeatable).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """ε(δ), the trade-off curve, μ* with its regret, advantage and TPR ceilings of DP-SGD.

    Accounted: σ in [0.1, 10⁴], T ≤ 10⁹ and a privacy-loss span of at most 1000 nats (beyond
    it ε is in the hundreds or more); other values exit with status 2 and one line."""
    from panoramia.accounting.summary import summarize_claim

    claim = _dpsgd_claim(
        noise_multiplier, sample_rate=sample_rate, batch_size=batch_size,
        dataset_size=dataset_size, steps=steps, epochs=epochs, neighbouring=neighbouring,
    )  # fmt: skip
    summary = summarize_claim(claim, extra_deltas=tuple(delta or ()))
    document = summary.to_dict()
    if as_json:
        print_json(document)
    else:
        _print_summary(document)


@account.command("eps-delta")
@exits_on_input_error
def eps_delta(
    epsilon: Annotated[float, typer.Option(help="Declared ε.")],
    delta: Annotated[float, typer.Option(help="Declared δ.")],
    as_json: AsJson = False,
) -> None:
    """What a bare (ε, δ) implies: f_{ε,δ}, the advantage bound, TPR ceilings (no μ)."""
    from panoramia.accounting.claims import EpsDeltaClaim
    from panoramia.accounting.summary import summarize_claim

    document = summarize_claim(EpsDeltaClaim(epsilon, delta)).to_dict()
    if as_json:
        print_json(document)
    else:
        _print_summary(document)


def _run_count(
    runs: int | None,
    tnb_eta: float | None,
    tnb_gamma: float | None,
    geometric_mean: float | None,
    poisson: float | None,
    binomial_n: int | None,
    binomial_p: float | None,
) -> RunCount:
    from panoramia.accounting.run_count import (
        BinomialRuns,
        FixedRuns,
        PoissonRuns,
        TruncatedNegativeBinomial,
    )

    given = {
        "--runs": runs is not None,
        "--tnb-eta/--tnb-gamma": tnb_eta is not None or tnb_gamma is not None,
        "--geometric-mean": geometric_mean is not None,
        "--poisson": poisson is not None,
        "--binomial-n/--binomial-p": binomial_n is not None or binomial_p is not None,
    }
    if sum(given.values()) != 1:
        raise InputError(f"tuning: give exactly one law of the number of runs: {', '.join(given)}")
    if runs is not None:
        return FixedRuns(runs)
    if given["--tnb-eta/--tnb-gamma"]:
        if tnb_eta is None or tnb_gamma is None:
            raise InputError("tuning: a TNB law needs both --tnb-eta and --tnb-gamma")
        return TruncatedNegativeBinomial(tnb_eta, tnb_gamma)
    if geometric_mean is not None:
        return TruncatedNegativeBinomial.geometric(geometric_mean)
    if poisson is not None:
        return PoissonRuns(poisson)
    if binomial_n is None or binomial_p is None:
        raise InputError("tuning: a binomial law needs both --binomial-n and --binomial-p")
    return BinomialRuns(binomial_n, binomial_p)


@account.command()
@exits_on_input_error
def tuning(
    runs: Annotated[int | None, typer.Option(help="A fixed number k of runs tried.")] = None,
    tnb_eta: Annotated[float | None, typer.Option("--tnb-eta", help="TNB η (> −1).")] = None,
    tnb_gamma: Annotated[float | None, typer.Option("--tnb-gamma", help="TNB γ in (0, 1).")] = None,
    geometric_mean: Annotated[
        float | None, typer.Option("--geometric-mean", help="Geometric K with this mean.")
    ] = None,
    poisson: Annotated[float | None, typer.Option(help="Poisson K with this rate λ.")] = None,
    binomial_n: Annotated[int | None, typer.Option("--binomial-n", help="Binomial n.")] = None,
    binomial_p: Annotated[float | None, typer.Option("--binomial-p", help="Binomial p.")] = None,
    noise_multiplier: Annotated[
        float | None, typer.Option("--noise-multiplier", help="One run: DP-SGD σ.")
    ] = None,
    sample_rate: Annotated[
        float | None, typer.Option("--sample-rate", help="One run: DP-SGD q.")
    ] = None,
    steps: Annotated[int | None, typer.Option(help="One run: DP-SGD steps T.")] = None,
    epsilon: Annotated[
        float | None, typer.Option(help="One run: a declared ε (instead of DP-SGD).")
    ] = None,
    run_delta: Annotated[
        float, typer.Option("--run-delta", help="One run: the δ of --epsilon (0: pure).")
    ] = 0.0,
    delta: Annotated[
        list[float] | None, typer.Option(help="δ of the tuned ε (repeatable; default 1e-5, 1e-6).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """The ε of releasing the best of K runs: single-run ε, every bound, tuned ε, overhead."""
    from panoramia.accounting.claims import EpsDeltaClaim
    from panoramia.accounting.summary import DELTAS
    from panoramia.accounting.tuning import run_privacy_from_claim, tuned_guarantee

    law = _run_count(runs, tnb_eta, tnb_gamma, geometric_mean, poisson, binomial_n, binomial_p)
    if (epsilon is None) == (noise_multiplier is None):
        raise InputError("tuning: describe one run by --epsilon or by DP-SGD --noise-multiplier")
    claim: EpsDeltaClaim | DpSgdClaim
    if epsilon is not None:
        claim = EpsDeltaClaim(epsilon, run_delta, law)
    else:
        assert noise_multiplier is not None  # one of the two, checked above
        if sample_rate is None or steps is None:
            raise InputError("tuning: a DP-SGD run needs --sample-rate and --steps")
        claim = _dpsgd_claim(noise_multiplier, sample_rate=sample_rate, steps=steps, tuning=law)
    base = run_privacy_from_claim(claim)
    results = [tuned_guarantee(base, law, d).to_dict() for d in (delta or DELTAS)]
    if as_json:
        print_json({"claim": claim.to_dict(), "tuned": results})
        return
    typer.echo(f"{base.label}, released as the best of {law.describe()} (E[K] = {law.mean:.4g})")
    for result in results:
        typer.echo(f"δ = {result['delta']:g}: single run ε = {result['single_run_epsilon']:.4f}")
        for bound in result["bounds"]:
            if bound["certified"]:
                typer.echo(f"  {bound['name']}: ε ≤ {bound['epsilon']:.4f}")
            else:
                typer.echo(f"  {bound['name']}: ε ≈ {bound['epsilon']:.4f} (NOT certified)")
        typer.echo(
            f"  tuned ε = {result['tuned_epsilon']:.4f} "
            f"(overhead +{result['overhead']:.4f} over one run)"
        )


def _dpsgd_run(
    sample_rate: float | None,
    steps: int | None,
    epochs: float | None,
    batch_size: int | None,
    dataset_size: int | None,
) -> tuple[float, int]:
    """(q, T) from --sample-rate and --steps, or from --epochs, --batch-size and
    --dataset-size (q = B/N, T = ⌈epochs · N / B⌉); InputError naming what is missing."""
    by_rate = sample_rate is not None or steps is not None
    by_epochs = any(v is not None for v in (epochs, batch_size, dataset_size))
    if by_rate == by_epochs:
        raise InputError(
            "calibrate: give --sample-rate and --steps, or --epochs, --batch-size and "
            "--dataset-size"
        )
    if by_rate:
        if sample_rate is None or steps is None:
            raise InputError("calibrate: --sample-rate and --steps go together")
        return sample_rate, steps
    if epochs is None or batch_size is None or dataset_size is None:
        raise InputError("calibrate: --epochs, --batch-size and --dataset-size go together")
    if not (0 < batch_size <= dataset_size):
        raise InputError(
            f"--batch-size: must be in [1, --dataset-size = {dataset_size}], got {batch_size}"
        )
    if not (math.isfinite(epochs) and epochs > 0):
        raise InputError(f"--epochs: must be a positive number, got {epochs}")
    _check_steps(None, epochs * dataset_size / batch_size)
    from panoramia.accounting.claims import DpSgdClaim

    phase = DpSgdClaim.single_phase(  # q and T counted as every claim counts them
        1.0, batch_size=batch_size, dataset_size=dataset_size, epochs=epochs
    ).phases[0]
    return phase.sample_rate, phase.steps


@exits_on_input_error
def calibrate(
    sample_rate: Annotated[
        float | None, typer.Option("--sample-rate", help="Poisson sampling rate q = B/N.")
    ] = None,
    steps: Annotated[int | None, typer.Option(help="Number of noisy steps T.")] = None,
    epochs: Annotated[
        float | None, typer.Option(help="Epochs (with --batch-size and --dataset-size).")
    ] = None,
    batch_size: Annotated[int | None, typer.Option(help="Expected batch size B.")] = None,
    dataset_size: Annotated[int | None, typer.Option(help="Training examples N.")] = None,
    target_advantage: Annotated[
        float | None, typer.Option("--target-advantage", help="Largest allowed advantage η.")
    ] = None,
    target_tpr: Annotated[
        float | None, typer.Option("--target-tpr", help="Largest allowed TPR at --at-fpr.")
    ] = None,
    at_fpr: Annotated[float | None, typer.Option("--at-fpr", help="FPR of --target-tpr.")] = None,
    delta: Annotated[float, typer.Option(help="δ of the ε that σ implies.")] = 1e-5,
    as_json: AsJson = False,
) -> None:
    """The DP-SGD noise multiplier σ that keeps every membership attack under a risk target:
    an advantage η, or a TPR at an FPR (attack-aware calibration, Kulynych et al.). The run
    is q and T, or epochs, batch size and dataset size."""
    import time

    from panoramia.accounting.calibration import calibrate_dpsgd

    if not 0 < delta < 1:
        raise InputError(f"--delta: must be in (0, 1), got {delta}")
    sample_rate, steps = _dpsgd_run(sample_rate, steps, epochs, batch_size, dataset_size)
    _check_steps(steps)
    started = time.perf_counter()

    def progress(line: str) -> None:  # only when it takes a while
        if time.perf_counter() - started > 2:
            typer.echo(f"calibrate: {line} ({time.perf_counter() - started:.0f} s)", err=True)

    result = calibrate_dpsgd(
        sample_rate=sample_rate, steps=steps, target_advantage=target_advantage,
        target_tpr=target_tpr, at_fpr=at_fpr, delta=delta, progress=progress,
    )  # fmt: skip
    if as_json:
        print_json(result.to_dict() | {"sample_rate": sample_rate, "steps": steps})
        return
    typer.echo(f"σ = {result.noise_multiplier:.4f}  (q = {sample_rate:g}, T = {steps:,})")
    typer.echo(f"advantage η = {result.advantage:.4f}")
    if result.tpr_at_fpr is not None:
        typer.echo(f"TPR at FPR {at_fpr}: {result.tpr_at_fpr:.4f}")
    typer.echo(f"ε = {result.epsilon:.4f} at δ = {result.delta:g} (PLD)")


def register_accounting_commands(app: typer.Typer) -> None:
    app.add_typer(account, name="account")
    app.command()(calibrate)
