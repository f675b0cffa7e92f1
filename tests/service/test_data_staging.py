"""A contributor's data reaches the audit child only as the worker's copy (SECURITY.md, "Data
paths"): names carrying a config interpolation are refused at submission, and a file swapped
for a link after the submission's check is never read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from panoramia.errors import InputError
from panoramia.service.worker.staging import INPUTS, stage_data_files
from tests.service_support import LiveService, queued_only_service, redis_database

BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"}}
CSV = {"source": "csv", "label": "y", "continuous": ["x"]}


@pytest.fixture(scope="module")
def refusing(
    tmp_path_factory: pytest.TempPathFactory, module_database_url: str
) -> Iterator[LiveService]:
    """One live service per database: every request of these tests is refused."""
    home = tmp_path_factory.mktemp("staging") / "home"
    with queued_only_service(
        home, module_database_url, redis_database(1), rate_limit="100000/minute"
    ) as running:
        yield running


def _alice(data: Path) -> Path:
    alice = data / "alice"
    alice.mkdir(parents=True, exist_ok=True)
    (alice / "members.csv").write_text("x,y\n1,0\n2,1\n")
    (alice / "images").mkdir(exist_ok=True)
    (alice / "images" / "a.npz").write_bytes(b"alice's pictures")
    return alice


@pytest.mark.parametrize(
    "folder",
    [
        "${oc.env:NOPE_X,..",          # the reported attack: a default that climbs out
        "${env:HOME}",                 # another resolver
        "${oc.decode:'../alice'}",
        "a${b}",
        "${",
    ],
)  # fmt: skip
@pytest.mark.parametrize("field", ["members", "nonmembers"])
def test_a_name_carrying_an_interpolation_is_refused_at_submission(
    refusing: LiveService, folder: str, field: str
) -> None:
    data = refusing.settings.data_dir
    _alice(data)
    mallory = data / "mallory"
    (mallory / folder / "alice").mkdir(parents=True, exist_ok=True)
    target = mallory / folder / "members.csv}"
    target.write_text("x,y\n1,0\n")
    (mallory / "plain.csv").write_text("x,y\n1,0\n")
    link = mallory / f"m-{abs(hash(folder))}.csv"
    link.unlink(missing_ok=True)
    link.symlink_to(target)  # a link with a plain name, to the name that carries '${'
    files = {"members": "plain.csv", field: link.name}
    with refusing.client(refusing.token("mallory")) as client:
        response = client.post("/v1/audits", json=BODY | {"data": CSV | files})
    assert response.status_code == 422, response.text
    assert "may not contain '${'" in response.text
    assert response.json()["detail"][0]["loc"] == ["body", "data", field]
    assert str(data) not in response.text  # no server path in the answer


def _staged(data: Path, run_dir: Path, relative: str, key: str = "data.members_path") -> str:
    (line,), names = stage_data_files([f"{key}='{data / relative}'"], data, run_dir)
    assert list(names.values()) == [relative.split("/", 1)[1]]
    return line


def test_the_child_gets_a_copy_under_a_name_the_worker_chose(tmp_path: Path) -> None:
    data = tmp_path / "data"
    alice = _alice(data)
    run_dir = tmp_path / "run"
    line = _staged(data, run_dir, "alice/members.csv")
    assert line == f"data.members_path='{run_dir / INPUTS / 'members.csv'}'"
    assert (run_dir / INPUTS / "members.csv").read_bytes() == (alice / "members.csv").read_bytes()
    folder = _staged(data, run_dir, "alice/images", key="data.nonmembers_path")
    assert folder == f"data.nonmembers_path='{run_dir / INPUTS / 'nonmembers'}'"
    assert (run_dir / INPUTS / "nonmembers" / "a.npz").read_bytes() == b"alice's pictures"
    other = ["seed=1", "target=mlp_overfit"]
    assert stage_data_files(other, data, run_dir) == (other, {})  # the rest passes unchanged


@pytest.mark.parametrize(
    "where",
    ["the file", "a folder on the way", "the contributor's folder", "a file inside a folder"],
)
def test_a_link_swapped_in_after_the_check_is_never_read(tmp_path: Path, where: str) -> None:
    """The submission checked mallory's own files; she then swaps one of them (or a folder on
    the way, or a file inside a data folder) for a link to alice's: the worker's copy refuses
    it, and alice's bytes reach no run directory."""
    data = tmp_path / "data"
    alice = _alice(data)
    mallory = data / "mallory"
    (mallory / "sub" / "pics").mkdir(parents=True)
    (mallory / "sub" / "m.csv").write_text("x,y\n")
    (mallory / "sub" / "pics" / "own.npz").write_bytes(b"mallory's")
    relative = "mallory/sub/m.csv"
    if where == "the file":
        (mallory / "sub" / "m.csv").unlink()
        (mallory / "sub" / "m.csv").symlink_to(alice / "members.csv")
    elif where == "a folder on the way":
        os.rename(mallory / "sub", mallory / "old")
        (mallory / "sub").symlink_to(alice)
        relative = "mallory/sub/members.csv"
    elif where == "the contributor's folder":
        os.rename(mallory, data / "mallory-old")
        (data / "mallory").symlink_to(alice)
        relative = "mallory/members.csv"
    else:
        (mallory / "sub" / "pics" / "b.npz").symlink_to(alice / "images" / "a.npz")
        relative = "mallory/sub/pics"
    run_dir = tmp_path / "run"
    with pytest.raises(InputError) as refused:
        _staged(data, run_dir, relative)
    message = str(refused.value)
    assert "link" in message
    assert str(data) not in message
    copied = [p.read_bytes() for p in run_dir.rglob("*") if p.is_file()]
    assert b"alice's pictures" not in copied
    assert (alice / "members.csv").read_bytes() not in copied


