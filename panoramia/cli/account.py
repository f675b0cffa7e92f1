"""``panoramia account …`` and ``panoramia calibrate``: the claimed guarantee, from the CLI."""

from __future__ import annotations

from typing import Annotated

import typer

from panoramia.cli.common import exits_on_input_error, print_json

account = typer.Typer(help="What a declared guarantee implies (ε, f, μ*, advantage).")

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
SampleRate = Annotated[float, typer.Option("--sample-rate", help="Poisson sampling rate q = B/N.")]
Steps = Annotated[int, typer.Option(help="Number of noisy steps T.")]


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
    """ε(δ), the trade-off curve, μ* with its regret, advantage and TPR ceilings of DP-SGD."""
    from panoramia.accounting.claims import DpSgdClaim
    from panoramia.accounting.summary import summarize_claim

    claim = DpSgdClaim.single_phase(
        noise_multiplier, sample_rate=sample_rate, batch_size=batch_size,
        dataset_size=dataset_size, steps=steps, epochs=epochs,
        neighbouring=neighbouring,  # type: ignore[arg-type]
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


@exits_on_input_error
def calibrate(
    sample_rate: SampleRate,
    steps: Steps,
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
    """The DP-SGD noise multiplier σ that meets an attack-risk target (seed 003)."""
    from panoramia.accounting.calibration import calibrate_dpsgd

    result = calibrate_dpsgd(
        sample_rate=sample_rate, steps=steps, target_advantage=target_advantage,
        target_tpr=target_tpr, at_fpr=at_fpr, delta=delta,
    )  # fmt: skip
    if as_json:
        print_json(result.to_dict())
        return
    typer.echo(f"σ = {result.noise_multiplier:.4f}")
    typer.echo(f"advantage η = {result.advantage:.4f}")
    if result.tpr_at_fpr is not None:
        typer.echo(f"TPR at FPR {at_fpr}: {result.tpr_at_fpr:.4f}")
    typer.echo(f"ε = {result.epsilon:.4f} at δ = {result.delta:g} (PLD)")


def register_accounting_commands(app: typer.Typer) -> None:
    app.add_typer(account, name="account")
    app.command()(calibrate)
