"""``panoramia models publish|shared|withdraw|participate`` and ``panoramia reports model``:
shared models on the service (docs/SPEC.md §3.3), over the network only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from panoramia.cli.common import (
    exits_on_input_error,
    parse_shared,
    print_json,
    table_console,
)
from panoramia.cli.service import DEFAULT_URL, AsJson, Token, Url, _client
from panoramia.errors import InputError

SharedName = Annotated[
    str,
    typer.Argument(help="The shared model: OWNER/NAME:VERSION (reports model: :VERSION optional)."),
]


def publish(
    upload: Annotated[str, typer.Argument(help="Your model upload (panoramia models upload).")],
    name: Annotated[str, typer.Option("--name", help="The shared model's name.")],
    audience: Annotated[
        str,
        typer.Option(
            help='Who may audit it: names, comma-separated (alice,bob), or "all" (every '
            "contributor of the service); required, there is no default."
        ),
    ],
    version: Annotated[str, typer.Option("--version", help="This version's name.")] = "1",
    claim: Annotated[
        Path | None,
        typer.Option(help="The guarantee you declare: a claims JSON file (docs/ACCOUNTING.md)."),
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Publish one of your model uploads as a shared model version that the contributors of
    its audience audit with their own data; its leakage report is theirs together."""
    declared_claim = None
    if claim is not None:
        try:
            declared_claim = json.loads(claim.read_text())
        except (OSError, ValueError) as error:
            raise InputError(f"--claim: {claim}: not a readable JSON file ({error})") from None
    names = [n.strip() for n in audience.split(",") if n.strip()]
    if not names:
        raise InputError('--audience: give names (alice,bob) or "all"')
    body = {"name": name, "version": version, "upload": upload,
            "audience": "all" if names == ["all"] else names, "claim": declared_claim}  # fmt: skip
    made = _client(url, token).publish_shared(body)
    who = "every contributor" if made.get("audience") == "everyone" else ", ".join(made["names"])
    typer.echo(
        f"Published {made['owner']}/{made['name']}:{made['version']} for {who}. Its leakage "
        f"report: panoramia reports model {made['owner']}/{made['name']}"
    )


def shared_list(as_json: AsJson = False, url: Url = DEFAULT_URL, token: Token = None) -> None:
    """The shared models you may audit, and those you published."""
    rows = _client(url, token).shared_models()
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo("No shared model is open to you. An owner publishes one with "
                   "`panoramia models publish UPLOAD --name NAME`.")  # fmt: skip
        return
    from rich.table import Table

    table = Table("shared model", "kind", "claim", "published", "state", "audience",
                  title="Shared models")  # fmt: skip
    for row in rows:
        state = "withdrawn" if row["withdrawn"] else "open"
        size = row.get("audience_size")
        audience = (
            "yours: " + (", ".join(row["names"] or []) or "everyone") if row["mine"]
            else "every contributor" if size is None else f"{size} named contributor(s)"
        )  # fmt: skip
        table.add_row(f"{row['owner']}/{row['name']}:{row['version']}", row["modality"] or "—",
                      _claim_words(row["claim"]), row["published_at"][:19], state,
                      audience)  # fmt: skip
    table_console().print(table)


def _claim_words(claim: dict | None) -> str:
    if not claim:
        return "none declared"
    kind = claim.get("kind")
    if kind == "eps_delta":
        return f"(ε = {claim.get('epsilon')}, δ = {claim.get('delta')})"
    return str(kind)