def test_a_path_outside_the_data_folder_or_climbing_out_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _alice(data)
    (tmp_path / "elsewhere.csv").write_text("x\n")
    run_dir = tmp_path / "run"
    for path in (tmp_path / "elsewhere.csv", data / "alice"):
        with pytest.raises(InputError):
            stage_data_files([f"data.members_path='{path}'"], data, run_dir)
    with pytest.raises(InputError, match="inside your folder"):
        stage_data_files([f"data.members_path='{data}/alice/../alice/members.csv'"], data, run_dir)


def test_hard_links_fifos_and_deep_folders_are_refused_never_waited_on(tmp_path: Path) -> None:
    """A hard link is a second name of someone else's file (no link to follow, the same
    inode); a FIFO would block the worker's read forever; neither is read."""
    data = tmp_path / "data"
    alice = _alice(data)
    mallory = data / "mallory"
    (mallory / "pics").mkdir(parents=True)
    os.link(alice / "members.csv", mallory / "mine.csv")
    os.mkfifo(mallory / "pipe.csv")
    os.mkfifo(mallory / "pics" / "pipe.npz")
    deep = mallory / "deep"
    deep.joinpath(*["d"] * 40).mkdir(parents=True)
    run_dir = tmp_path / "run"
    for relative, message in (
        ("mallory/mine.csv", "several names"),
        ("mallory/pipe.csv", "neither a file nor a folder"),
        ("mallory/pics", "neither a file nor a folder"),
        ("mallory/deep", "nested more than"),
    ):
        with pytest.raises(InputError, match=message):
            _staged(data, run_dir, relative)
    copied = [p.read_bytes() for p in run_dir.rglob("*") if p.is_file()]
    assert (alice / "members.csv").read_bytes() not in copied


def test_submission_refuses_hard_links_and_special_files(refusing: LiveService) -> None:
    data = refusing.settings.data_dir
    alice = _alice(data)
    mallory = data / "mallory"
    (mallory / "pics").mkdir(parents=True, exist_ok=True)
    if not (mallory / "hard.csv").exists():
        os.link(alice / "members.csv", mallory / "hard.csv")
        os.mkfifo(mallory / "pics" / "pipe.npz")
    with refusing.client(refusing.token("mallory")) as client:
        hard = client.post("/v1/audits", json=BODY | {"data": CSV | {"members": "hard.csv"}})
        fifo = client.post("/v1/audits", json=BODY | {"target": {"config": "cnn_overfit"},
                                                       "data": {"source": "images",
                                                                "members": "pics"}})  # fmt: skip
    assert hard.status_code == fifo.status_code == 422
    assert "several names" in hard.text
    assert "neither a file nor a folder" in fifo.text


@pytest.mark.parametrize("swap", ["file", "folder on the way"])
def test_a_file_swapped_while_the_audit_starts_is_refused_by_the_live_worker(
    tmp_path: Path, database_url: str, swap: str
) -> None:
    """Against a live server (SQLite and PostgreSQL): mallory's audit passes every check at
    submission; she then swaps her file (or a folder on its path) for a link to alice's; the
    worker's own code path claims the audit, refuses the link, and fails the audit with one
    line in her terms; none of alice's bytes reach the run directory."""
    from panoramia.service.worker.run import run_audit
    from panoramia.store.repository import AuditStatus

    with queued_only_service(tmp_path / "home", database_url, redis_database(1),
                             rate_limit="1000/minute") as service:  # fmt: skip
        data = service.settings.data_dir
        alice = _alice(data)
        (alice / "members.csv").write_text("x,y\n" + "7,1\n" * 50)
        own = data / "mallory" / "sub"
        own.mkdir(parents=True)
        (own / "m.csv").write_text("x,y\n" + "1,0\n2,1\n" * 25)
        body = BODY | {"data": CSV | {"members": "sub/m.csv"}}
        with service.client(service.token("mallory")) as mallory:
            submitted = mallory.post("/v1/audits", json=body)
            assert submitted.status_code == 202, submitted.text
            audit_id = submitted.json()["id"]
            if swap == "file":
                (own / "m.csv").unlink()
                (own / "m.csv").symlink_to(alice / "members.csv")
            else:
                os.rename(own, data / "mallory" / "old")
                (data / "mallory" / "sub").symlink_to(alice)
                (alice / "m.csv").write_text((alice / "members.csv").read_text())
            status = run_audit(service.store, service.settings, audit_id)
            audit = mallory.get(f"/v1/audits/{audit_id}").json()
    assert status == AuditStatus.FAILED
    assert audit["status"] == "failed"
    assert "sub/m.csv: not usable (a symbolic link" in audit["error"]
    assert str(data) not in audit["error"]
    run_dir = service.settings.audits_dir / audit_id
    copied = [p.read_bytes() for p in run_dir.rglob("*") if p.is_file()]
    assert not any(b"7,1" in content for content in copied)
