"""``panoramia db|tokens|serve|worker`` (run the service) and ``reports|audits`` (its client)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panoramia.cli.common import exits_on_input_error, print_json, shared_key, table_console
from panoramia.cli.gate import JunitOption
from panoramia.errors import InputError
from panoramia.plugins import MODALITIES
from panoramia.report.page_parts import PAGE_PARTS_FILE

if TYPE_CHECKING:
    from panoramia.client import ServiceClient
    from panoramia.pipeline.gate_policies import NamedPolicy

MODALITY_NAMES = ", ".join(MODALITIES)
SOURCES_BY_MODALITY = "; ".join(
    f"{' or '.join(entry.data_sources)} ({entry.name})" for entry in MODALITIES.values()
)

Url = Annotated[str, typer.Option("--url", envvar="PANORAMIA_URL", help="The service's base URL.")]
Token = Annotated[
    str | None, typer.Option("--token", envvar="PANORAMIA_TOKEN", help="Your bearer token.")
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON.")]
AuditId = Annotated[str, typer.Argument(help="The audit's id.")]
DEFAULT_URL = "http://127.0.0.1:8000"
SharedOption = Annotated[
    str | None,
    typer.Option(
        "--shared",
        help="A shared model you may audit, OWNER/NAME:VERSION (panoramia models shared), "
        "instead of --model and --target-*: your report also enters its leakage report.",
    ),
]
ControlOption = Annotated[
    str | None,
    typer.Option(
        "--control-path",
        help="A model upload of yours that never saw these members, audited at the same "
        "seeds (needs --repeats): the paired difference target − control.",
    ),
]

db = typer.Typer(help="The report store's database.", no_args_is_help=True)
tokens = typer.Typer(help="Contributors' access tokens.", no_args_is_help=True)
reports = typer.Typer(help="Query and upload leakage reports.", no_args_is_help=True)
audits = typer.Typer(help="Submit and follow audits on the service.", no_args_is_help=True)


def _client(url: str, token: str | None) -> ServiceClient:
    from panoramia.client import ServiceClient

    return ServiceClient(url, token)


def _store():
    from panoramia.store import ReportStore, make_engine, upgrade

    engine = make_engine()
    upgrade(engine)
    return ReportStore(engine)


def _settings():
    from panoramia.service.settings import ServiceSettings

    return ServiceSettings.from_env()


@db.command("upgrade")
@exits_on_input_error
def db_upgrade() -> None:
    """Create or migrate the database (PANORAMIA_DATABASE_URL, default SQLite in PANORAMIA_HOME)."""
    from panoramia.store import database_url, make_engine, upgrade
    from panoramia.store.database import current_revision

    engine = make_engine()
    try:
        upgrade(engine)
    except Exception as error:
        raise InputError(f"database: {str(error).splitlines()[0]}") from None
    url = database_url().split("@")[-1]
    typer.echo(f"database {url} at revision {current_revision(engine)}")


@tokens.command("create")
@exits_on_input_error
def tokens_create(
    contributor: Annotated[str, typer.Option("--contributor", help="The contributor's name.")],
    admin: Annotated[bool, typer.Option("--admin", help="May read every report.")] = False,
    worker: Annotated[
        bool,
        typer.Option(
            "--worker",
            help="A worker's credential (PANORAMIA_WORKER_TOKEN): reads running audits' "
            "uploads, nothing else.",
        ),
    ] = False,
    expires_in_days: Annotated[
        float | None,
        typer.Option("--expires-in-days", help="The token stops working after this many days."),
    ] = None,
) -> None:
    """Create a contributor and print its token once (only its hash is stored)."""
    from datetime import timedelta

    from panoramia.store.repository import utcnow

    expires_at = None
    if expires_in_days is not None:
        if not 0 < expires_in_days <= 36_500:
            raise InputError(f"--expires-in-days: must be in (0, 36500], got {expires_in_days}")
        expires_at = utcnow() + timedelta(days=expires_in_days)
    if admin and worker:
        raise InputError("--worker: a worker's token cannot be an admin's too")
    token = _store().create_contributor(
        contributor, admin=admin, expires_at=expires_at, worker=worker
    )
    typer.echo(token)


@tokens.command("list")
@exits_on_input_error
def tokens_list(as_json: AsJson = False) -> None:
    """Every contributor: admin or not, created, expires, revoked, state (never the token)."""
    found = _store().list_tokens()
    rows = [
        {
            "contributor": t.name,
            "admin": t.is_admin,
            "state": t.state,
            "created_at": t.created_at.isoformat(),
            "expires_at": t.expires_at.isoformat() if t.expires_at else None,
            "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
        }
        for t in found
    ]
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    table = Table("contributor", "admin", "state", "created", "expires", "revoked")
    for row in rows:
        table.add_row(*(str(value or "") for value in row.values()))
    table_console().print(table)


@tokens.command("revoke")
@exits_on_input_error
def tokens_revoke(
    contributor: Annotated[str, typer.Option("--contributor", help="The contributor's name.")],
) -> None:
    """Revoke a contributor's token: a running server refuses it within 5 s."""
    _store().revoke_token(contributor)
    typer.echo(f"revoked the token of {contributor!r}")


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="Server processes (more than 1 needs PANORAMIA_QUEUE=celery).")
    ] = 1,
) -> None:
    """Run the report service (FastAPI + uvicorn) with its audit workers."""
    from panoramia.service.server import serve as run_server

    settings = _settings()
    typer.echo(f"audit confinement: {settings.check_sandbox()}", err=True)
    run_server(settings, host=host, port=port, workers=workers)


