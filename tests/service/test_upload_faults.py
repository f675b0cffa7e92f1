"""The upload path under faults and floods, against a live service on SQLite and PostgreSQL:
every state readable, deletions once and during a check, quotas on what lands, checks in turn
per contributor, the console under the API's limits, the service's own headers, and a server
killed during a check (the restart checks it again)."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.service.test_uploads import CSV, _file, _tar, announce, send, stored_files, upload
from tests.service_support import (
    LiveService,
    healthy,
    kill_group,
    queued_only_service,
    redis_database,
    served_by_hand,
    start_detached,
    wait_for,
)

BIN = Path(sys.executable).parent
FORM = {"content-type": "application/x-www-form-urlencoded"}


@contextlib.contextmanager
def small_service(tmp_path: Path, database_url: str, **changes: object) -> Iterator[LiveService]:
    """A live service with an 8 MiB file limit and a 3 MiB quota (audits stay queued)."""
    with queued_only_service(
        tmp_path / "home", database_url, redis_database(2), rate_limit="1000/minute",
        max_file_bytes=8 * 2**20, max_storage_bytes=3 * 2**20, heartbeat_s=0.2, **changes,
    ) as running:  # fmt: skip
        yield running


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with small_service(tmp_path, database_url) as running:
        yield running


def slow_csv(rows: int = 400_000) -> bytes:
    """A gzip CSV whose check takes a second or more (pandas reads every row)."""
    body = "".join(f"{i % 97},{i % 13},label{i % 2}\n" for i in range(rows))
    return gzip.compress(("a,b,y\n" + body).encode(), 6)


def test_every_state_is_readable_and_listed(service: LiveService) -> None:
    from panoramia.store.uploads import CHECKING, DELETING, RECEIVING, UploadRows

    rows = UploadRows(service.store)
    with service.client(service.token("alice")) as alice:
        created = announce(alice, CSV).json()
        for state in (CHECKING, DELETING, RECEIVING):
            assert rows.move(created["id"], (RECEIVING, CHECKING, DELETING), state)
            for path in ("/v1/uploads", f"/v1/uploads/{created['id']}", "/v1/uploads/members"):
                answer = alice.get(path)
                assert answer.status_code == 200, (state, path, answer.text)
                found = answer.json()
                assert (found[0] if isinstance(found, list) else found)["state"] == state


def test_a_deletion_during_a_real_check_is_carried_out_when_it_ends(
    service: LiveService,
) -> None:
    content = slow_csv()
    with service.client(service.token("alice")) as alice:
        created = announce(alice, content, filename="members.csv.gz").json()
        last: list[httpx.Response] = []
        sender = threading.Thread(
            target=lambda: last.append(send(alice, created["id"], 0, content))
        )
        sender.start()
        wait_for(lambda: alice.get(f"/v1/uploads/{created['id']}").json()["state"] == "checking",
                 timeout=30, every=0.02)  # fmt: skip
        asked = alice.delete(f"/v1/uploads/{created['id']}")
        assert asked.status_code == 202, asked.text
        assert "being checked" in asked.json()["when"]
        assert alice.delete(f"/v1/uploads/{created['id']}").status_code == 409  # once
        sender.join(timeout=120)
        assert last[0].status_code == 409, last[0].text
        assert "deleted while it was checked" in last[0].text
        assert alice.get(f"/v1/uploads/{created['id']}").status_code == 404
        assert alice.get("/v1/uploads").json() == []
    assert stored_files(service) == []


def test_concurrent_deletions_of_one_upload_answer_200_once(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        upload_id = upload(alice, CSV).json()["id"]

        def delete(_: int) -> int:
            with service.client(service.token("alice")) as client:
                return client.delete(f"/v1/uploads/{upload_id}").status_code

        with ThreadPoolExecutor(4) as pool:
            codes = sorted(pool.map(delete, range(4)))
    assert codes.count(200) == 1, codes
    assert set(codes) <= {200, 404, 409}, codes
    assert stored_files(service) == []


@pytest.fixture
def three_slots(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    """Three check slots: one contributor's two checks run side by side."""
    with small_service(tmp_path, database_url, check_slots=3) as running:
        yield running


