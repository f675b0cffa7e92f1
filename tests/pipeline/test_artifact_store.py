"""Artifact store and stage runner: atomic publication, reuse, a crash loses one stage."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages import StageResult, StageRunner
from panoramia.pipeline.stages.stage_key import StageKey
from panoramia.pipeline.store import ArtifactStore


def _runner(root: Path) -> StageRunner:
    return StageRunner(ArtifactStore(root), total=2, console=Console(quiet=True))


def test_stage_is_built_once_and_reused(tmp_path: Path) -> None:
    calls = []

    def build(directory: Path) -> dict:
        calls.append(directory)
        (directory / "out.txt").write_text("42")
        return {"answer": 42}

    first = _runner(tmp_path).run(StageKey("alpha"), build, config={"x": 1}, inputs=[])
    second = _runner(tmp_path).run(StageKey("alpha"), build, config={"x": 1}, inputs=[])
    assert len(calls) == 1
    assert second.reused
    assert not first.reused
    assert (second.directory / "out.txt").read_text() == "42"
    assert second.info == {"answer": 42}
    changed = _runner(tmp_path).run(StageKey("alpha"), build, config={"x": 2}, inputs=[])
    assert len(calls) == 2
    assert changed.key != first.key
    downstream = _runner(tmp_path).run(StageKey("beta"), build, config={}, inputs=[first])
    other = _runner(tmp_path).run(StageKey("beta"), build, config={}, inputs=[changed])
    assert downstream.key != other.key  # keys follow their inputs


def test_a_crash_leaves_no_artifact_and_keeps_earlier_ones(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    done = runner.run(
        StageKey("alpha"), lambda d: (d / "a").write_text("a") and None, config={}, inputs=[]
    )

    def crash(directory: Path) -> dict:
        (directory / "half").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(StageKey("beta"), crash, config={}, inputs=[done])
    store = ArtifactStore(tmp_path)
    assert store.is_done("alpha", done.key)
    assert not list((tmp_path / "beta").glob("*"))  # neither the half artifact nor its temp dir


def test_temporary_directories_of_dead_processes_are_swept(tmp_path: Path) -> None:
    import socket

    store = ArtifactStore(tmp_path)
    host = socket.gethostname().replace("-", "_")
    dead = tmp_path / "beta" / f".partial-k1-{host}-999999999-abcd"
    alive = tmp_path / "beta" / f".partial-k1-{host}-{os.getpid()}-abcd"
    other_key = tmp_path / "beta" / f".partial-k2-{host}-999999999-abcd"
    for directory in (dead, alive, other_key):
        directory.mkdir(parents=True)
    with store.writing("beta", "k1", {"seconds": 0}) as directory:
        (directory / "x").write_text("x")
    assert not dead.exists()
    assert alive.exists()
    assert other_key.exists()
    assert store.is_done("beta", "k1")


def test_child_seeds_are_stable_and_distinct() -> None:
    assert child_seed(0, "game") == child_seed(0, "game")
    assert len({child_seed(0, "game"), child_seed(1, "game"), child_seed(0, "split")}) == 3


def test_the_thread_count_is_part_of_every_stage_key() -> None:
    """threads=1 and unset train different weights (float sums ordered by the thread count):
    they must never share a stage (docs/SPEC.md §3, reproducibility)."""
    import torch

    from panoramia.pipeline.app import compute_environment
    from panoramia.pipeline.stages import stage_key

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = compute_environment()
        torch.set_num_threads(2)
        two = compute_environment()
    finally:
        torch.set_num_threads(before)
    assert one == {"torch_threads": 1}
    assert two == {"torch_threads": 2}
    assert stage_key("target", 1, {"epochs": 3}, [], one) != stage_key(
        "target", 1, {"epochs": 3}, [], two
    )
    assert stage_key("target", 1, {"epochs": 3}, [], one) == stage_key(
        "target", 1, {"epochs": 3}, [], dict(one)
    )


def test_runs_that_need_the_same_stage_build_it_once(tmp_path: Path) -> None:
    """A second run (a parallel launcher's other worker) waits for the first's build and
    reuses it instead of building its own copy."""
    started, release = threading.Event(), threading.Event()
    calls: list[Path] = []

    def slow_build(directory: Path) -> dict:
        calls.append(directory)
        started.set()
        assert release.wait(30)
        (directory / "out.txt").write_text("built once")
        return {}

    first: list[StageResult] = []
    builder = threading.Thread(
        target=lambda: first.append(
            _runner(tmp_path).run(StageKey("alpha"), slow_build, config={}, inputs=[])
        )
    )
    builder.start()
    assert started.wait(30)
    waited: list[str] = []
    store = ArtifactStore(tmp_path)
    runner = StageRunner(store, total=1, console=Console(quiet=True))
    second = threading.Thread(
        target=lambda: waited.append(
            runner.run(StageKey("alpha"), slow_build, config={}, inputs=[]).directory.name
        )
    )
    second.start()
    time.sleep(0.5)  # the second run is waiting on the lock, not building
    assert len(calls) == 1
    assert not waited
    release.set()
    builder.join(30)
    second.join(30)
    assert len(calls) == 1
    assert waited == [first[0].key]
    assert runner.results[0].reused
    assert (first[0].directory / "out.txt").read_text() == "built once"


def test_a_killed_builder_leaves_no_lock_behind(tmp_path: Path) -> None:
    """The kernel drops a dead process's lock: the next run builds at once."""
    store = ArtifactStore(tmp_path)
    lock = store.lock_path("alpha", "k")
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time; d = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(d, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(lock)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    waits: list[int] = []
    held = store.building("alpha", "k", waiting=lambda: _raise_blocked(waits))
    with pytest.raises(BlockingIOError), held:  # held: a second taker would wait
        pass
    holder.kill()
    holder.wait(30)
    with store.building("alpha", "k", waiting=lambda: waits.append(1)):
        pass
    assert waits == [1]  # only the attempt while it lived saw it held


def _raise_blocked(waits: list[int]) -> None:
    waits.append(1)
    raise BlockingIOError
