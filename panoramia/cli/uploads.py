"""``panoramia data …`` and ``panoramia models …``: a contributor's files on the service, over
the network only (the service's ``/v1/uploads``; ``PANORAMIA_URL``, ``PANORAMIA_TOKEN``).

A folder (a text or image folder, a model folder) travels as one ``.tar.gz`` made here, the
same bytes each time (sorted entries, no owner names, no gzip time), so that an interrupted
upload started again resumes where it stopped.
"""

from __future__ import annotations

import gzip
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from panoramia.cli.common import exits_on_input_error, print_json, table_console
from panoramia.cli.service import DEFAULT_URL, AsJson, Token, Url, _client
from panoramia.errors import InputError

data = typer.Typer(help="Your data files on the service: upload, list, delete.")
models = typer.Typer(
    help="Your models on the service: upload, list, delete; publish one as a shared model."
)
data.info.no_args_is_help = models.info.no_args_is_help = True
Name = Annotated[
    str | None,
    typer.Option("--name", help="What audits call it (default: the file or folder's name)."),
]


def _entry(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A folder's entry as it travels: plain files and folders only, no owner."""
    if not (info.isfile() or info.isdir()):
        raise InputError(f"{info.name}: a link or special file; send plain files and folders")
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


@contextmanager
def _as_one_file(path: Path) -> Iterator[tuple[Path, str]]:
    """``path`` itself, or for a folder a ``.tar.gz`` of its contents; with the file name
    the service is told (its suffix tells the format)."""
    if not path.exists():
        raise InputError(f"{path}: not found")
    if path.is_file():
        yield path, path.name
        return
    with tempfile.TemporaryDirectory(prefix="panoramia-upload-") as folder:
        archive = Path(folder) / f"{path.name}.tar.gz"
        with (
            archive.open("wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed,
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for child in sorted(path.iterdir()):
                tar.add(child, arcname=child.name, filter=_entry)
        yield archive, archive.name


def _send(path: Path, name: str | None, kind: str, url: str, token: str | None) -> None:
    client = _client(url, token)
    shown = {"last": -1}

    def progress(sent: int, size: int) -> None:
        percent = 100 * sent // max(size, 1)
        if percent // 10 != shown["last"] // 10 or sent == size:
            typer.echo(f"sent {sent:,} of {size:,} bytes ({percent}%)", err=True)
            shown["last"] = percent

    with _as_one_file(path) as (single, filename):
        view = client.send_file(
            single, name=name or default_name(path), kind=kind, filename=filename,
            progress=progress,
        )  # fmt: skip
    typer.echo(f"{view['name']} {view['id']} {view['state']} {view['size']:,} bytes: "
               f"{described(view.get('summary') or {})}")  # fmt: skip


def default_name(path: Path) -> str:
    """What audits call an upload unless told: the file's name without its format suffix
    (``census.csv`` → ``census``), or the folder's name."""
    from panoramia.service.uploads.checks import suffix_of

    name = path.resolve().name if path.is_dir() else path.name
    suffix = suffix_of(name) if path.is_file() else ""
    return name[: len(name) - len(suffix)] if suffix and len(name) > len(suffix) else name


def described(summary: dict) -> str:
    """What the service's check found, in words."""
    if "rows" in summary:
        columns = summary.get("columns") or []
        named = ", ".join(f"{name} ({kind})" for name, kind in columns)
        return f"{summary['rows']:,} rows, {len(columns)} columns: {named}"
    if "format" in summary:
        return f"a model ({summary['format']}), {summary.get('files', '?')} files"
    if "arrays" in summary:
        return "arrays " + ", ".join(
            f"{name} {'×'.join(map(str, shape))}" for name, shape in summary["arrays"].items()
        )
    if "files" in summary:
        return f"{summary['files']} files, {summary.get('unpacked_bytes', 0):,} bytes"
    return "checked"


def _list(kind: str, as_json: bool, url: str, token: str | None) -> None:
    rows = [u for u in _client(url, token).uploads() if u["kind"] == kind]
    if as_json:
        print_json(rows)
        return
    if not rows:
        upload = "panoramia data upload FILE" if kind == "data" else "panoramia models upload DIR"
        typer.echo(f"You have no {kind} uploads. Send one with `{upload}`.")
        return
    from rich.table import Table

    table = Table("name", "id", "state", "bytes", "file", "sent", title=f"Your {kind} uploads")
    for row in rows:
        table.add_row(row["name"], row["id"], row["state"], f"{row['size']:,}",
                      row["filename"], row["created_at"][:19])  # fmt: skip
    table_console().print(table)


def _delete(name: str, url: str, token: str | None) -> None:
    gone = _client(url, token).delete_upload(name)
    if "deleting" in gone:  # 202: it was being checked; the check's end deletes it
        typer.echo(f"{gone['name']} ({gone['deleting']}): {gone['when']}")
        return
    typer.echo(gone["message"])


def _verbs(group: typer.Typer, kind: str, what: str, check: bool = False) -> None:
    """``upload``, ``list`` and ``delete`` of one kind of upload on ``group``; ``what`` says
    what PATH may be; ``check``: a folder must hold its target.json (a model)."""

    def upload(path: Path, name: Name = None, url: Url = DEFAULT_URL, token: Token = None) -> None:
        """Upload it; run again to resume an interrupted upload."""
        if check and path.is_dir() and not (path / "target.json").is_file():
            raise InputError(f"{path}: no target.json in it (docs/TARGETS.md)")
        _send(path, name, kind, url, token)

    # this module's annotations are text read in its globals: the help differs by kind
    upload.__annotations__["path"] = Annotated[Path, typer.Argument(help=what)]
    upload.__doc__ = f"Upload {what[0].lower() + what[1:-1]}; run again to resume a broken upload."
    group.command("upload")(exits_on_input_error(upload))

    @group.command("list")
    @exits_on_input_error
    def listing(as_json: AsJson = False, url: Url = DEFAULT_URL, token: Token = None) -> None:
        _list(kind, as_json, url, token)

    @group.command("delete")
    @exits_on_input_error
    def delete(
        name: Annotated[str, typer.Argument(help="The upload's name or id.")],
        url: Url = DEFAULT_URL,
        token: Token = None,
    ) -> None:
        _delete(name, url, token)

    listing.__doc__ = f"Your {kind} uploads."
    delete.__doc__ = f"Delete a {kind} upload and all made from it (reports keep their figures)."


_verbs(data, "data", "A CSV, Parquet or .npz file, or a text or image folder.")
_verbs(models, "model", "A model folder with its target.json.", check=True)


def register_upload_commands(app: typer.Typer) -> None:
    from panoramia.cli.service import reports
    from panoramia.cli.shared import register_shared_commands

    register_shared_commands(models, reports)
    app.add_typer(data, name="data")
    app.add_typer(models, name="models")
