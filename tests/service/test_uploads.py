"""Uploads over the network (``/v1/uploads``): resumable chunks, SHA-256, checks on arrival,
owner-only access, the quota; and hostile uploads, each refused with a 4xx and nothing kept."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from panoramia.service.uploads.checks import ENTRY_BYTES
from tests.service_support import LiveService, queued_only_service, redis_database

CSV = b"x,colour,y\n1.5,red,0\n2,blue,1\n3,red,1\n"


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with queued_only_service(
        tmp_path / "home", database_url, redis_database(2), rate_limit="1000/minute",
        max_file_bytes=2 * 2**20, max_storage_bytes=3 * 2**20,
    ) as running:  # fmt: skip
        yield running


def announce(client: httpx.Client, content: bytes, **fields: object) -> httpx.Response:
    body = {"name": "members", "kind": "data", "filename": "members.csv", "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest()} | fields  # fmt: skip
    return client.post("/v1/uploads", json=body)


def send(client: httpx.Client, upload_id: str, offset: int, chunk: bytes) -> httpx.Response:
    headers = {"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"}
    return client.patch(f"/v1/uploads/{upload_id}", content=chunk, headers=headers)


def upload(client: httpx.Client, content: bytes, **fields: object) -> httpx.Response:
    """Announce and send ``content`` in one chunk; the last answer."""
    created = announce(client, content, **fields)
    assert created.status_code == 201, created.text
    return send(client, created.json()["id"], 0, content)


def stored_files(service: LiveService) -> list[Path]:
    return [p for p in service.settings.uploads_dir.rglob("*") if p.is_file()]


def test_a_csv_arrives_in_chunks_resumes_from_the_offset_held_and_is_checked(
    service: LiveService,
) -> None:
    with service.client(service.token("alice")) as alice:
        created = announce(alice, CSV)
        assert created.status_code == 201, created.text
        upload_id = created.json()["id"]
        assert created.headers["Location"] == f"/v1/uploads/{upload_id}"
        first = send(alice, upload_id, 0, CSV[:10])
        assert first.status_code == 200, first.text
        assert first.json()["state"] == "receiving"
        # the connection broke here: the client asks how much arrived, and sends the rest
        held = alice.head(f"/v1/uploads/{upload_id}")
        assert held.headers["Upload-Offset"] == "10"
        assert held.headers["Upload-Length"] == str(len(CSV))
        wrong = send(alice, upload_id, 0, CSV)  # a chunk sent again is refused, not appended
        assert wrong.status_code == 409
        assert wrong.headers["Upload-Offset"] == "10"
        done = send(alice, upload_id, 10, CSV[10:])
        assert done.status_code == 200, done.text
        view = done.json()
        assert view["state"] == "ready"
        summary = view["summary"]
        assert summary["rows"] == 3
        assert summary["columns"] == [["x", "number"], ["colour", "text"], ["y", "number"]]
        assert summary["unpacked_bytes"] >= len(CSV) + 2 * ENTRY_BYTES  # blocks, 2 entries
        assert [u["name"] for u in alice.get("/v1/uploads").json()] == ["members"]
        assert alice.get("/v1/uploads/members").json()["id"] == upload_id
        assert announce(alice, CSV).status_code == 409  # the name is hers already
        usage = alice.get("/v1/usage").json()
        assert usage["file_bytes"] >= len(CSV)
    kept = stored_files(service)
    assert [p.read_bytes() for p in kept] == [CSV]
    assert all(p.stat().st_mode & 0o077 == 0 for p in kept)
    assert str(service.settings.home) not in json.dumps(view)


def test_another_contributors_upload_is_not_found_anywhere(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        upload_id = upload(alice, CSV).json()["id"]
    with service.client(service.token("mallory")) as mallory:
        for method, path in [("GET", f"/v1/uploads/{upload_id}"), ("GET", "/v1/uploads/members"),
                             ("HEAD", f"/v1/uploads/{upload_id}"),
                             ("DELETE", f"/v1/uploads/{upload_id}")]:  # fmt: skip
            assert mallory.request(method, path).status_code == 404, (method, path)
        assert send(mallory, upload_id, 0, b"x").status_code == 404
        assert mallory.get("/v1/uploads").json() == []
        body = {"model": {"name": "m"}, "target": {"config": "mlp_generalised"},
                "data": {"source": "csv", "members": upload_id, "label": "y"}}  # fmt: skip
        named = mallory.post("/v1/audits", json=body)  # her id is no name of mallory's
        assert named.status_code == 404
        assert "no upload named" in named.text
        assert "you have no data upload" in named.text  # hers are not named to him
    with service.client(service.token("alice")) as alice:
        assert alice.get(f"/v1/uploads/{upload_id}").json()["state"] == "ready"


def _tar(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, content in entries:
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return buffer.getvalue()


def _file(name: str, content: bytes = b"hello") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    return info, content


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def _npz_bomb() -> bytes:
    """An npz whose array header declares 8 GB (it holds a few bytes)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**9,)}
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("images.npy", header.getvalue() + b"\0" * 16)
    return buffer.getvalue()


