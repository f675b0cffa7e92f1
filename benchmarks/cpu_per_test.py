"""A pytest plugin that records each test's CPU seconds (loaded by ``suite_time.py --by-file``).

For every test it appends one JSON line to ``$SUITE_CPU_DIR/<xdist worker>.jsonl``:
``{"test": node id, "self": s, "children": s, "wall": s}``, where ``self`` is the CPU (user +
system) of the process that ran the test and ``children`` that of the processes it started and
reaped meanwhile (servers, audit children, Lightning's spawned ranks: their whole subtree, as
``getrusage(RUSAGE_CHILDREN)`` counts it). Processes reaped by someone else are not counted:
the audits of ``tests/cli_support.py``'s fork server (reaped by the fork server), the
databases. A line ``{"test": "__worker__", "self": s}`` gives the CPU a worker spent before its
first test (imports and collection).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
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
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.lines = (directory / f"{worker}.jsonl").open("a")
        self.started = False

    def write(self, line: dict) -> None:
        self.lines.write(json.dumps(line) + "\n")
        self.lines.flush()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        own, children = _cpu()
        if not self.started:
            self.started = True
            self.write({"test": "__worker__", "self": own, "children": children, "wall": 0.0})
        started = time.perf_counter()
        yield
        own_after, children_after = _cpu()
        self.write({
            "test": item.nodeid, "self": own_after - own, "children": children_after - children,
            "wall": time.perf_counter() - started,
        })  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    directory = os.environ.get(DIRECTORY_VARIABLE)
    if directory:  # an xdist controller runs no test, so it writes nothing
        config.pluginmanager.register(_Recorder(Path(directory)), "cpu-per-test-recorder")