def test_two_archives_completed_at_once_cannot_both_pass_the_quota(
    three_slots: LiveService,
) -> None:
    """3 MiB quota, two archives that unpack to 2 MB each, checked side by side (each sees
    room for itself when it starts): one is kept and the other refused (507) under her
    row's lock, whatever the order."""
    service = three_slots
    archive = gzip.compress(_tar([_file("notes.txt", b"word " * 400_000)]), 9)
    with service.client(service.token("alice")) as alice:
        ids = [
            announce(alice, archive, name=f"notes-{i}", filename="notes.tar.gz").json()["id"]
            for i in range(2)
        ]
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda i: send(alice, i, 0, archive), ids))
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [200, 507], [a.text for a in answers]
        assert len(alice.get("/v1/uploads").json()) == 1


def test_empty_entries_are_not_free(service: LiveService) -> None:
    """Empty files land nowhere (not on disk, not in the upload's record of files), but each
    entry counts ENTRY_BYTES in what an archive may expand to (here 8 MiB): 600 empty files
    beside one real are kept as one file, and 2,100 (a 10 KB archive) are refused from their
    headers, before any is written."""
    entries = [_file(f"e/{i}.txt", b"") for i in range(600)] + [_file("x.txt")]
    many = [_file(f"e/{i}.txt", b"") for i in range(2100)]
    with service.client(service.token("mallory")) as mallory:
        kept = upload(mallory, gzip.compress(_tar(entries)), name="empties",
                      filename="empties.tar.gz")  # fmt: skip
        assert kept.status_code == 200, kept.text
        summary = kept.json()["summary"]
        assert (summary["files"], summary["empty_files_dropped"]) == (1, 600)
        refused = upload(mallory, gzip.compress(_tar(many)), name="many",
                         filename="many.tar.gz")  # fmt: skip
        assert refused.status_code == 422, refused.text
        assert "each entry counts" in refused.text
        assert [u["name"] for u in mallory.get("/v1/uploads").json()] == ["empties"]
    from panoramia.store.uploads import UploadRows

    assert list(UploadRows(service.store).get(kept.json()["id"]).files) == ["x.txt"]
    assert [p.name for p in stored_files(service)] == ["x.txt"]


def test_hostile_names_and_manifests_are_refused_with_one_line(service: LiveService) -> None:
    manifest = {"format": "hf-causal-lm", "modality": "text"}
    with service.client(service.token("mallory")) as mallory:
        nul = upload(mallory, b"a\x00b,y\n1,0\n2,1\n", name="nul")
        assert nul.status_code == 422, nul.text
        assert "NUL" in nul.text
        for directory in ("/", "../../../..", "missing"):
            body = json.dumps(manifest | {"directory": directory}).encode()
            archive = gzip.compress(_tar([_file("target.json", body),
                                          _file("config.json", b"{}")]))  # fmt: skip
            refused = upload(mallory, archive, name="hf", kind="model", filename="hf.tar.gz")
            assert refused.status_code == 422, (directory, refused.text)
            assert "directory" in refused.text, refused.text
        for name in ("a\tb.csv", "bell\x07.csv", "bad\ufffd.csv"):
            assert announce(mallory, CSV, filename=name).status_code == 422, name
        assert mallory.get("/v1/uploads").json() == []
    assert stored_files(service) == []


def test_a_flood_of_one_contributors_checks_waits_behind_her_own(service: LiveService) -> None:
    """Mallory completes 12 slow checks at once; Alice's small upload then waits for at most
    one of Mallory's per slot, not for all of them, and /healthz answers throughout."""
    content = slow_csv(300_000)
    with service.client(service.token("mallory")) as mallory:
        ids = [announce(mallory, content, name=f"m{i}", filename="m.csv.gz").json()["id"]
               for i in range(12)]  # fmt: skip
    flood_ended: list[float] = []

    def complete(upload_id: str) -> None:
        with service.client(service.token("mallory"), timeout=300) as client:
            assert send(client, upload_id, 0, content).status_code == 200
        flood_ended.append(time.monotonic())

    started = time.monotonic()
    threads = [threading.Thread(target=complete, args=(i,)) for i in ids]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    with service.client(service.token("alice")) as alice, service.client(None) as anyone:
        health = time.monotonic()
        assert anyone.get("/healthz").status_code == 200
        health = time.monotonic() - health
        asked = time.monotonic()
        assert upload(alice, CSV).json()["state"] == "ready"
        alice_done = time.monotonic()
    for thread in threads:
        thread.join(timeout=300)
    assert len(flood_ended) == 12
    assert health < 2.0
    assert alice_done - asked < (max(flood_ended) - started) / 2, (
        alice_done - asked, max(flood_ended) - started)  # fmt: skip
    assert alice_done < max(flood_ended)