def worker(
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
) -> None:
    """Run a Celery audit worker (PANORAMIA_QUEUE=celery, broker PANORAMIA_REDIS_URL)."""
    from panoramia.service.server import owner_only_files
    from panoramia.service.worker.celery_app import run_worker
    from panoramia.service.worker.record import clear_remote_leftovers

    settings = _settings()
    typer.echo(f"audit confinement: {settings.check_sandbox()}", err=True)
    owner_only_files()
    if settings.remote_worker:
        cleared = clear_remote_leftovers(settings)
        message = f"reads uploads from {settings.service_url}; removed {cleared} old run folders"
        typer.echo(message, err=True)
    run_worker(settings, loglevel=loglevel)


@reports.command("list")
@exits_on_input_error
def reports_list(
    model: Annotated[str, typer.Option("--model", help="The model's name.")],
    latest: Annotated[bool, typer.Option("--latest", help="Only the newest report.")] = False,
    version: Annotated[str | None, typer.Option(help="Only this model version.")] = None,
    modality: Annotated[str | None, typer.Option(help=f"One of {MODALITY_NAMES}.")] = None,
    since: Annotated[str | None, typer.Option(help="Stored at or after (ISO date).")] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Your reports of a model, newest first."""
    found = _client(url, token).reports(
        model, latest=latest, version=version, modality=modality, since=since
    )
    if as_json:
        print_json(found)
        return
    from rich.table import Table

    table = Table(title=model)
    headers = ("id", "version", "verdict", "ε̃ quoted (game, interval)", "modality",
               "ε̃ one-sided", "stored")  # fmt: skip
    for header in headers:
        table.add_column(header, no_wrap=header in ("id", "stored"))
    for r in found:
        table.add_row(
            r["id"], r["version"], r.get("headline") or "—", quoted_figure(r.get("quoted")),
            r["modality"], f"{r['eps_tilde']:.3f}", r["created_at"],
        )  # fmt: skip
    table_console().print(table)


def quoted_figure(quoted: dict | None) -> str:
    """The verdict's figure in a cell: ``2.39 (two-sided; 2.10–2.70)``."""
    if not quoted:
        return "—"
    text = f"{quoted['value']:.2f} ({str(quoted.get('game', '')).replace('_', '-')}"
    interval = quoted.get("interval")
    return text + (f"; {interval[0]:.2f}–{interval[1]:.2f})" if interval else ")")


@reports.command("show")
@exits_on_input_error
def reports_show(
    report_id: Annotated[str, typer.Argument(help="The report's id.")],
    html: Annotated[Path | None, typer.Option(help="Also save its HTML page here.")] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """One report: headline numbers (or the whole document with --json)."""
    client = _client(url, token)
    report = client.report(report_id)
    if html is not None:
        html.write_text(client.report_html(report_id))
    if as_json:
        print_json(report)
        return
    typer.echo("\n".join(report_lines(report)))


def report_lines(report: dict) -> list[str]:
    """A stored report as ``reports show`` prints it: the model, the verdict and its sentence,
    what an attacker gains, the groups, what to do next, then the paper's figures."""
    from panoramia.report.html import detectable_words, quote_text
    from panoramia.report.plain import plain_paragraph
    from panoramia.report.reference_words import (
        NO_HELD_OUT,
        gave_no_held_out,
        reference_attack_reading,
    )

    found = (report.get("document") or {}).get("verdict")
    lines = [
        f"{report['model']} version {report['version']} ({report['modality']}), stored "
        f"{report['created_at']}"
    ]
    document = report.get("document") or {}
    attacker = got if isinstance(got := document.get("attacker"), dict) else {}
    if isinstance(found, dict):
        plain = plain_paragraph(found, attacker)
        lines += [f"In short: {plain}" if plain else "",
                  f"{found['headline']} — {quote_text(found)}", found["sentence"]]  # fmt: skip
    reference = reference_attack_reading(document)
    if reference is not None:
        lines.append(str(reference["sentence"]))
    elif gave_no_held_out(document):
        lines.append(NO_HELD_OUT)
    if attacker.get("member_side"):
        lines.append(str(attacker["member_side"]))
    exposure = got if isinstance(got := document.get("exposure"), dict) else {}
    groups = exposure.get("groups")
    if isinstance(groups, list):
        tested = [g for g in groups if isinstance(g, dict) and g.get("p") is not None]
        standing = [f"{g.get('column')} = {g.get('value')}" for g in tested if g.get("stands_out")]
        if tested:
            lines.append(
                f"Groups standing out beyond chance: {', '.join(standing)} "
                f"({len(standing)} of {len(tested)} tested)"
                if standing
                else f"No group stands out beyond chance ({len(tested)} tested): "
                f"{detectable_words(tested, str(exposure.get('statistic') or 'share'))}"
            )
    if isinstance(found, dict) and found.get("next_steps"):
        lines += ["What to do next:", *(f"  - {step}" for step in found["next_steps"])]
    lines += [
        f"paper's one-sided game: c_lb = {report['c_lb']:.3f}, {{c+ε}}_lb = "
        f"{report['c_plus_eps_lb']:.3f}, ε̃ = {report['eps_tilde']:.3f}",
        document.get("interpretation", ""),
    ]
    return [line for line in lines if line]


@reports.command("delete")
@exits_on_input_error
def reports_delete(
    model: Annotated[str, typer.Option("--model", help="The model entry's name.")],
    version: Annotated[
        str | None, typer.Option(help="Only this version (default: every version).")
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Delete a model entry of yours with its reports and audits (your uploads stay)."""
    typer.echo(_client(url, token).delete_model(model, version)["message"])


@reports.command("upload")
@exits_on_input_error
def reports_upload(
    run_dir: Annotated[
        Path, typer.Argument(help="A run directory with report.json and page_parts.json.")
    ],
    model: Annotated[str, typer.Option("--model", help="The model's name.")],
    version: Annotated[str, typer.Option(help="The model's version.")] = "1",
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Upload the report of a ``panoramia-audit`` run (the service renders its page from
    the report and its charts; a run made before charts were kept sends its report.html)."""
    pages = (run_dir / PAGE_PARTS_FILE, run_dir / "report.html")
    stored = _client(url, token).upload_report(
        {"name": model, "version": version},
        run_dir / "report.json",
        next((page for page in pages if page.is_file()), None),
    )
    typer.echo(stored["id"])


@audits.command("submit")
@exits_on_input_error
def audits_submit(
    model: Annotated[
        str | None, typer.Option("--model", help="The model's name (not with --shared).")
    ] = None,
    version: Annotated[str, typer.Option(help="The model's version.")] = "1",
    target_config: Annotated[
        str | None, typer.Option(help="A demo target config (e.g. mlp_overfit).")
    ] = None,
    target_path: Annotated[
        str | None,
        typer.Option(
            help="Your model upload's name (panoramia models upload), or a model folder the "
            "operator placed."
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            help=f"Data source, which picks the audit: {SOURCES_BY_MODALITY}. Default: csv "
            "with --members, else adult."
        ),
    ] = None,
    members: Annotated[
        str | None, typer.Option(help="Your members upload's name (panoramia data upload).")
    ] = None,
    label: Annotated[str | None, typer.Option(help="Label column of your file.")] = None,
    nonmembers: Annotated[
        str | None,
        typer.Option(help="An upload of rows or images you know were not trained on."),
    ] = None,
    categorical: Annotated[
        list[str] | None,
        typer.Option("--categorical", help="A categorical column of your CSV; repeat."),
    ] = None,
    continuous: Annotated[
        list[str] | None,
        typer.Option("--continuous", help="A numeric column of your CSV; repeat."),
    ] = None,
    override: Annotated[
        list[str] | None, typer.Option("--override", "-o", help="A Hydra override; repeat.")
    ] = None,
    shared: SharedOption = None,
    control_path: ControlOption = None,
    repeats: Annotated[
        int,
        typer.Option(
            min=1, max=10, help="Run it at N seeds (s, s+1, …) and pool them into one verdict."
        ),
    ] = 1,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the audit ends.")] = False,
    gate: Annotated[
        str | None,
        typer.Option(
            "--gate",
            help="A release gate's policy (strict, lenient, or a policy file): waits for the "
            "audit, then exits 0 where its report (or pooled verdict) passes, 1 where not.",
        ),
    ] = None,
    junit: JunitOption = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Submit an audit; prints its id (with --repeats: the group's id). With --wait: progress
    on stderr, then the verdict and the report (or the pooled verdict) on stdout. With --gate
    (implies --wait): then the gate's lines, and exit 1 where it fails."""
    from panoramia.cli.gate import named_policy

    named = None if gate is None else named_policy(gate, setting="--gate")  # before submitting
    if junit is not None and named is None:
        raise InputError("--junit: only with --gate")
    data = _audit_data(source, members, label, nonmembers, categorical, continuous)
    client = _client(url, token)
    audit = client.submit_audit(
        {
            **_audited(model, version, target_config, target_path, shared, control_path),
            "data": data,
            "overrides": override or [],
            **({"repeats": repeats} if repeats > 1 else {}),  # an older server knows no repeats
            **({"control": {"path": control_path}} if control_path else {}),
        }
    )
    if repeats > 1:
        group = audit["repeat_group"]
        typer.echo(group)
        if wait or named is not None:
            found = _wait_for_repeats(client, group)  # exits 1 where no run succeeded
            if named is not None:
                _gate_repeats(client, group, found, named, junit)
        return
    typer.echo(audit["id"])
    if wait or named is not None:
        report = _wait_for_audit(client, audit)  # exits 1 where the audit did not succeed
        if named is not None:
            if report is None:  # nothing to read: the gate never passes by default
                typer.echo(f"panoramia: error: --gate: audit {audit['id']} left no report; the "
                           "gate fails", err=True)  # fmt: skip
                raise typer.Exit(1)
            _gate_report(report, named, junit)


def _audited(
    model: str | None,
    version: str,
    target_config: str | None,
    target_path: str | None,
    shared: str | None,
    control_path: str | None,
) -> dict:
    """The request's model and target, or its ``shared`` model: InputError naming the option
    where they are mixed or missing."""
    if shared is not None:
        mixed = [name for name, given in (("--model", model), ("--target-config", target_config),
                                          ("--target-path", target_path),
                                          ("--control-path", control_path)) if given]  # fmt: skip
        if mixed:
            raise InputError(f"--shared: names the model; give it without {', '.join(mixed)}")
        return {"shared": shared_key(shared, setting="--shared")}
    if model is None:
        raise InputError("--model: give the model's name (or --shared OWNER/NAME:VERSION)")
    target = {"config": target_config} if target_config else {"path": target_path}
    return {"model": {"name": model, "version": version}, "target": target}


def _gate_report(report: dict, named: NamedPolicy, junit: Path | None) -> None:
    """The gate on one audit's stored report; exit 1 where it fails."""
    from panoramia.cli.gate import finish
    from panoramia.pipeline.release_gate import gate_documents

    subject = f"{report['model']} version {report['version']}"
    document = report.get("document")
    found = gate_documents(named, [(subject, document)], subject=subject, source=report["id"])
    finish(found, junit)


def _gate_repeats(
    client: ServiceClient, group: str, found: dict, named: NamedPolicy, junit: Path | None
) -> None:
    """The gate on a group of repeats' pooled verdict, read anew from the runs' stored reports
    (the control's runs left out; a run that left no report counts as p = 1); exit 1 where it
    fails."""
    from panoramia.cli.gate import finish
    from panoramia.pipeline.release_gate import gate_documents

    documents = [
        (f"seed {run['seed']}",
         client.report(run["report_id"]).get("document") if run.get("report_id") else None)
        for run in found["runs"]
        if run.get("role") != "control"
    ]  # fmt: skip
    model = found["model"]
    subject = f"{model['name']} version {model['version']} ({len(documents)} repeats)"
    finish(gate_documents(named, documents, subject=subject, source=group), junit)


def _audit_data(
    source: str | None,
    members: str | None,
    label: str | None,
    nonmembers: str | None,
    categorical: list[str] | None,
    continuous: list[str] | None,
) -> dict:
    """The request's ``data`` section from ``audits submit``'s options (each given one only;
    the source: csv with members, else adult)."""
    data: dict = {"source": source or ("csv" if members is not None else "adult")}
    if members is not None:
        data["members"] = members
    if label is not None:
        data["label"] = label
    if nonmembers is not None:
        data["nonmembers"] = nonmembers
    if categorical:
        data["categorical"] = categorical
    if continuous:
        data["continuous"] = continuous
    return data


def _wait_for_audit(client: ServiceClient, audit: dict) -> dict | None:
    """Follow an audit to its end (each stage once on stderr), then print its status line and
    its report's lines; exit 1 where it did not succeed. Its stored report (None: none)."""
    shown = None
    while audit["status"] in ("queued", "running"):
        time.sleep(2)
        audit = client.audit(audit["id"])
        now = _progress_line(audit)
        if now != shown:  # each stage once, on the error stream (the output stays parseable)
            typer.echo(now, err=True)
            shown = now
    typer.echo(
        f"{audit['status']} {_stages_done(audit)} report={audit['report_id']} "
        f"error={audit['error']}"
    )
    if audit["status"] != "succeeded":
        raise typer.Exit(1)
    if not audit.get("report_id"):
        return None
    report = client.report(audit["report_id"])
    typer.echo("\n".join(report_lines(report)))  # the answer itself, not only where to find it
    return report


def _wait_for_repeats(client: ServiceClient, group: str) -> dict:
    """Follow a group of repeats to its end (each run's status on stderr), then print each
    run's line and the pooled verdict; exit 1 where no run succeeded. The group as it ended."""
    shown = None
    found = client.repeats(group)
    while found["pooled"] is None:
        now = f"{found['ended']} of {len(found['runs'])} runs ended"
        if now != shown:
            typer.echo(now, err=True)
            shown = now
        time.sleep(2)
        found = client.repeats(group)
    typer.echo("\n".join(repeat_lines(found)))
    if not any(run["status"] == "succeeded" for run in found["runs"]):
        raise typer.Exit(1)
    return found


def repeat_lines(found: dict) -> list[str]:
    """A group of repeats as the CLI prints it: the pooled verdict and its sentence, then one
    line per run (seed, status, level, report id)."""
    from panoramia.report.verdict import WORDS

    pooled = found["pooled"] or {}
    model = found["model"]
    targets = [run for run in found["runs"] if run.get("role") != "control"]
    beside = len(found["runs"]) - len(targets)
    control = f", beside {beside} runs of your control" if beside else ""
    lines = [f"{model['name']} version {model['version']}: {len(targets)} repeats{control}"]
    if pooled:
        if pooled.get("plain"):
            lines.append(f"In short: {pooled['plain']}")
        lines += [pooled["headline"], pooled["sentence"]]
    paired = found.get("paired")
    if paired:
        from panoramia.report.pooled import paired_sentence

        lines.append(paired_sentence(paired))
    if pooled.get("next_steps"):
        lines += ["What to do next:", *(f"  - {step}" for step in pooled["next_steps"])]
    for run in found["runs"]:
        level = WORDS.get(run.get("level") or "", "no report")
        role = " (control)" if run.get("role") == "control" else ""
        lines.append(
            f"  seed {run['seed']}{role}: {run['status']}, {level}"
            + (f" (panoramia reports show {run['report_id']})" if run.get("report_id") else "")
        )
    return lines


def _stages_done(audit: dict) -> str:
    """``stages=<done>/<total>`` from an audit's progress (``stages=-`` before any)."""
    progress = audit.get("progress") or {}
    if "total" not in progress:
        return "stages=-"
    return f"stages={progress.get('done', 0)}/{progress['total']}"


def _progress_line(audit: dict) -> str:
    """One line of where an audit stands: its status, stages done and the current stage."""
    stage = (audit.get("progress") or {}).get("stage")
    return f"{audit['status']} {_stages_done(audit)}" + (f" ({stage})" if stage else "")


@audits.command("status")
@exits_on_input_error
def audits_status(
    audit_id: AuditId,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """An audit's status, progress and report id (the whole record with --json)."""
    audit = _client(url, token).audit(audit_id)
    if as_json:
        print_json(audit)
        return
    lines = [f"audit {audit['id']}: {_progress_line(audit)}"]
    if audit.get("report_id"):
        lines.append(f"report {audit['report_id']}: panoramia reports show {audit['report_id']}")
    if audit.get("error"):
        lines.append(f"error: {audit['error']}")
    typer.echo("\n".join(lines))


@audits.command("cancel")
@exits_on_input_error
def audits_cancel(
    audit_id: AuditId,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Cancel a queued or running audit."""
    print_json(_client(url, token).cancel_audit(audit_id))


def register_service_commands(app: typer.Typer) -> None:
    app.add_typer(db, name="db")
    app.add_typer(tokens, name="tokens")
    app.command()(exits_on_input_error(serve))
    app.command()(exits_on_input_error(worker))
    app.add_typer(reports, name="reports")
    app.add_typer(audits, name="audits")
