"""Audits run for real by the service's workers: local pool, Celery over Redis, kill and recovery.

Each audit is the tiny tabular configuration (real Lightning, sdv and xgboost; ~12 s).
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
import redis

from panoramia.sandbox import describe
from tests.conftest import TINY_AUDIT, TINY_IMAGE_AUDIT, TINY_TEXT_AUDIT
from tests.service_support import (
    REDIS_URL,
    audit_processes,
    healthy,
    kill_group,
    live_service,
    poll,
    redis_database,
    served_by_hand,
    settings_for,
    start_detached,
    wait_ended,
    wait_for,
)

BIN = Path(sys.executable).parent
BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"},
        "overrides": TINY_AUDIT}  # fmt: skip


def test_local_pool_runs_an_audit_and_stores_its_report(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5)
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=BODY).json()["id"]
        running = wait_for(lambda: poll(alice, audit_id)["progress"].get("done"), timeout=60)
        assert running >= 1
        done = wait_ended(alice, audit_id, timeout=180)
        assert done["status"] == "succeeded", done["error"]
        assert done["progress"] == {"stage": "attack_rmrn", "state": "done", "done": 21,
                                    "total": 21}  # fmt: skip
        assert done["timings"]["confinement"] == describe()  # Landlock, where the kernel has it
        assert done["attempts"] == 1
        assert done["timings"]["run_s"] > 0
        assert set(done["timings"]["stages"]) >= {"target", "generator", "attack"}
        report = alice.get(f"/v1/reports/{done['report_id']}").json()
        assert report["audit_id"] == audit_id
        assert report["document"]["m"] == 200
        assert report["document"]["target"]["name"] == "census-1"
        assert report["artifact_location"] == f"audits/{audit_id}"
        page = alice.get(f"/v1/reports/{done['report_id']}/html").text
        for read in (json.dumps(report), page, json.dumps(done)):  # never the server's layout
            assert str(tmp_path) not in read
        assert page.count('<img src="data:image/png;base64,') >= 6  # one chart an image
        log = (settings.audits_dir / audit_id / "attempt-1.log").read_text()
        assert "joblib will operate in serial mode" not in log  # /dev/shm is closed to it


def test_an_audit_past_its_memory_ceiling_fails_with_one_line(tmp_path: Path) -> None:
    """The kernel holds the child's data memory to PANORAMIA_AUDIT_MEMORY_MB (here 256 MB,
    less than importing torch takes): the audit fails naming the ceiling, and the service
    goes on (issue 41)."""
    settings = settings_for(
        tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5,
        audit_memory_bytes=256 * 2**20,
    )  # fmt: skip
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=BODY).json()["id"]
        done = wait_ended(alice, audit_id, timeout=120)
        assert done["status"] == "failed"
        assert done["error"].startswith("the audit reached its memory ceiling of 256 MB")
        assert "\n" not in done["error"]
        assert healthy(alice)
        again = alice.post("/v1/audits", json=BODY | {"model": {"name": "census", "version": "2"}})
        assert again.status_code == 202
        assert wait_ended(alice, again.json()["id"], timeout=120)["status"] == "failed"


def test_local_pool_runs_an_image_audit(tmp_path: Path) -> None:
    """The data source picks the image audit: its report (modality, galleries) is stored."""
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5)
    body = {"model": {"name": "digits-cnn"}, "target": {"config": "cnn_overfit"},
            "data": {"source": "digits"}, "overrides": TINY_IMAGE_AUDIT}  # fmt: skip
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=body).json()["id"]
        done = wait_ended(alice, audit_id, timeout=300)
        assert done["status"] == "succeeded", done["error"]
        assert done["progress"]["done"] == done["progress"]["total"] == 21
        report = alice.get(f"/v1/reports/{done['report_id']}").json()["document"]
        assert report["modality"] == "image"
        assert report["target"]["name"] == "digits-cnn-1"
        assert report["data"]["source"] == "digits"
        page = alice.get(f"/v1/reports/{done['report_id']}/html").text
        assert page.count('<img src="data:image/png;base64,') >= 8  # charts + image grids


def test_a_running_audit_can_be_cancelled(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.3)
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=BODY).json()["id"]
        wait_for(lambda: poll(alice, audit_id)["status"] == "running", timeout=30, every=0.05)
        asked = alice.delete(f"/v1/audits/{audit_id}").json()
        assert asked["cancel_requested"] is True
        done = wait_for(lambda: (a := poll(alice, audit_id))["status"] == "cancelled" and a,
                        timeout=30)  # fmt: skip
        assert done["error"] == "cancelled while running"
        assert done["report_id"] is None
        assert alice.delete(f"/v1/audits/{audit_id}").json()["status"] == "cancelled"
    assert not audit_processes(audit_id)


def test_a_failing_audit_reports_its_error(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.3)
    own = tmp_path / "data" / "alice"
    own.mkdir(parents=True)
    (own / "members.csv").write_text("a,b,y\n1,2,0\n3,4,1\n")
    body = BODY | {"data": {"source": "csv", "members": "members.csv", "label": "nope",
                            "continuous": ["a", "b"]}}  # fmt: skip
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=body).json()["id"]
        done = wait_for(lambda: (a := poll(alice, audit_id))["status"] == "failed" and a,
                        timeout=60)  # fmt: skip
    assert "nope" in done["error"]
    assert done["error"].startswith("panoramia-audit: error:")
    assert "'members.csv'" in done["error"]
    assert str(tmp_path) not in done["error"]


@pytest.fixture
def service_env(tmp_path: Path) -> dict:
    return os.environ | {
        "PANORAMIA_HOME": str(tmp_path / "home"),
        "PANORAMIA_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "PANORAMIA_HEARTBEAT_S": "0.5",
        "PANORAMIA_STALE_AFTER_S": "3",
    }


def test_server_killed_mid_audit_then_restarted_resumes_it(service_env: dict, tmp_path) -> None:
    """SIGKILL of the server (its local worker pool and the audit with it); a restart re-queues
    the orphan, whose second attempt reuses the finished stages and succeeds."""
    serve, client = served_by_hand(service_env)
    server = start_detached(serve, service_env, tmp_path / "serve.log")
    try:
        wait_for(lambda: healthy(client), timeout=60)
        audit_id = client.post("/v1/audits", json=BODY).json()["id"]
        wait_for(lambda: poll(client, audit_id)["progress"].get("done", 0) >= 4, timeout=120)
        kill_group(server)
        wait_for(lambda: not audit_processes(audit_id), timeout=10)
        server = start_detached(serve, service_env, tmp_path / "serve.log")
        wait_for(lambda: healthy(client), timeout=60)
        done = wait_ended(client, audit_id, timeout=240)
    finally:
        kill_group(server)
        client.close()
    assert done["status"] == "succeeded", done["error"]
    assert done["attempts"] == 2
    reused = [s for s in done["timings"]["stages"].values() if s["reused"]]
    assert len(reused) >= 4


def test_celery_worker_killed_mid_audit_another_one_finishes_it(
    service_env: dict, tmp_path: Path
) -> None:
    """The Celery path over the local Redis: a worker dies mid-audit (SIGKILL), the service
    re-queues the orphan, a new worker resumes it from the stage cache."""
    broker = f"{REDIS_URL}/{redis_database(2)}"
    redis.Redis.from_url(broker).flushdb()
    env = service_env | {"PANORAMIA_QUEUE": "celery", "PANORAMIA_REDIS_URL": broker}
    settings = settings_for(
        Path(env["PANORAMIA_HOME"]), env["PANORAMIA_DATABASE_URL"], queue="celery",
        redis_url=broker, heartbeat_s=0.5, stale_after_s=3,
    )  # fmt: skip
    worker = [str(BIN / "panoramia"), "worker", "--loglevel", "WARNING"]
    first = start_detached(worker, env, tmp_path / "worker1.log")
    second = None
    try:
        with live_service(settings) as service, service.client(service.token("a")) as alice:
            audit_id = alice.post("/v1/audits", json=BODY).json()["id"]
            wait_for(lambda: poll(alice, audit_id)["progress"].get("done", 0) >= 4, timeout=180)
            assert poll(alice, audit_id)["status"] == "running"
            kill_group(first)
            wait_for(lambda: not audit_processes(audit_id), timeout=10)
            second = start_detached(worker, env, tmp_path / "worker2.log")
            done = wait_ended(alice, audit_id, timeout=240)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                kill_group(process)
        redis.Redis.from_url(broker).flushdb()
    assert done["status"] == "succeeded", done["error"]
    assert done["attempts"] == 2
    assert sum(s["reused"] for s in done["timings"]["stages"].values()) >= 4


def test_a_finished_audit_records_its_last_stage_even_between_heartbeats(tmp_path: Path) -> None:
    """An audit that ends before its worker's next heartbeat still reads 21/21: the worker
    stores the run's own last progress with the report (it once kept the last heartbeat's,
    stage 3 in a compose stack)."""
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=600)
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        audit_id = alice.post("/v1/audits", json=BODY).json()["id"]
        done = wait_ended(alice, audit_id, timeout=180)
        assert done["status"] == "succeeded", done["error"]
        assert done["progress"]["done"] == done["progress"]["total"] == 21


def test_local_pool_audits_an_uploaded_lora_adapter(tmp_path: Path) -> None:
    """A contributor's own LoRA adapter (peft: a Llama-family base and its adapter, one
    archive) and her documents arrive as uploads; the service audits the adapted model and
    stores a text report that reads the adapter's identity, the blind baseline and the
    attacker's terms (issue 56)."""
    from panoramia.modalities.text.datasets import load_pydoc_topics
    from tests.lora_support import tiny_peft_target
    from tests.service.test_uploads import upload

    topics = load_pydoc_topics()
    folder = tiny_peft_target(tmp_path / "shipped" / "lora", topics)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(folder, arcname="lora")  # base/, adapter/ and target.json
    documents = {
        "members": "".join(json.dumps({"text": t}) + "\n" for t in topics[:50]),
        "held_out": "".join(json.dumps({"text": t}) + "\n" for t in topics[50:]),
    }
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5)
    with live_service(settings) as service, service.client(service.token("alice")) as alice:
        model = upload(alice, archive.getvalue(), name="lora", kind="model",
                       filename="lora.tar.gz")  # fmt: skip
        assert model.status_code == 200, model.text
        assert model.json()["summary"]["modality"] == "text"
        members = upload(alice, documents["members"].encode(), name="members",
                         filename="members.jsonl")  # one file of documents  # fmt: skip
        assert members.status_code == 200, members.text
        summary = members.json()["summary"]
        assert summary["documents"] == 50
        assert summary["characters"] == sum(len(t) for t in topics[:50])
        folder = _archive({"held_out/held_out.jsonl": documents["held_out"].encode()})
        held_out = upload(alice, folder, name="held_out", filename="held_out.tar.gz")
        assert held_out.status_code == 200, held_out.text
        body = {"model": {"name": "notes-lora"}, "target": {"path": "lora"},
                "data": {"source": "text_files", "members": "members", "nonmembers": "held_out"},
                "overrides": TINY_TEXT_AUDIT}  # fmt: skip
        submitted = alice.post("/v1/audits", json=body)
        assert submitted.status_code == 202, submitted.text
        done = wait_ended(alice, submitted.json()["id"], timeout=300)
        assert done["status"] == "succeeded", done["error"]
        report = alice.get(f"/v1/reports/{done['report_id']}").json()["document"]
    assert report["modality"] == "text"
    assert report["data"]["members"] > 0  # her .jsonl's documents, chunked and audited
    assert report["data"]["nonmembers"] > 0
    identity = report["target"]["identity"]
    assert identity["format"] == "peft"
    assert "adapter/adapter_model.safetensors" in identity["sha256"]
    assert set(report["baseline"]["blind"]) >= {"c_lb", "auc", "beats_baseline", "note"}
    assert set(report["attacker"]["attack"]["tpr_at_fpr"]) == {"0.001", "0.01"}
    assert str(tmp_path) not in json.dumps(report)


def _archive(files: dict[str, bytes]) -> bytes:
    """A .tar.gz holding ``files`` (archive name → content)."""
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for name, content in files.items():
            entry = tarfile.TarInfo(name)
            entry.size = len(content)
            tar.addfile(entry, io.BytesIO(content))
    return packed.getvalue()
