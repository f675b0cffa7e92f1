"""How a worker records a finished run whose report the database will not keep: the audit
fails at once with one line (it is not left running to be re-queued as a dead worker's), on
SQLite and PostgreSQL. The child is a stand-in that writes a report and exits (no audit)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.exc import DataError

from panoramia.report.page_parts import ChartPart, PageParts
from panoramia.service.worker import run
from panoramia.store import ReportStore, make_engine, upgrade
from panoramia.store.repository import AuditStatus, ModelRef
from tests.service_support import report_document_for_test, settings_for

WRITE_REPORT = (
    "import shutil, sys; shutil.copyfile(sys.argv[1], 'report.json'); "
    "shutil.copyfile(sys.argv[2], 'page_parts.json')"
)


@pytest.fixture
def store(database_url: str) -> ReportStore:
    engine = make_engine(database_url)
    upgrade(engine)
    return ReportStore(engine)


def _run_writing(
    store: ReportStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    document: dict,
    alt: str,
) -> str:
    """Queue an audit and run it with a child that writes ``document`` and a page of one
    chart described by ``alt`` as its report; the audit's id."""
    (tmp_path / "report.json").write_text(json.dumps(document))
    parts = PageParts(charts=[ChartPart(png="AAAA", alt=alt)])
    (tmp_path / "page_parts.json").write_text(parts.model_dump_json())
    child = [sys.executable, "-c", WRITE_REPORT, str(tmp_path / "report.json"),
             str(tmp_path / "page_parts.json")]  # fmt: skip
    monkeypatch.setattr(run, "job_command", lambda *_args, **_options: child)
    alice = store.authenticate(store.create_contributor("alice"))
    assert alice is not None
    audit = store.create_audit(alice, ModelRef("notes-lm", "1"), {"overrides_resolved": []})
    settings = settings_for(tmp_path / "home", "unused", sandbox=False, heartbeat_s=0.2)
    run.run_audit(store, settings, audit.id)
    return audit.id


def _assert_failed_once(store: ReportStore, audit_id: str, caplog: pytest.LogCaptureFixture) -> str:
    """The audit failed at its first run with one line; no report, nothing to re-queue, and
    the worker logged one line, no traceback. The error line."""
    audit = store.get_audit(None, audit_id)
    assert audit is not None
    assert audit.error is not None
    assert audit.status == AuditStatus.FAILED
    assert audit.error.startswith("the report could not be stored: ")
    assert "\n" not in audit.error
    assert audit.attempts == 1
    assert audit.finished_at is not None
    assert store.report_of_audit(audit_id) is None
    assert store.recover_orphans(stale_after=timedelta(0), max_attempts=3) == ([], [])
    again = store.get_audit(None, audit_id)
    assert again is not None
    assert again.status == AuditStatus.FAILED  # not re-queued as a dead worker's
    worker = [r for r in caplog.records if r.name == "panoramia.worker"]
    assert any("the report could not be stored" in r.getMessage() for r in worker)
    assert not any(r.exc_info for r in caplog.records)
    return audit.error


def test_a_report_the_database_refuses_fails_its_audit_in_one_line(
    store: ReportStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any database error storing the finished audit (here one raised for the report row)
    is the audit's failure, recorded once: it once escaped the worker, the audit stayed
    running until its heartbeats were missed, and it ran twice more."""

    def refuse(*_args: object, **_options: object) -> None:
        raise DataError("INSERT INTO reports …", {}, ValueError("value too long\nDETAIL: …"))

    monkeypatch.setattr(store, "finish", refuse)
    caplog.set_level(logging.INFO)
    audit_id = _run_writing(store, tmp_path, monkeypatch, report_document_for_test(), "a chart")
    error = _assert_failed_once(store, audit_id, caplog)
    assert error == "the report could not be stored: value too long"  # the driver's first line


def test_a_report_quoting_a_nul_fails_on_postgresql_and_is_kept_on_sqlite(
    store: ReportStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A report whose document and chart hold a NUL (a tokenizer may decode one into an
    example): PostgreSQL refuses the row and the audit fails in one line, first time; SQLite
    keeps it."""
    caplog.set_level(logging.INFO)
    document = report_document_for_test()
    document["target"]["name"] = "notes\x00lm"
    audit_id = _run_writing(store, tmp_path, monkeypatch, document, "a\x00b")
    if store.engine.dialect.name == "postgresql":
        _assert_failed_once(store, audit_id, caplog)
    else:
        kept = store.get_audit(None, audit_id)
        assert kept is not None
        assert kept.status == AuditStatus.SUCCEEDED
        assert store.report_of_audit(audit_id) is not None