def test_the_service_serves_no_third_party_script_and_frames_nothing(
    service: LiveService,
) -> None:
    with service.client(None) as anyone:
        for path in ("/docs", "/redoc"):
            assert anyone.get(path).status_code == 404, path
        spec = anyone.get("/openapi.json")
        assert spec.status_code == 200
        for answer in (spec, anyone.get("/healthz"), anyone.get("/v1/uploads")):
            assert answer.headers["x-frame-options"] == "DENY"
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


@pytest.fixture
def limited(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with queued_only_service(
        tmp_path / "home", database_url, redis_database(3), rate_limit="3/minute",
    ) as running:  # fmt: skip
        yield running


@contextlib.contextmanager
def _console(service: LiveService, token: str) -> Iterator[tuple[httpx.Client, str]]:
    """A signed-in console client and its forms' CSRF token."""
    client = service.client(None, follow_redirects=False, timeout=60)
    page = client.get("/console/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    signed = client.post("/console/login", content=f"csrf={csrf}&token={token}", headers=FORM)
    assert signed.status_code == 303, signed.text
    form = client.get("/console/uploads").text
    try:
        yield client, re.search(r'name="csrf" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
    finally:
        client.close()


def test_the_consoles_forms_are_held_to_the_apis_rate_limit(limited: LiveService) -> None:
    with _console(limited, limited.token("alice")) as (client, csrf):
        codes = []
        for i in range(4):
            files = {"file": (f"f{i}.csv", CSV, "text/csv")}
            sent = client.post("/console/uploads", data={"csrf": csrf, "name": f"f{i}"},
                               files=files)  # fmt: skip
            codes.append(sent.status_code)
        assert codes[:3] == [303, 303, 303], codes
        assert codes[3] == 429, codes
        listing = client.get("/console/uploads")  # reading her page is not limited
        assert listing.status_code == 200
        asking = re.search(r'href="(/console/uploads/[^"]+/delete)"', listing.text)
        assert asking is not None  # the listing links to a page that asks first
        confirm = client.get(asking.group(1))
        assert confirm.status_code == 200
        removal = re.search(r'action="(/console/uploads/[^"]+/delete)"', confirm.text)
        assert removal is not None
        for _ in range(3):
            client.post(removal.group(1), data={"csrf": csrf})
        assert client.post(removal.group(1), data={"csrf": csrf}).status_code == 429


def test_a_console_file_name_that_is_not_utf8_is_refused(service: LiveService) -> None:
    with _console(service, service.token("alice")) as (client, csrf):
        sent = _post_bad_name(client, csrf)
        assert sent.status_code == 422, sent.text
        assert "not UTF-8" in sent.text
    assert stored_files(service) == []


def _post_bad_name(client: httpx.Client, csrf: str) -> httpx.Response:
    boundary = "xyz"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="'
        ).encode()
        + b"bad\xff\xfe.csv"
        + (b'"\r\nContent-Type: text/csv\r\n\r\n')
        + CSV
        + f"\r\n--{boundary}--\r\n".encode()
    )
    kind = {"content-type": f"multipart/form-data; boundary={boundary}"}
    return client.post("/console/uploads", content=body, headers=kind)


def test_a_server_killed_during_a_check_checks_it_again_after_a_restart(
    tmp_path: Path, database_url: str
) -> None:
    """SIGKILL of the server (and the check's process with it) while an upload is checked;
    the restarted server takes the orphaned check over once its row has been still for
    PANORAMIA_STALE_AFTER_S, and the upload ends ready. A deletion asked of an upload left
    ``deleting`` is finished the same way."""
    env = os.environ | {
        "PANORAMIA_HOME": str(tmp_path / "home"),
        "PANORAMIA_DATABASE_URL": database_url,
        "PANORAMIA_HEARTBEAT_S": "0.5",
        "PANORAMIA_STALE_AFTER_S": "3",
        "PANORAMIA_MAX_FILE_MB": "64",
    }
    serve, client = served_by_hand(env)
    server = start_detached(serve, env, tmp_path / "serve.log")
    content = slow_csv(1_500_000)
    try:
        wait_for(lambda: healthy(client), timeout=60)
        created = announce(client, content, filename="members.csv.gz").json()
        sender = threading.Thread(
            target=lambda: _ignore_errors(lambda: send(client, created["id"], 0, content))
        )
        sender.start()
        wait_for(lambda: client.get(f"/v1/uploads/{created['id']}").json()["state"]
                 == "checking", timeout=60, every=0.05)  # fmt: skip
        os.kill(server.pid, signal.SIGKILL)  # the server alone: its check must die with it
        server.wait()
        sender.join(timeout=30)
        assert wait_for(lambda: not _checks_of(created["id"]), timeout=10)
        server = start_detached(serve, env, tmp_path / "serve.log")
        wait_for(lambda: healthy(client), timeout=60)
        view = wait_for(
            lambda: (v := client.get(f"/v1/uploads/{created['id']}").json())["state"] == "ready"
            and v, timeout=120, every=0.25,
        )  # fmt: skip
        assert view["summary"]["rows"] == 1_500_000
    finally:
        kill_group(server)
        client.close()
    log = (tmp_path / "serve.log").read_text()
    assert "a check left unfinished ran again" in log


def _checks_of(upload_id: str) -> list[str]:
    """The command lines of running check processes of this upload."""
    found = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = status.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "check_child" in line and upload_id in line:
            found.append(line)
    return found


def _ignore_errors(call) -> None:  # type: ignore[no-untyped-def]
    with contextlib.suppress(httpx.HTTPError):  # the server was killed under it
        call()


def test_the_cli_says_when_a_deletion_waits_for_the_check(service: LiveService) -> None:
    from panoramia.store.uploads import CHECKING, RECEIVING, UploadRows

    with service.client(service.token("alice")) as alice:
        created = announce(alice, CSV).json()
        assert send(alice, created["id"], 0, CSV[:5]).status_code == 200
    assert UploadRows(service.store).move(created["id"], (RECEIVING,), CHECKING)
    env = os.environ | {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": service.token("alice")}
    said = subprocess.run([str(BIN / "panoramia"), "data", "delete", "members"], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert said.stdout.startswith(f"members ({created['id']}): it is being checked")
    assert said.stderr == ""


def test_an_archives_headers_are_held_to_its_caps_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The red team's 99,990 empty folders, scaled down: past MAX_FOLDERS folders (named or
    implied by a file's path) or MAX_DEPTH levels, refused naming the cap, nothing made."""
    from panoramia.service.uploads import checks

    monkeypatch.setattr(checks, "MAX_FOLDERS", 50)
    folders = []
    for i in range(51):
        info = tarfile.TarInfo(f"d{i}")
        info.type = tarfile.DIRTYPE
        folders.append((info, None))
    implied = [_file(f"a{i}/b/c.txt") for i in range(26)]  # 52 folders, none named
    deep = [_file("/".join(["d"] * 40) + "/x.txt")]
    for entries, said in ((folders, "more than 50 folders"), (implied, "more than 50 folders"),
                          (deep, "deep")):  # fmt: skip
        archive = tmp_path / "a.tar"
        archive.write_bytes(_tar(entries))
        into = tmp_path / "into"
        with pytest.raises(checks.UploadRejected, match=said):
            checks.unpack_tar(archive, into, max_bytes=2**30, shown="a.tar")
        assert not into.exists()


def test_a_column_the_data_upload_lacks_is_refused_at_the_door(service: LiveService) -> None:
    """Her upload's columns were read on arrival: a label or feature it lacks is a 422 naming
    the field and the columns, not an audit that fails in the worker."""
    with service.client(service.token("alice")) as alice:
        assert upload(alice, CSV).json()["state"] == "ready"

        def submit(**data: object) -> httpx.Response:
            table = {"source": "csv", "members": "members", "label": "y"} | data
            body = {"model": {"name": "probe"}, "target": {"config": "mlp_generalised"},
                    "data": table}  # fmt: skip
            return alice.post("/v1/audits", json=body)

        wrong = submit(label="Y")
        assert wrong.status_code == 422, wrong.text
        problem = wrong.json()["detail"][0]
        assert problem["loc"][-2:] == ["data", "label"], problem
        assert "no column 'Y' in upload 'members' (did you mean 'y'?); it has: x, colour, y" in (
            problem["msg"])  # fmt: skip
        feature = submit(continuous=["x", "nope"])
        assert feature.status_code == 422
        assert feature.json()["detail"][0]["loc"][-2:] == ["data", "continuous"]
        by_file = submit(members="members.csv")  # her file's name finds its upload
        assert by_file.status_code == 202, by_file.text
        unknown = submit(members="memebers")  # names nothing of hers: 404, naming the field
        assert unknown.status_code == 404
        assert unknown.json()["detail"] == (
            "data.members: no upload named 'memebers'; your data uploads: members"
        )
        outside = submit(members="../../etc/passwd")  # says nothing of the server's files
        assert outside.status_code == 404
        assert outside.json()["detail"].startswith("data.members: no upload named '../../etc/")
        slice_ = submit(slices=["Colour"])
        assert slice_.status_code == 422
        assert slice_.json()["detail"][0]["loc"][-2:] == ["data", "slices"]
        assert "(did you mean 'colour'?)" in slice_.json()["detail"][0]["msg"]
        accepted = submit(slices=["colour"])
        assert accepted.status_code == 202
        stored = service.store.get_audit(None, accepted.json()["id"])
        assert "audit.slices=['colour']" in stored.request["overrides_resolved"]
        # a model of a table audited with images: refused at the door, naming target.path;
        # and a label value the model does not predict (its manifest's classes), naming the label
        manifest = json.dumps({"format": "xgboost-json", "file": "model.json",
                               "classes": ["red", "green"]}).encode()  # fmt: skip
        forest = _tar([_file("forest/target.json", manifest), _file("forest/model.json", b"{}")])
        made = upload(alice, forest, name="forest", kind="model", filename="forest.tar")
        assert made.json()["summary"]["modality"] == "tabular", made.text
        body = {"model": {"name": "probe"}, "target": {"path": "forest"},
                "data": {"source": "images", "members": "members"}}  # fmt: skip
        mismatched = alice.post("/v1/audits", json=body)
        assert mismatched.status_code == 422, mismatched.text
        problem = mismatched.json()["detail"][0]
        assert problem["loc"][-2:] == ["target", "path"]
        assert problem["msg"] == (
            "upload 'forest' is a model of a table; data source 'images' is an audit of images"
        )
        assert made.json()["summary"]["classes"] == ["red", "green"]
        colours = {"model": {"name": "probe"}, "target": {"path": "forest"},
                   "data": {"source": "csv", "members": "members", "label": "colour"}}  # fmt: skip
        wrong_classes = alice.post("/v1/audits", json=colours)
        assert wrong_classes.status_code == 422, wrong_classes.text
        assert wrong_classes.json()["detail"][0]["loc"][-2:] == ["data", "label"]
        assert wrong_classes.json()["detail"][0]["msg"] == (
            "label 'colour' of upload 'members' holds blue, which model upload 'forest' does "
            "not predict (its classes: red, green)"
        )
        numeric = colours | {"data": colours["data"] | {"label": "y"}}  # numbers are checked too
        refused = alice.post("/v1/audits", json=numeric)
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"][0]["msg"] == (
            "label 'y' of upload 'members' holds 0, 1, which model upload 'forest' does not "
            "predict (its classes: red, green)"
        )
        _the_models_label_and_columns_are_checked_at_the_door(alice)


def _the_models_label_and_columns_are_checked_at_the_door(alice: httpx.Client) -> None:
    """A model of numeric classes takes her numeric label (``1`` is ``"1"``, as the audit
    compares them); a model with a panoramia encoder states the column it predicts and the
    columns it reads: another label, or data that lacks one of them, is refused naming the
    field before anything is queued."""
    encoder = {"schema": {"label": "y", "categorical": ["colour"], "continuous": ["x"]},
               "categories": {"colour": ["blue", "red"]}, "means": {"x": 2.0},
               "scales": {"x": 1.0}, "classes": [0, 1]}  # fmt: skip
    manifest = json.dumps({"format": "xgboost-json", "file": "model.json",
                           "encoder": "encoder.json"}).encode()  # fmt: skip
    folder = _tar([_file("m/target.json", manifest), _file("m/model.json", b"{}"),
                   _file("m/encoder.json", json.dumps(encoder).encode())])  # fmt: skip
    made = upload(alice, folder, name="encoded", kind="model", filename="encoded.tar")
    summary = made.json()["summary"]
    assert (summary["label"], summary["features"], summary["classes"]) == (
        "y",
        ["colour", "x"],
        ["0", "1"],
    ), summary
    other = upload(alice, b"x,shade,y\n1,red,0\n2,blue,1\n", name="other", filename="o.csv")
    assert other.json()["state"] == "ready", other.text

    def submit(**data: object) -> httpx.Response:
        table = {"source": "csv", "members": "members", "label": "y"} | data
        body = {"model": {"name": "probe"}, "target": {"path": "encoded"}, "data": table}
        return alice.post("/v1/audits", json=body)

    assert submit().status_code == 202  # 0 and 1 are the encoder's classes 0 and 1
    other_label = submit(label="colour")
    assert other_label.status_code == 422
    assert other_label.json()["detail"][0]["msg"] == (
        "model upload 'encoded' predicts column 'y', not 'colour'"
    )
    lacking = submit(members="other")
    assert lacking.status_code == 422
    assert lacking.json()["detail"][0]["loc"][-2:] == ["data", "members"]
    assert lacking.json()["detail"][0]["msg"] == (
        "model upload 'encoded' reads 1 column(s) that upload 'other' lacks: colour"
    )
    held_out = submit(nonmembers="other")
    assert held_out.json()["detail"][0]["loc"][-2:] == ["data", "nonmembers"]


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


READS = {
    "csv": "a table (a CSV or Parquet file)",
    "images": "images (an .npz of arrays 'images' and 'labels', a folder of class folders or "
    "CIFAR batches)",
    "text_files": "text (a .txt or .jsonl file, or a folder of them)",
}
"""What each file data source reads, as the door's refusals say."""
NO_IMAGES = (
    "a folder without images in class folders (.png, .jpg, .jpeg, .bmp) or CIFAR batches "
    "(data_batch_*)"
)


def test_a_data_upload_its_source_cannot_read_is_refused_at_the_door(
    service: LiveService,
) -> None:
    """Issue 68, finding 8: what each data upload is was read on arrival (a table's columns,
    an npz's arrays, documents, a folder's files). A table audit of a folder, an npz or
    documents (its label a column none of them has), an image audit of a table, documents,
    text files or an npz without labels, and a text audit of a table, an npz or a folder of
    images: each a 422 naming the upload's field that queues nothing, not an audit that fails
    in the worker; each source's own kinds pass."""
    images = _npz(images=np.zeros((2, 4, 4, 1), np.uint8), labels=np.zeros(2, np.int64))
    sent = {
        "table": (CSV, "table.csv"),
        "texts": (_tar([_file("a.txt", b"one"), _file("notes/b.jsonl", b'"two"\n')]), "t.tar"),
        "scans": (_tar([_file("cat/1.png", b"png"), _file("dog/2.JPG", b"jpg")]), "s.tar"),
        "batches": (_tar([_file("data_batch_1.bin", bytes(3073))]), "b.tar"),
        "arrays": (images, "arrays.npz"),
        "unlabelled": (_npz(images=np.zeros((2, 4, 4, 1), np.uint8)), "unlabelled.npz"),
        "docs": (b'{"text": "one"}\n', "docs.jsonl"),
    }
    with service.client(service.token("alice")) as alice:
        for name, (content, filename) in sent.items():
            made = upload(alice, content, name=name, filename=filename)
            assert made.json()["state"] == "ready", (name, made.text)

        def submit(source: str, members: str, nonmembers: str | None = None) -> httpx.Response:
            config = {"csv": "mlp_generalised", "images": "cnn_overfit",
                      "text_files": "gpt2_many_epochs"}[source]  # fmt: skip
            data = {"source": source, "members": members}
            data |= {"label": "y"} if source == "csv" else {}
            data |= {"nonmembers": nonmembers} if nonmembers else {}
            body = {"model": {"name": "probe"}, "target": {"config": config}, "data": data}
            return alice.post("/v1/audits", json=body)

        refused = [  # (source, members, nonmembers), the field refused, what its upload is
            (("csv", "texts", None), "members", "a folder"),
            (("csv", "table", "scans"), "nonmembers", "a folder"),
            (("csv", "arrays", None), "members", "an .npz of arrays"),
            (("csv", "docs", None), "members", "a file of documents"),
            (("images", "table", None), "members", "a table"),
            (("images", "docs", None), "members", "a file of documents"),
            (("images", "texts", None), "members", NO_IMAGES),
            (("images", "arrays", "unlabelled"), "nonmembers", "an .npz without array 'labels'"),
            (("text_files", "table", None), "members", "a table"),
            (("text_files", "arrays", None), "members", "an .npz of arrays"),
            (("text_files", "scans", None), "members", "a folder without .txt or .jsonl files"),
        ]
        for (source, *names), field, what in refused:
            answer = submit(source, *names)
            assert answer.status_code == 422, (source, names, answer.text)
            (problem,) = answer.json()["detail"]
            assert problem["loc"] == ["body", "data", field], (source, names)
            name = names[0] if field == "members" else names[1]
            assert problem["msg"] == (
                f"upload {name!r} is {what}; data source {source!r} reads {READS[source]}"
            )
        principal = service.store.authenticate(service.tokens["alice"])
        assert principal is not None
        assert service.store.audit_ids(principal.contributor_id) == []  # nothing queued
        for request in [("images", "scans", "arrays"), ("images", "batches"),
                        ("text_files", "texts", "docs")]:  # fmt: skip
            answer = submit(*request)
            assert answer.status_code == 202, (request, answer.text)


def test_hostile_documents_are_refused_on_arrival_and_nothing_is_kept(
    service: LiveService,
) -> None:
    """A text audit's documents over the network (``.jsonl``, ``.txt``): each hostile one gets a
    422 of one line naming her file, nothing of it stays, and the service answers on; a good one
    is kept and a text audit of it is accepted."""
    hostile = {
        "bad.jsonl": (b'{"text": "ok"}\nnot json\n', "bad.jsonl: line 2 is not one JSON value"),
        "deep.jsonl": (b"[" * 200_000 + b"]" * 200_000 + b"\n", "deep.jsonl: line 1 is not one"),
        "latin.txt": ("café\n".encode("latin-1"), "latin.txt: line 1 is not UTF-8 text"),
        "packed.jsonl": (gzip.compress(b'{"text": "x"}\n'), "packed.jsonl: line 1 is not"),
        "field.jsonl": (b'{"body": "no text field"}\n', "needs a string field 'text'"),
        "blank.txt": (b"\n \n", "blank.txt: no document"),
    }
    with service.client(service.token("mallory")) as mallory:
        for filename, (content, message) in hostile.items():
            refused = upload(mallory, content, name=filename.split(".")[0], filename=filename)
            assert refused.status_code == 422, (filename, refused.text)
            assert message in refused.text, (filename, refused.text)
            assert "\\n" not in refused.json()["detail"], refused.text
        assert mallory.get("/v1/uploads").json() == []
        assert stored_files(service) == []
        kept = upload(mallory, b'{"text": "a note"}\n', name="notes", filename="notes.jsonl")
        assert kept.status_code == 200, kept.text
        body = {"model": {"name": "m"}, "target": {"config": "gpt2_few_epochs"},
                "data": {"source": "text_files", "members": "notes"}}  # fmt: skip
        assert mallory.post("/v1/audits", json=body).status_code == 202
        assert mallory.get("/healthz").status_code == 200
