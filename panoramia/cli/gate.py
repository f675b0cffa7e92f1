"""``panoramia gate PATH --policy NAME|FILE [--junit out.xml]``: the release gate on a finished
audit (docs/AUDIT.md, "The release gate"). Exit status 0: the gate passed; 1: it failed (one
line per failed rule); 2: bad input (a bad policy, a path that holds no report)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panoramia.cli.common import exits_on_input_error

if TYPE_CHECKING:
    from panoramia.pipeline.gate_policies import NamedPolicy
    from panoramia.pipeline.release_gate import GateResult

PolicyOption = Annotated[
    str,
    typer.Option(
        "--policy", help="A shipped policy (strict, lenient: conf/gates/) or a policy file's path."
    ),
]
JunitOption = Annotated[
    Path | None, typer.Option("--junit", help="Also write the outcome as JUnit XML here.")
]


def named_policy(value: str, *, setting: str) -> NamedPolicy:
    """The policy ``value`` names (:func:`~panoramia.pipeline.gate_policies.load_policy`)."""
    from panoramia.pipeline.gate_policies import load_policy

    return load_policy(value, setting=setting)


def finish(result: GateResult, junit: Path | None) -> None:
    """Print the gate's lines, write its files; exit 1 where it failed."""
    from panoramia.pipeline.release_gate import announce

    status = announce(result, junit)
    if status:
        raise typer.Exit(status)


@exits_on_input_error
def gate(
    path: Annotated[
        Path,
        typer.Argument(
            help="A report.json, a run directory, or a multirun's summary.json or sweep "
            "directory (its pooled verdicts)."
        ),
    ],
    policy: PolicyOption,
    junit: JunitOption = None,
) -> None:
    """Apply a release gate to a finished audit: exit 0 where it passes, 1 where a rule fails
    (one line per failed rule), 2 for bad input."""
    from panoramia.pipeline.release_gate import GateResult, path_outcomes

    named = named_policy(policy, setting="--policy")
    outcomes, _ = path_outcomes(named, path)
    finish(GateResult(named, outcomes), junit)


def register_gate_command(app: typer.Typer) -> None:
    app.command()(gate)
