"""Deleting an upload leaves nothing of it behind: a canary value planted in a contributor's
CSV is found in no file under the service's home once she deletes her uploads, after a real
audit (the worker's own code path, confined child) trained, drew and scored on it."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from panoramia.service.uploads.erase import DONE
from tests.conftest import TINY_AUDIT
from tests.service_support import LiveService, queued_only_service, redis_database

CANARY = "Canaryland-7f3a9c"


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return [
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes()
    ]


def _model_archive(members, directory: Path) -> bytes:  # type: ignore[no-untyped-def]
    """An xgboost model trained on ``members`` as people save one, packed as a tar.gz."""
    import xgboost as xgb

    from panoramia.modalities.tabular.adult import SCHEMA

    features = members.drop(columns=["income"]).copy()
    for column in SCHEMA.categorical:
        features[column] = features[column].astype("category")
    model = xgb.XGBClassifier(n_estimators=20, max_depth=3, enable_categorical=True, n_jobs=1)
    model.fit(features, (members["income"] == ">50K").astype(int))
    directory.mkdir()
    model.save_model(directory / "model.json")
    manifest = {"format": "xgboost-json", "file": "model.json", "classes": ["<=50K", ">50K"]}
    (directory / "target.json").write_text(json.dumps(manifest))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname="forest")
    return buffer.getvalue()


def _send(client, name: str, kind: str, filename: str, content: bytes) -> dict:  # type: ignore[no-untyped-def]
    import hashlib

    body = {"name": name, "kind": kind, "filename": filename, "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest()}  # fmt: skip
    created = client.post("/v1/uploads", json=body)
    assert created.status_code == 201, created.text
    half = len(content) // 2
    for offset, chunk in ((0, content[:half]), (half, content[half:])):
        headers = {"Upload-Offset": str(offset),
                   "Content-Type": "application/offset+octet-stream"}  # fmt: skip
        answer = client.patch(f"/v1/uploads/{created.json()['id']}", content=chunk,
                              headers=headers)  # fmt: skip
        assert answer.status_code == 200, answer.text
    assert answer.json()["state"] == "ready"
    return answer.json()


def test_a_planted_canary_is_nowhere_once_her_uploads_are_deleted(tmp_path: Path) -> None:
    from panoramia.modalities.tabular.adult import load_adult
    from panoramia.service.worker.run import run_audit
    from panoramia.store.repository import AuditStatus

    train, test = load_adult()
    members = train.iloc[:800].copy()
    members.loc[members.index[:60], "native-country"] = CANARY  # a value only she holds
    home = tmp_path / "home"
    database_url = f"sqlite:///{home / 'store.sqlite'}"
    home.mkdir()
    with queued_only_service(home, database_url, redis_database(2),
                             rate_limit="1000/minute") as service:  # fmt: skip
        service: LiveService
        with service.client(service.token("alice")) as alice:
            _send(alice, "census", "data", "census.csv", members.to_csv(index=False).encode())
            _send(alice, "held-out", "data", "held-out.csv",
                  test.iloc[:400].to_csv(index=False).encode())  # fmt: skip
            _send(alice, "forest", "model", "forest.tar.gz",
                  _model_archive(members, tmp_path / "forest"))  # fmt: skip
            body = {
                "model": {"name": "census-forest", "version": "1"},
                "target": {"path": "forest"},
                "data": {"source": "csv", "members": "census", "nonmembers": "held-out",
                         "label": "income"},
                "overrides": [o for o in TINY_AUDIT if not o.startswith("target.")],
            }  # fmt: skip
            submitted = alice.post("/v1/audits", json=body)
            assert submitted.status_code == 202, submitted.text
            audit_id = submitted.json()["id"]
            assert run_audit(service.store, service.settings, audit_id) == AuditStatus.SUCCEEDED
            done = alice.get(f"/v1/audits/{audit_id}").json()
            report_id = done["report_id"]
            before = _files_holding(home, CANARY.encode())
            assert any(p.startswith("uploads/") for p in before)
            assert any(p.startswith("artifacts/") for p in before)  # the pool, the generator
            assert not (service.settings.audits_dir / audit_id / "inputs").exists()  # kept 0 h
            removed = {}
            for name in ("census", "held-out", "forest"):
                gone = alice.delete(f"/v1/uploads/{name}")
                assert gone.status_code == 200, gone.text
                removed[name] = gone.json()
            assert alice.get("/v1/uploads").json() == []
            report = alice.get(f"/v1/reports/{report_id}").json()
            page = alice.get(f"/v1/reports/{report_id}/html").text

    assert removed["census"]["stages_removed"] >= 5  # data, generator, pool, h, losses, …
    assert removed["census"]["run_directories_removed"] == 1
    assert removed["census"]["reports_redacted"] == 1
    after = _files_holding(home, CANARY.encode())
    assert after == [], after
    assert report["eps_tilde"] >= 0
    assert report["c_lb"] is not None
    assert "removed" in report["document"]["exposure"]
    assert "was deleted" in page
    assert CANARY not in page
    assert CANARY not in json.dumps(report)


def test_deleting_over_a_hostile_stage_store_keeps_the_service_answering(
    tmp_path: Path, database_url: str
) -> None:
    """Issue 68, finding 3, replayed on a live service: her audit child planted, in her own
    stage store, FIFOs where stages' records should be, a record linked to a 1 GiB file and
    one linked into another contributor's store. Ten deletions at once end in seconds,
    ``/healthz`` and another contributor's reads answer meanwhile, nothing of the other store
    is counted or removed, and the server's memory stays where it was."""
    import os
    import resource
    import time
    from concurrent.futures import ThreadPoolExecutor

    home = tmp_path / "home"
    home.mkdir()
    with queued_only_service(home, database_url, redis_database(2),
                             rate_limit="1000/minute") as service:  # fmt: skip
        service: LiveService
        bob_token, alice_token = service.token("bob"), service.token("alice")
        with service.client(alice_token) as alice:
            names = [f"rows-{index}" for index in range(10)]
            for name in names:
                _send(alice, name, "data", f"{name}.csv", b"a,b\n1,2\n3,4\n")
            alice_id = service.store.authenticate(alice_token).contributor_id  # type: ignore[union-attr]
            bob_id = service.store.authenticate(bob_token).contributor_id  # type: ignore[union-attr]
            hers = service.settings.artifacts_dir / str(alice_id)
            theirs = service.settings.artifacts_dir / str(bob_id)
            (theirs / "data" / "b1").mkdir(parents=True)
            upload = alice.get(f"/v1/uploads/{names[0]}").json()
            record = {"config": {"members_path_sha256": upload["sha256"]}, "inputs": {}}
            (theirs / "data" / "b1" / "_done.json").write_text(json.dumps(record))
            large = tmp_path / "large.json"
            with large.open("wb") as handle:
                handle.truncate(2**30)
            for index in range(20):
                (hers / "data" / f"fifo{index}").mkdir(parents=True)
                os.mkfifo(hers / "data" / f"fifo{index}" / "_done.json")
            (hers / "data" / "large").mkdir()
            (hers / "data" / "large" / "_done.json").symlink_to(large)
            (hers / "data" / "linked").mkdir()
            (hers / "data" / "linked" / "_done.json").symlink_to(theirs / "data" / "b1" / DONE)
            (hers / "bobs").symlink_to(theirs / "data")
            memory_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            started = time.monotonic()
            with ThreadPoolExecutor(len(names)) as pool:
                deleting = [pool.submit(alice.delete, f"/v1/uploads/{n}") for n in names]
                with service.client(bob_token, timeout=10) as bob, service.client(None) as anyone:
                    for _ in range(5):
                        assert anyone.get("/healthz").status_code == 200
                        assert bob.get("/v1/uploads").status_code == 200
                answers = [future.result(timeout=60) for future in deleting]
            elapsed = time.monotonic() - started
    assert [answer.status_code for answer in answers] == [200] * len(names)
    assert {answer.json()["stages_removed"] for answer in answers} == {0}
    assert elapsed < 30, elapsed
    assert (theirs / "data" / "b1" / "_done.json").exists()
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory_before) / 1024
    assert grown_mib < 256, grown_mib  # a 1 GiB record is never read
