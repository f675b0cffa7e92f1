"""The pieces of an upload's deletion, without a service: lineage through the stage store,
and records taken out of a report's document and page."""

from __future__ import annotations

import json
from pathlib import Path

from panoramia.pipeline.store import DONE as STORE_DONE
from panoramia.pipeline.store import LOCKS as STORE_LOCKS
from panoramia.report.redaction import document_without_records, member_data, without_member_data
from panoramia.service.uploads.erase import DONE, LOCKS, remove_derived_stages


def _stage(root: Path, stage: str, key: str, config: dict, inputs: dict) -> None:
    folder = root / stage / key
    folder.mkdir(parents=True)
    (folder / DONE).write_text(json.dumps({"stage": stage, "key": key, "config": config,
                                           "inputs": inputs}))  # fmt: skip


def test_the_stages_built_on_an_upload_go_and_the_others_stay(tmp_path: Path) -> None:
    assert (DONE, LOCKS) == (STORE_DONE, STORE_LOCKS)  # the service cannot import the store
    _stage(tmp_path, "data", "d1", {"members_path_sha256": "aa" * 32}, {})
    _stage(tmp_path, "data", "d2", {"members_path_sha256": "bb" * 32}, {})
    _stage(tmp_path, "generator", "g1", {"epochs": 3}, {"data": "d1"})
    _stage(tmp_path, "pool", "p1", {}, {"generator": "g1"})
    _stage(tmp_path, "generator", "g2", {"epochs": 3}, {"data": "d2"})
    (tmp_path / "pool" / ".partial-p9-host-1-abc").mkdir()
    for stage, key in (("data", "d1"), ("data", "d2"), ("pool", "p1")):  # their build locks
        (tmp_path / LOCKS / stage).mkdir(parents=True, exist_ok=True)
        (tmp_path / LOCKS / stage / key).touch()
    assert remove_derived_stages(tmp_path, {"aa" * 32}, partials=False) == 3
    assert sorted(p.name for p in (tmp_path / LOCKS).glob("*/*")) == ["d2"]
    assert sorted(p.parent.name for p in tmp_path.glob(f"*/*/{DONE}")) == ["d2", "g2"]
    assert (tmp_path / "pool" / ".partial-p9-host-1-abc").exists()  # an audit may be writing
    assert remove_derived_stages(tmp_path, {"cc" * 32}, partials=True) == 0
    assert not (tmp_path / "pool" / ".partial-p9-host-1-abc").exists()


def test_a_failed_audits_lock_and_empty_stage_folders_go_with_the_last_of_her_data(
    tmp_path: Path,
) -> None:
    """Issue 72: a failed audit left a 0-byte build lock and empty stage folders that stayed
    after she deleted everything. Once no audit of hers runs, a lock of no stage she holds and
    every empty folder go, then her store's own folder; a lock of a stage she keeps stays."""
    store = tmp_path / "store"
    _stage(store, "data", "d1", {"members_path_sha256": "aa" * 32}, {})
    _stage(store, "data", "d2", {"members_path_sha256": "bb" * 32}, {})
    for stage in ("generator", "pool", "stand_in_2", "attack_rmrn"):  # made, never filled
        (store / stage).mkdir()
    for stage, key in (("data", "d1"), ("data", "d2"), ("generator", "g-failed")):
        (store / LOCKS / stage).mkdir(parents=True, exist_ok=True)
        (store / LOCKS / stage / key).touch()
    assert remove_derived_stages(store, {"aa" * 32}, partials=False) == 1  # an audit runs
    assert (store / LOCKS / "generator" / "g-failed").exists()  # its build may hold it
    assert (store / "pool").is_dir()
    assert remove_derived_stages(store, {"cc" * 32}, partials=True) == 0  # none runs now
    assert sorted(str(p.relative_to(store)) for p in store.rglob("*")) == [
        ".locks",
        ".locks/data",
        ".locks/data/d2",
        "data",
        "data/d2",
        f"data/d2/{DONE}",
    ]
    assert remove_derived_stages(store, {"bb" * 32}, partials=True) == 1
    assert not store.exists()  # nothing of hers, not even the folder


def test_a_report_loses_its_records_and_keeps_its_figures() -> None:
    document = {"eps_tilde": 1.2, "exposure": {"records": [{"colour": "secret"}]}}
    kept = document_without_records(document, "gone")
    assert kept == {"eps_tilde": 1.2, "exposure": {"removed": "gone"}}
    page = (f"<h1>Audit</h1>{member_data('<table>secret</table>')}<p>ε̃ 1.2</p>"
            f"{member_data('<img alt=a>')}{member_data('<img alt=b>')}")  # fmt: skip
    redacted = without_member_data(page, "Removed: <deleted>")
    assert "secret" not in redacted
    assert "img" not in redacted
    assert redacted.count("Removed: &lt;deleted&gt;") == 2  # adjacent parts: one line
    assert "<p>ε̃ 1.2</p>" in redacted
    assert member_data("") == ""


