"""A worker without the service's disk: it reads an audit's uploads from the service with a
worker token, checks each file's SHA-256, runs the audit with its stages inside the run folder,
stores the report in the database and leaves nothing on its own disk."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import TINY_AUDIT
from tests.service_support import queued_only_service, redis_database

BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"},
        "overrides": TINY_AUDIT}  # fmt: skip


def _send(client, name: str, content: bytes, filename: str = "census.csv") -> str:  # type: ignore[no-untyped-def]
    body = {"name": name, "kind": "data", "filename": filename, "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest()}  # fmt: skip
    upload_id = client.post("/v1/uploads", json=body).json()["id"]
    headers = {"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"}
    done = client.patch(f"/v1/uploads/{upload_id}", content=content, headers=headers)
    assert done.json()["state"] == "ready", done.text
    return upload_id


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_worker_on_another_disk_runs_an_audit_of_uploads_and_keeps_nothing(
    tmp_path: Path, database_url: str
) -> None:
    from panoramia.modalities.tabular.adult import load_adult
    from panoramia.service.submission.plan import AuditPlan, PlannedFile
    from panoramia.service.worker.run import run_audit
    from panoramia.store.repository import AuditStatus

    members = load_adult()[0].iloc[:800].to_csv(index=False).encode()
    with queued_only_service(tmp_path / "service-home", database_url, redis_database(2),
                             rate_limit="1000/minute") as service:  # fmt: skip
        worker_token = service.store.create_contributor("worker-1", worker=True)
        with service.client(service.token("alice")) as alice:
            upload_id = _send(alice, "census", members)
            body = BODY | {"data": {"source": "csv", "members": "census", "label": "income"}}
            audit_id = alice.post("/v1/audits", json=body).json()["id"]
            request = service.store.get_audit(None, audit_id).request
            stored = request["overrides_resolved"]
            assert f"data.members_path='upload:{upload_id}'" in stored  # no server path kept
            assert str(tmp_path) not in str(stored)
            plan = AuditPlan.from_json(request["plan"])  # what the worker launches
            assert plan.files["data.members_path"] == PlannedFile(upload=upload_id)
            assert str(tmp_path) not in str(request["plan"])
            assert plan.command_line() == stored  # the record is the plan's command line
        with service.client(worker_token) as worker:
            # the upload is not in a running audit yet: nothing to read; other routes: none
            assert worker.get(f"/v1/worker/uploads/{upload_id}").status_code == 404
            assert worker.get("/v1/uploads").status_code == 403
            assert worker.get(f"/v1/audits/{audit_id}").status_code == 403
        with service.client(service.token("alice")) as alice:
            assert alice.get(f"/v1/worker/uploads/{upload_id}").status_code == 401
        elsewhere = replace(
            service.settings, home=tmp_path / "worker-home", service_url=service.url,
            worker_token=worker_token,
        )  # fmt: skip
        assert run_audit(service.store, elsewhere, audit_id) == AuditStatus.SUCCEEDED
        with service.client(service.token("alice")) as alice:
            done = alice.get(f"/v1/audits/{audit_id}").json()
            report = alice.get(f"/v1/reports/{done['report_id']}").json()
    assert report["document"]["data"]["source"] == "csv"
    assert report["document"]["m"] > 0
    assert not (service.settings.audits_dir / audit_id).exists()  # the service's disk: untouched
    assert not service.settings.artifacts_dir.exists()
    left = [p for p in (tmp_path / "worker-home").rglob("*") if p.is_file()]
    assert left == []  # the worker's disk: its run folder and stages went with the audit