def withdraw(
    name: Annotated[str, typer.Argument(help="Your shared model's name.")],
    version: Annotated[str, typer.Option("--version", help="The version to withdraw.")],
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Withdraw a version you published: no new audit may name it (its audits and reports
    stay with their contributors)."""
    client = _client(url, token)
    mine = [r for r in client.shared_models() if r["mine"] and r["name"] == name
            and r["version"] == version]  # fmt: skip
    if not mine:
        raise InputError(f"{name!r} version {version!r}: you published no such version")
    gone = client.withdraw_shared(mine[0]["owner"], name, version)
    typer.echo(f"Withdrew {gone['owner']}/{gone['name']}:{gone['version']}.")


def participate(
    shared: SharedName,
    named: Annotated[
        bool | None,
        typer.Option("--named/--pseudonym", help="Show your name to its owner, or a pseudonym."),
    ] = None,
    withdrawn: Annotated[
        bool | None,
        typer.Option("--withdraw/--rejoin", help="Take your audits out of its report, or back."),
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """How you take part in a shared model version you audited."""
    owner, name, version = parse_shared(shared, setting="SHARED")
    choices = {k: v for k, v in (("named", named), ("withdrawn", withdrawn)) if v is not None}
    found = _client(url, token).participate(owner, name, version or "", **choices)
    who = "your name" if found["named"] else f"your pseudonym {found['pseudonym']!r}"
    counted = "out of" if found["withdrawn"] else "in"
    typer.echo(f"Its owner sees {who}; your audits are {counted} its leakage report.")


def reports_model(
    shared: SharedName, as_json: AsJson = False, url: Url = DEFAULT_URL, token: Token = None
) -> None:
    """A shared model's leakage report: every version side by side (or one), the answer
    first, then the figures; its owner also sees one row per contributor."""
    owner, name, version = parse_shared(shared, setting="SHARED", version_needed=False)
    client = _client(url, token)
    found = client.leakage(owner, name, version)
    versions = [found] if version is not None else found["versions"]
    if as_json:
        print_json(found)
        return
    for line in leakage_lines(owner, name, versions):
        typer.echo(line)
    _figures_table(owner, name, versions)
    for entry in versions:
        if entry.get("rows"):
            _rows_table(entry)


def leakage_lines(owner: str, name: str, versions: list[dict[str, Any]]) -> list[str]:
    """The answer per version, in words: its headline and sentence, or why it is withheld."""
    lines = []
    for entry in versions:
        state = " (withdrawn)" if entry.get("withdrawn") else ""
        head = f"{owner}/{name}:{entry['version']}{state}: "
        verdict = entry.get("verdict")
        if verdict is None:
            lines.append(head + (entry.get("withheld") or "no report"))
        else:
            lines.append(head + verdict["headline"])
            lines.append("  " + verdict["sentence"])
            check = entry.get("claim_check") or {}
            if check.get("declared"):
                lines.append("  " + check["sentence"])
        yours = entry.get("yours")
        if yours:
            found = {True: "found", False: "not found", None: "—"}[yours.get("found")]
            lines.append(f"  Your audit: {yours['runs']} run(s), p = {yours['p_value']:.3f} "
                         f"({found} by the model-level test)")  # fmt: skip
    return lines


def _spread_text(spread: dict | None) -> str:
    if not spread:
        return "—"
    ends = [spread["lowest"], spread["median"], spread["highest"]]
    return " / ".join(f"{end['value']:.2f}" for end in ends) + f" (n = {spread['n']})"


def _figures_table(owner: str, name: str, versions: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table("version", "verdict", "contributors", "runs", "found",
                  "ε̃ lowest / median / highest", "O(1) ε_lb", "claim met",
                  title=f"{owner}/{name}: the versions side by side")  # fmt: skip
    for entry in versions:
        verdict = entry.get("verdict") or {}
        check = entry.get("claim_check") or {}
        met = {True: "yes", False: "no", None: "—"}[check.get("met")]
        table.add_row(entry["version"], verdict.get("level", "withheld"),
                      _count(entry.get("contributors")), _count(entry.get("runs")),
                      _count(verdict.get("found")), _spread_text(entry.get("eps_tilde")),
                      _spread_text(entry.get("o1_eps_lb")), met)  # fmt: skip
    table_console().print(table)


def _count(value: object) -> str:
    return "—" if value is None else str(value)


def _rows_table(entry: dict[str, Any]) -> None:
    from rich.table import Table

    title = f"Version {entry['version']}: its contributors"
    table = Table("contributor", "runs", "level", "p", "found", "ε̃ (interval)", "O(1) ε_lb",
                  "beyond claim", title=title)  # fmt: skip
    for row in entry["rows"]:
        figure = row.get("eps_tilde")
        quoted = "—"
        if figure:
            interval = figure.get("interval")
            quoted = f"{figure['value']:.2f}" + (
                f" ({interval[0]:.2f}–{interval[1]:.2f})" if interval else ""
            )
        o1 = "—" if row.get("o1_eps_lb") is None else f"{row['o1_eps_lb']:.2f}"
        table.add_row(row["who"], str(row["runs"]), row.get("level") or "—",
                      f"{row['p_value']:.3f}", "yes" if row["found"] else "no", quoted, o1,
                      "yes" if row["beyond_claim"] else "no")  # fmt: skip
    table_console().print(table)


def register_shared_commands(models: typer.Typer, reports: typer.Typer) -> None:
    """Add the shared models' verbs to ``panoramia models`` and ``panoramia reports``."""
    models.command("publish")(exits_on_input_error(publish))
    models.command("shared")(exits_on_input_error(shared_list))
    models.command("withdraw")(exits_on_input_error(withdraw))
    models.command("participate")(exits_on_input_error(participate))
    reports.command("model")(exits_on_input_error(reports_model))
