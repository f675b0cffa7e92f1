"""What an audit run leaves and how it is recorded: its own files read without following a
link, its report and its page's charts validated (the page is rendered from the two when it
is read, never edited), a failure in one line in the contributor's own terms, and the
staged inputs and run folders removed when they are no longer needed."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.exc import DataError, IntegrityError

from panoramia.report.page_head import shown_name
from panoramia.report.page_parts import (
    MAX_ALT,
    MAX_PAGE_PARTS_BYTES,
    PAGE_PARTS_FILE,
    ChartPart,
    PageParts,
)
from panoramia.report.schema import ReportDocument
from panoramia.service.contributor_files import unreadable_entry
from panoramia.service.settings import ServiceSettings
from panoramia.service.worker.staging import in_contributor_terms
from panoramia.store.repository import AuditStatus, ReportContent, ReportStore, as_utc

MEMORY_ERRORS = (
    "MemoryError",
    "can't allocate memory",
    "Cannot allocate memory",
    "bad_alloc",
    "out of memory",
)
"""What a child that reached its data ceiling writes last (Python's, torch's, C's, C++'s)."""


def read_own_file(path: Path, *, limit: int = 256 * 2**20) -> str:
    """The text of a file the audit child wrote in its run directory, opened without following
    a link and only if it is a regular file with one name (a child may plant a link or a hard
    link there to make the unconfined worker read someone else's file); OSError otherwise."""
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or unreadable_entry(info) or info.st_size > limit:
            raise OSError(f"{path.name}: not a plain file of the audit's own")
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    finally:
        os.close(descriptor)


def read_progress(path: Path) -> dict | None:
    try:
        return json.loads(read_own_file(path, limit=2**16))
    except (OSError, ValueError):
        return None


def last_error_line(log_file: Path) -> str:
    try:
        lines = [line.strip() for line in read_own_file(log_file).splitlines()]
    except OSError:
        return "the audit process failed (no log)"
    lines = [line for line in lines if line]
    for line in reversed(lines):
        if "error:" in line.lower() or "Error" in line:
            return line[:2000]
    return (lines[-1] if lines else "the audit process failed with no output")[:2000]


ENDED = (AuditStatus.SUCCEEDED, AuditStatus.FAILED, AuditStatus.CANCELLED)


def clear_remote_leftovers(settings: ServiceSettings) -> int:
    """A worker without the service's disk starts by removing every run folder a previous
    life of it left (killed mid-audit): nothing of a contributor's stays there. Returns how
    many it removed."""
    if not settings.remote_worker or not settings.audits_dir.is_dir():
        return 0
    left = [folder for folder in settings.audits_dir.iterdir() if not folder.is_symlink()]
    for folder in left:
        shutil.rmtree(folder, ignore_errors=True)
    return len(left)


def expire_inputs(store: ReportStore, settings: ServiceSettings, *, ended: Path | None) -> int:
    """Remove the staged inputs (``<run dir>/inputs``) of audits that ended: the one in
    ``ended`` at once when ``PANORAMIA_KEEP_INPUTS_HOURS`` is 0, and every run directory's
    whose audit ended longer ago than that. Returns how many were removed."""
    removed = 0
    if ended is not None and settings.keep_inputs_s == 0:
        shutil.rmtree(ended / "inputs", ignore_errors=True)
        removed += 1
    cutoff = time.time() - settings.keep_inputs_s
    for inputs in settings.audits_dir.glob("*/inputs"):
        audit = store.get_audit(None, inputs.parent.name)
        finished = as_utc(audit.finished_at) if audit is not None else None
        if audit is None or (
            audit.status in ENDED and finished is not None and finished.timestamp() <= cutoff
        ):
            shutil.rmtree(inputs, ignore_errors=True)
            removed += 1
    return removed


class ContributorView:
    """What a contributor reads of her audit: her files by her own names (``names``: each
    staged copy's path → her name for it), the run folder as ``<audit>`` and the service's
    home as ``<home>`` — never the server's layout."""

    def __init__(self, names: dict[str, str], run_dir: Path, home: Path):
        self.names = names
        self.places = ((str(run_dir), "<audit>"), (str(home), "<home>"))

    def text(self, text: str) -> str:
        """``text`` in her terms."""
        text = in_contributor_terms(text, self.names)
        for place, placeholder in self.places:
            text = text.replace(place, placeholder)
        return text

    def document(self, node: object) -> object:
        """A JSON document with every string (keys included) in her terms."""
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, list):
            return [self.document(child) for child in node]
        if isinstance(node, dict):
            return {self.text(str(key)): self.document(child) for key, child in node.items()}
        return node

    def report(self, content: ReportContent, audit_id: str, heading: str | None) -> ReportContent:
        """The run's report as stored for her: its document and its charts' words in her
        terms, the page headed by ``heading`` (her model's name and version; None: the run's
        ``target.name``), rendered from the two whenever it is read; its files are the
        audit's (``audits/<id>`` under the service's home, the operator's to open)."""
        parts = content.parts
        if parts is not None:  # validated again: her names may be longer than the copies'
            charts = [
                chart.model_dump() | {"alt": self.text(chart.alt)[:MAX_ALT]}
                if isinstance(chart, ChartPart)
                else chart.model_dump()
                for chart in parts.charts
            ]
            parts = PageParts.model_validate({"charts": charts, "heading": heading})
        return ReportContent(
            document=self.document(content.document),  # type: ignore[arg-type]
            parts=parts,
            artifact_location=f"audits/{audit_id}",
        )