def _lora_adapter(**config: object) -> bytes:
    """A ``peft`` model folder whose adapter config is LoRA's with ``config`` over it (its
    weights are never read: the config is refused first)."""
    manifest = {"format": "peft", "modality": "text", "base": "base", "adapter": "adapter"}
    settings = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]}
    return _tar([
        _file("target.json", json.dumps(manifest).encode()),
        _file("base/config.json", b'{"architectures": ["LlamaForCausalLM"]}'),
        _file("adapter/adapter_config.json", json.dumps(settings | config).encode()),
        _file("adapter/adapter_model.safetensors", b"never read"),
    ])  # fmt: skip


CATASTROPHIC = "(a+)+$"
"""A pattern whose match against a 12-character module name takes seconds, 38 times more
for each 2 characters more (issue 68, finding 4)."""


HOSTILE = {
    "a compression bomb": (gzip.compress(b"x,y\n" + b"1,0\n" * 2**20, 9), {"filename": "m.csv.gz"},
                           "expands past"),
    "an npz bomb": (_npz_bomb(), {"filename": "scans.npz"}, "declares 8000000000 bytes"),
    "an archive bomb": (gzip.compress(_tar([_file("zeros.txt", b"0" * 3 * 2**20)]), 9),
                        {"filename": "notes.tar.gz"}, "expands past"),
    "an archive entry that climbs out": (_tar([_file("../../escaped.txt")]),
                                         {"filename": "notes.tar"}, "would land outside"),
    "an absolute archive entry": (_tar([_file("/etc/cron.d/x")]), {"filename": "notes.tar"},
                                  "would land outside"),
    "a link in an archive": (_tar([_file("a.txt"), _link("b.txt", "/etc/passwd")]),
                             {"filename": "notes.tar"}, "is a link or a special file"),
    "a CSV of too many columns": (b",".join(b"c%d" % i for i in range(10_001)) + b"\n1\n", {},
                                  "10001 columns; at most 10000"),
    "a corrupt compressed CSV": (b"\x1f\x8b\x08\x00" + b"\x00" * 40, {"filename": "m.csv.gz"},
                                 "not a readable CSV"),
    "a CSV whose rows do not match its header": (b"a,b\n1,2,3\n", {},
                                                 "more fields than the header"),
    "a model with no manifest": (_tar([_file("model.json")]),
                                 {"kind": "model", "filename": "m.tar"}, "no target.json"),
    "a model that is a URL": (_tar([_file("target.json", b'{"format": "http", "url": "x"}')]),
                              {"kind": "model", "filename": "m.tar"}, "only the operator"),
    "a model whose file lies outside": (
        _tar([_file("target.json", b'{"format": "skops", "file": "../../x.skops"}')]),
        {"kind": "model", "filename": "m.tar"}, "inside the model directory"),
    "a LoRA adapter naming its modules by a pattern": (
        _lora_adapter(target_modules=CATASTROPHIC), {"kind": "model", "filename": "lora.tar"},
        "adapter config 'target_modules' is a string, which peft would match as a regular"),
    "a LoRA adapter whose rank pattern is a pattern": (
        _lora_adapter(rank_pattern={CATASTROPHIC: 4}), {"kind": "model", "filename": "lora.tar"},
        "adapter config 'rank_pattern' holds '(a+)+$', not a module name"),
    "a model sent as data": (_tar([_file("m/target.json", b'{"format": "skops"}')]),
                             {"filename": "m.tar.gz"}, "m.tar.gz: holds a model (its "
                             "target.json): upload it as a model"),
    "documents escaping a NUL": (b'"ok"\n{"text": "a\\u0000b"}\n', {"filename": "notes.jsonl"},
                                 "notes.jsonl: line 2 holds a NUL character (U+0000)"),
    "documents escaping a lone surrogate": (b'"\\ud800"\n', {"filename": "notes.jsonl"},
                                            "notes.jsonl: line 1 holds a lone surrogate"),
    "a text document holding a NUL": (b"one\ntwo\x00\n", {"filename": "notes.txt"},
                                      "notes.txt: line 2 holds a NUL character"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_upload_is_refused_on_arrival_and_nothing_is_kept(
    service: LiveService, case: str
) -> None:
    content, fields, message = HOSTILE[case]
    with service.client(service.token("mallory")) as mallory:
        answer = upload(mallory, content, **fields)
        assert answer.status_code == 422, answer.text
        assert message in answer.text
        assert "nothing was kept" in answer.text
        assert str(service.settings.home) not in answer.text
        assert mallory.get("/v1/uploads").json() == []
    assert stored_files(service) == []
    assert not (service.settings.home / "escaped.txt").exists()


def test_refused_at_the_door_before_any_byte(service: LiveService) -> None:
    with service.client(service.token("mallory")) as mallory:
        cases = {
            "a name carrying ${": ({"name": "${oc.env:HOME}"}, 422),
            "a file name carrying ${": ({"filename": "${x}.csv"}, 422),
            "a path as a file name": ({"filename": "../../m.csv"}, 422),
            "an unknown format": ({"filename": "m.exe"}, 422),
            "a model as a lone CSV": ({"kind": "model"}, 422),
            "an oversized file": ({"size": 3 * 2**20}, 422),
            "a bad checksum's form": ({"sha256": "abc"}, 422),
        }
        for case, (fields, status) in cases.items():
            answer = announce(mallory, CSV, **fields)
            assert answer.status_code == status, (case, answer.text)
            assert "${" not in answer.text.replace("'${'", ""), case  # the value is not echoed
        full = announce(mallory, b"x" * 100, size=2 * 2**20, filename="a.csv")
        assert full.status_code == 201
        over = announce(mallory, CSV, name="second", size=2 * 2**20 + 1)  # past the file limit
        assert over.status_code in (422, 507)
        past_quota = announce(mallory, CSV, name="third", size=2 * 2**20)
        assert past_quota.status_code == 507, past_quota.text
    assert all(p.stat().st_size == 0 for p in stored_files(service))


def test_a_wrong_checksum_or_a_chunk_past_the_size_keeps_nothing(service: LiveService) -> None:
    with service.client(service.token("mallory")) as mallory:
        wrong = upload(mallory, CSV, sha256="0" * 64)
        assert wrong.status_code == 422
        assert "does not match the declared" in wrong.text
        created = announce(mallory, CSV, name="short")
        too_long = send(mallory, created.json()["id"], 0, CSV + b"4,red,0\n")
        assert too_long.status_code == 413
        assert mallory.head(f"/v1/uploads/{created.json()['id']}").headers["Upload-Offset"] == "0"
        assert [u["name"] for u in mallory.get("/v1/uploads").json()] == ["short"]
    assert [p.stat().st_size for p in stored_files(service)] == [0]


def test_the_cli_names_an_upload_by_its_file_without_the_format(tmp_path: Path) -> None:
    from panoramia.cli.uploads import default_name, described

    (tmp_path / "census.csv.gz").write_bytes(b"x")
    (tmp_path / "forest").mkdir()
    assert default_name(tmp_path / "census.csv.gz") == "census"
    assert default_name(tmp_path / "forest") == "forest"
    summary = {"rows": 3, "columns": [["x", "number"], ["colour", "text"]]}
    assert described(summary) == "3 rows, 2 columns: x (number), colour (text)"


def test_the_cli_uploads_resumes_lists_and_deletes(service: LiveService, tmp_path: Path) -> None:
    """``panoramia data upload`` run again after a broken upload sends only what is missing."""
    import os
    import subprocess
    import sys

    data = tmp_path / "census.csv"
    header, rows = CSV.split(b"\n", 1)
    data.write_bytes(header + b"\n" + rows * 1000)
    env = os.environ | {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": service.token("alice")}
    with service.client(service.token("alice")) as alice:  # a first try broke off at 100 bytes
        created = announce(alice, data.read_bytes(), name="census", filename="census.csv")
        send(alice, created.json()["id"], 0, data.read_bytes()[:100])
    command = [str(Path(sys.executable).parent / "panoramia"), "data"]
    sent = subprocess.run([*command, "upload", str(data)], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert sent.stderr.splitlines()[0].startswith(f"sent 100 of {data.stat().st_size:,} bytes")
    assert "census" in sent.stdout
    assert "3,000 rows, 3 columns: x (number), colour (text), y (number)" in sent.stdout
    listed = subprocess.run([*command, "list"], env=env, capture_output=True, text=True)
    assert "census" in listed.stdout
    gone = subprocess.run([*command, "delete", "census"], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert gone.stdout.startswith("Deleted upload 'census' (data) and what was made from it: ")
    assert stored_files(service) == []


def test_a_check_that_needs_too_much_memory_fails_alone(
    service: LiveService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs in a process with a memory ceiling: past it, that upload is refused
    (nothing kept) and the service goes on."""
    from panoramia.service.uploads import files

    monkeypatch.setattr(files, "CHECK_MEMORY_BYTES", 40 * 2**20)  # not even pandas fits
    with service.client(service.token("mallory")) as mallory:
        answer = upload(mallory, CSV)
        assert answer.status_code == 422, answer.text
        assert "could not be checked" in answer.text or "more memory" in answer.text
        assert mallory.get("/v1/uploads").json() == []
    assert stored_files(service) == []
    monkeypatch.undo()
    with service.client(service.token("mallory")) as mallory:
        assert upload(mallory, CSV).json()["state"] == "ready"


def test_an_archive_counts_in_the_quota_as_unpacked(service: LiveService) -> None:
    """3 MiB quota: a small .tar.gz that unpacks to 1.9 MB fits once, not twice."""
    archive = gzip.compress(_tar([_file("notes.txt", b"word " * 400_000)]), 9)
    assert len(archive) < 20_000
    with service.client(service.token("alice")) as alice:
        first = upload(alice, archive, name="notes", filename="notes.tar.gz")
        assert 2_000_000 < first.json()["summary"]["unpacked_bytes"] < 2_100_000
        second = upload(alice, archive, name="notes-2", filename="notes.tar.gz")
        assert second.status_code == 422, second.text  # from its headers, before it lands
        assert "your storage left" in second.text
        assert [u["name"] for u in alice.get("/v1/uploads").json()] == ["notes"]
        assert alice.get("/v1/usage").json()["file_bytes"] >= 2_000_000


def test_one_check_per_upload_and_a_deletion_asked_during_it_ends_with_it(
    service: LiveService,
) -> None:
    from panoramia.service.uploads.intake import erase_after_check
    from panoramia.store.uploads import CHECKING, RECEIVING, UploadRows

    rows = UploadRows(service.store)
    with service.client(service.token("alice")) as alice:
        created = announce(alice, CSV).json()
        assert send(alice, created["id"], 0, CSV[:5]).status_code == 200
        assert rows.move(created["id"], (RECEIVING,), CHECKING)  # a check is running
        assert not rows.move(created["id"], (RECEIVING,), CHECKING)  # a second is not started
        assert send(alice, created["id"], 5, CSV[5:]).status_code == 409
        assert alice.get(f"/v1/uploads/{created['id']}").json()["state"] == "checking"
        asked = alice.delete(f"/v1/uploads/{created['id']}")
        assert asked.status_code == 202, asked.text
        assert "being checked" in asked.json()["when"]
        assert alice.get(f"/v1/uploads/{created['id']}").json()["state"] == "deleting"
        erase_after_check(service.store, service.settings, rows.get(created["id"]))  # its end
        assert alice.get(f"/v1/uploads/{created['id']}").status_code == 404
        done = upload(alice, CSV)
        assert done.json()["state"] == "ready"
        again = send(alice, done.json()["id"], len(CSV), b"")  # a retried last chunk
        assert again.status_code == 409
        assert alice.get(f"/v1/uploads/{done.json()['id']}").json()["state"] == "ready"
    assert len(stored_files(service)) == 1