def test_a_text_reports_examples_go_too() -> None:
    document = {"eps_tilde": 0.4, "examples": {"members": ["a secret chunk"]}}
    assert document_without_records(document, "gone")["examples"] == {"removed": "gone"}


def test_a_remote_worker_clears_what_an_earlier_life_left(tmp_path: Path) -> None:
    from panoramia.service.settings import ServiceSettings
    from panoramia.service.worker.record import clear_remote_leftovers

    left = tmp_path / "audits" / "a1" / "inputs"
    left.mkdir(parents=True)
    (left / "members.csv").write_text("x\n1\n")
    shared = ServiceSettings(home=tmp_path)
    assert clear_remote_leftovers(shared) == 0  # a worker on the service's disk keeps them
    remote = ServiceSettings(home=tmp_path, service_url="http://service:8000")
    assert clear_remote_leftovers(remote) == 1
    assert list((tmp_path / "audits").iterdir()) == []


def test_erasing_never_follows_a_link_out_of_her_store(tmp_path: Path) -> None:
    """An audit child may make links in its own store: erasing her stages removes the links,
    never what they point at, and a folder where a lock file was expected stops nothing."""
    store, victim = tmp_path / "store", tmp_path / "victim"
    _stage(tmp_path, "victim", "secret.db", {"members_path_sha256": "aa" * 32}, {})
    (victim / "precious").write_text("keep")
    _stage(store, "data", "d1", {"members_path_sha256": "aa" * 32}, {})
    _stage(store, "data", "secret.db", {"members_path_sha256": "aa" * 32}, {})
    (store / "data" / "secret.db" / "x").write_text("hers")
    (store / LOCKS).mkdir()
    (store / LOCKS / "data").symlink_to(victim)  # her lock folder points elsewhere
    (store / "linked").symlink_to(victim)  # a "stage" folder that is a link
    (store / "pool").mkdir()
    (store / "pool" / ".partial-p1-host-1-abc").symlink_to(victim)
    assert remove_derived_stages(store, {"aa" * 32}, partials=True) >= 2
    assert (victim / "secret.db" / DONE).exists()
    assert (victim / "precious").read_text() == "keep"
    assert not (store / "data" / "d1").exists()
    assert not (store / "data" / "secret.db").exists()  # hers went
    assert not (store / "pool" / ".partial-p1-host-1-abc").is_symlink()  # the link itself went
    (store / LOCKS / "data").unlink()
    (store / LOCKS / "data").mkdir()
    (store / LOCKS / "data" / "d2").mkdir()  # a folder where a lock file should be
    _stage(store, "data", "d2", {"members_path_sha256": "bb" * 32}, {})
    assert remove_derived_stages(store, {"bb" * 32}, partials=False) == 1
    assert not (store / "data" / "d2").exists()


def test_erasing_reads_no_fifo_no_large_file_and_nothing_through_a_link(tmp_path: Path) -> None:
    """Issue 68, finding 3: a FIFO where a stage's record should be made the deletion hang; a
    record linked to a large file was read whole; a record linked into another contributor's
    store was read and counted. Each is now skipped at once (its stage matches nothing), and
    her own stages still go."""
    import os
    import time

    from panoramia.service.uploads.erase import MAX_RECORD_BYTES, stage_records

    store, other = tmp_path / "store", tmp_path / "other"
    _stage(other, "data", "theirs", {"members_path_sha256": "aa" * 32}, {})
    _stage(store, "data", "mine", {"members_path_sha256": "aa" * 32}, {})
    for key in ("fifo", "large", "linked", "hard"):
        (store / "data" / key).mkdir()
    os.mkfifo(store / "data" / "fifo" / DONE)
    large = tmp_path / "large.json"
    with large.open("wb") as handle:
        handle.truncate(MAX_RECORD_BYTES * 256)  # 1 GiB, sparse
    (store / "data" / "large" / DONE).symlink_to(large)
    (store / "data" / "linked" / DONE).symlink_to(other / "data" / "theirs" / DONE)
    os.link(other / "data" / "theirs" / DONE, store / "data" / "hard" / DONE)
    (store / "model").symlink_to(other / "data")  # a stage folder that is a link
    started = time.monotonic()
    records, _ = stage_records(store)
    assert time.monotonic() - started < 5
    assert records[("data", "mine")]["config"] == {"members_path_sha256": "aa" * 32}
    assert {place: records[place] for place in records if place[1] != "mine"} == {
        ("data", key): {} for key in ("fifo", "large", "linked", "hard")
    }
    assert remove_derived_stages(store, {"aa" * 32}, partials=True) == 1
    assert (other / "data" / "theirs" / DONE).exists()
    assert not (store / "data" / "mine").exists()