def model_heading(model: object) -> str | None:
    """The page's heading for the model an audit names (``request.model``): her name and
    version as she gave them, as the console names it; None where it names none."""
    model = model if isinstance(model, dict) else {}
    name, version = str(model.get("name") or ""), str(model.get("version") or "")
    return shown_name(name, version) if name else None


def store_report(
    store: ReportStore,
    audit_id: str,
    worker: str,
    content: ReportContent,
    timings: dict,
    progress: dict | None,
) -> str | None:
    """Store the finished audit's report and its success (:meth:`ReportStore.finish`): None
    once done (or the claim lost), else why the database refused it, in one line (PostgreSQL
    holds no NUL, for one): the audit then fails with it, since running it again would not
    mend it (the worker neither raises nor stops its heartbeats over it). A busy store or a
    lost connection still raises, as before: the audit is then taken up again."""
    try:
        store.finish(audit_id, worker, content, timings, progress)
    except (DataError, IntegrityError) as error:  # a busy or lost connection is not the report's
        cause = getattr(error, "orig", None) or error  # the driver's words, not the statement
        lines = str(cause).strip().splitlines()
        first = (lines[0] if lines else type(cause).__name__)[:300]
        first = first.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")
        return f"the report could not be stored: {first}"  # itself storable
    return None


def finished_report(
    returncode: int, run_dir: Path, log_file: Path, *, memory: int | None = None
) -> ReportContent | str:
    """The run's validated report and page, or why there is none (one line); ``memory``:
    the child's data ceiling in bytes, named when the child ran out of it."""
    if returncode != 0:
        line = last_error_line(log_file)
        if memory is not None and any(error in line for error in MEMORY_ERRORS):
            return (
                f"the audit reached its memory ceiling of {memory // 2**20} MB "
                f"(PANORAMIA_AUDIT_MEMORY_MB): {line[:300]}"
            )
        return line
    try:
        text = read_own_file(run_dir / "report.json")
        ReportDocument.model_validate_json(text)
    except (OSError, ValidationError) as error:
        return f"report.json: {str(error).splitlines()[0]}"
    try:
        parts = read_own_file(run_dir / PAGE_PARTS_FILE, limit=MAX_PAGE_PARTS_BYTES)
        page = PageParts.model_validate_json(parts)
    except FileNotFoundError:
        return f"{PAGE_PARTS_FILE}: missing after a successful run"
    except OSError as error:  # the system's words (never the server's path), or ours
        return f"{PAGE_PARTS_FILE}: {error.strerror}" if error.strerror else str(error)
    except ValidationError as error:
        return f"{PAGE_PARTS_FILE}: {str(error).splitlines()[0]}"
    return ReportContent(document=json.loads(text), parts=page)
