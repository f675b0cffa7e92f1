"""A pytest plugin that records each test's CPU seconds (loaded by ``suite_time.py --by-file``).

For every test it appends one JSON line to ``$SUITE_CPU_DIR/<xdist worker>.jsonl``:
``{"test": node id, "self": s, "children": s, "wall": s, "began": epoch s}`` — the CPU
(user + system) of the process that ran the test, all its threads, while the test ran (its
setup and teardown included, so a module- or session-scoped fixture is charged to the first
or last test of its scope), and the CPU of the descendants reaped meanwhile, whoever started them
(``getrusage(RUSAGE_CHILDREN)``: servers, audit children, Lightning's spawned ranks, and what
they reaped in turn); and ``forked``, the CPU of the audits ``tests/cli_support.py``'s fork
server ran for the test (it reaps them, so they report their own). A stage built once in a
shared store is charged to the test that built it. A first line ``{"test": "__worker__",
...}`` gives the CPU a worker (and its reaped children) spent before its first test: imports
and collection. Without ``SUITE_CPU_DIR`` the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path

import pytest

DIRECTORY_VARIABLE = "SUITE_CPU_DIR"


def _cpu() -> tuple[float, float]:
    """(CPU seconds of this process, of its reaped children), user + system."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class _Recorder:
    def __init__(self, directory: Path) -> None:
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.directory = directory
        self.lines = (directory / f"{self.worker}.jsonl").open("a")
        self.started = False

    def forked(self) -> float:
        """CPU seconds of the audits this worker's test had the fork server run
        (``tests/cli_support.py`` adds each one's to ``forked-<worker>.log``), taken."""
        path = self.directory / f"forked-{self.worker}.log"
        try:
            lines = path.read_text().split()
        except FileNotFoundError:
            return 0.0
        path.unlink()
        return sum(float(line) for line in lines)

    def write(self, line: dict) -> None:
        self.lines.write(json.dumps(line) + "\n")
        self.lines.flush()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        own, children = _cpu()
        if not self.started:
            self.started = True
            self.write({"test": "__worker__", "self": own, "children": children, "wall": 0.0})
        started, began = time.perf_counter(), time.time()
        outcome = yield
        own_after, children_after = _cpu()
        self.write({
            "test": item.nodeid, "self": own_after - own, "children": children_after - children,
            "forked": self.forked(), "wall": time.perf_counter() - started, "began": began,
        })  # fmt: skip
        return outcome


def pytest_configure(config: pytest.Config) -> None:
    directory = os.environ.get(DIRECTORY_VARIABLE)
    if directory:  # an xdist controller runs no test, so it writes nothing
        config.pluginmanager.register(_Recorder(Path(directory)), "cpu-per-test-recorder")
