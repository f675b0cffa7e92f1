"""Artifact store and stage runner: atomic publication, reuse, a crash loses one stage."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages import StageRunner
from panoramia.pipeline.store import ArtifactStore


def _runner(root: Path) -> StageRunner:
    return StageRunner(ArtifactStore(root), total=2, console=Console(quiet=True))


def test_stage_is_built_once_and_reused(tmp_path: Path) -> None:
    calls = []

    def build(directory: Path) -> dict:
        calls.append(directory)
        (directory / "out.txt").write_text("42")
        return {"answer": 42}

    first = _runner(tmp_path).run("alpha", build, config={"x": 1}, inputs=[])
    second = _runner(tmp_path).run("alpha", build, config={"x": 1}, inputs=[])
    assert len(calls) == 1
    assert second.reused
    assert not first.reused
    assert (second.directory / "out.txt").read_text() == "42"
    assert second.info == {"answer": 42}
    changed = _runner(tmp_path).run("alpha", build, config={"x": 2}, inputs=[])
    assert len(calls) == 2
    assert changed.key != first.key
    downstream = _runner(tmp_path).run("beta", build, config={}, inputs=[first])
    other = _runner(tmp_path).run("beta", build, config={}, inputs=[changed])
    assert downstream.key != other.key  # keys follow their inputs


def test_a_crash_leaves_no_artifact_and_keeps_earlier_ones(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    done = runner.run("alpha", lambda d: (d / "a").write_text("a") and None, config={}, inputs=[])

    def crash(directory: Path) -> dict:
        (directory / "half").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run("beta", crash, config={}, inputs=[done])
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
