"""The test suite's time, and how fast the machine that ran it is.

Machines of one kind differ: on the 2-core machines this project runs on, pytest has taken
from under 5 to 10 minutes for nearly the same suite, and its CPU time differed as much. So a
suite time is quoted with this machine's time on a fixed reference workload (importing torch
and Lightning in a fresh interpreter, and a pure-Python loop), and with the CPU seconds the
whole machine spent while it ran (``/proc/stat``: every process the suite starts, its
databases included; run it on an otherwise idle machine): the CPU seconds divided by the
reference seconds is a figure of the suite's size that moves less from one machine to the next
than its wall time. The seconds the hypervisor gave to others (steal) are printed apart.

Runs ``python -m pytest`` with the project's options (``pyproject.toml``: ``-n 3``), then
prints one table and exits with pytest's status. Arguments after ``--`` go to pytest.
``--by-file N`` also records each test's CPU (:mod:`cpu_per_test`) and prints the N test files
that took the most, how much of the machine's CPU no test was charged with, and each xdist
worker's timeline (when it began and ended: the suite's tail).

    .venv/bin/python benchmarks/suite_time.py [--repeat-reference 3] [--by-file 25] [-- PYTEST_ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOOP = "s = 0\nfor i in range(10_000_000):\n    s += i\n"
"""The pure-Python half of the reference workload."""


def reference_seconds(repeat: int) -> tuple[float, float]:
    """(seconds to import torch and Lightning in a fresh interpreter, seconds of
    :data:`LOOP`): the fastest of ``repeat`` runs each."""
    imports, loops = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch, lightning"], check=True)
        imports.append(time.perf_counter() - started)
        started = time.perf_counter()
        exec(compile(LOOP, "<reference loop>", "exec"), {})
        loops.append(time.perf_counter() - started)
    return min(imports), min(loops)


def machine_cpu() -> tuple[float, float]:
    """(CPU seconds this machine has spent busy, seconds stolen by the hypervisor) since boot,
    over all cores (``/proc/stat``'s first line)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def run_suite(
    arguments: list[str], cpu_directory: Path | None = None
) -> tuple[float, float, float, str, int]:
    """(wall seconds, CPU seconds, stolen seconds, pytest's summary line, its exit status) of
    one run; with ``cpu_directory``, each test's CPU is recorded there (:mod:`cpu_per_test`)."""
    env = dict(os.environ)
    if cpu_directory is not None:
        env["SUITE_CPU_DIR"] = str(cpu_directory)
        # The plugin alone on the path ("benchmarks" is taken by an installed package, and
        # this folder's other scripts must not shadow modules of the processes measured).
        plugin = cpu_directory / "plugin"
        plugin.mkdir()
        (plugin / "cpu_per_test.py").symlink_to(ROOT / "benchmarks" / "cpu_per_test.py")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin), env.get("PYTHONPATH")]))
        arguments = ["-p", "cpu_per_test", *arguments]
    busy, stolen = machine_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *arguments],
        cwd=ROOT, capture_output=True, text=True, env=env,
    )  # fmt: skip
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    summary = lines[-1].strip("= ") if lines else f"pytest exited {done.returncode}"
    if done.returncode != 0:
        print(done.stdout[-3000:], file=sys.stderr)
    busy_after, stolen_after = machine_cpu()
    return wall, busy_after - busy, stolen_after - stolen, summary, done.returncode


@dataclass
class FileCpu:
    """One test file's tests, summed: CPU seconds of their own processes and of the
    processes reaped while they ran, their durations, their count."""

    own: float = 0.0
    children: float = 0.0
    test_seconds: float = 0.0
    tests: int = 0

    @property
    def cpu(self) -> float:
        return self.own + self.children


def cpu_by_file(directory: Path, machine_seconds: float, shown: int) -> None:
    """Print the ``shown`` test files that took the most CPU (their tests' own and their
    reaped children's), and the machine's CPU no test was charged with."""
    files: dict[str, FileCpu] = defaultdict(FileCpu)
    workers = 0.0
    for path in directory.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["test"] == "__worker__":
                workers += record["self"] + record["children"]
                continue
            totals = files[record["test"].split("::")[0]]
            totals.own += record["self"]
            totals.children += record["children"] + record.get("forked", 0.0)
            totals.test_seconds += record["wall"]
            totals.tests += 1
    charged = sum(totals.cpu for totals in files.values())
    own = sum(totals.own for totals in files.values())
    print("\n| test file | CPU (s) | its own | its children | test-seconds (sum) | tests |")
    print("|---|---|---|---|---|---|")
    ranked = sorted(files.items(), key=lambda item: -item[1].cpu)
    for name, totals in ranked[:shown]:
        print(f"| {name} | {totals.cpu:.1f} | {totals.own:.1f} | {totals.children:.1f} "
              f"| {totals.test_seconds:.1f} | {totals.tests} |")  # fmt: skip
    rest = ranked[shown:]
    if rest:
        print(f"| {len(rest)} other files | {sum(totals.cpu for _, totals in rest):.1f} "
              "| | | | |")  # fmt: skip
    print(f"| all tests | {charged:.1f} | {own:.1f} | {charged - own:.1f} | | "
          f"{sum(totals.tests for totals in files.values())} |")  # fmt: skip
    print(f"| workers' start (imports, collection) | {workers:.1f} | | | | |")
    print(f"| charged to no test (e.g. the fork servers, databases, pytest's "
          f"controller, workers between tests) | {machine_seconds - charged - workers:.1f} "
          "| | | | |")  # fmt: skip


def worker_timeline(directory: Path) -> None:
    """Print, for each xdist worker, when its first test began and its last ended (seconds
    after the earliest start), the seconds its tests took and how many it ran: where the
    workers end far apart, the suite's tail is one worker's long tests."""
    rows = []
    for path in sorted(directory.glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        tests = [r for r in records if r["test"] != "__worker__" and "began" in r]
        if tests:
            first = min(r["began"] for r in tests)
            last = max(r["began"] + r["wall"] for r in tests)
            longest = max(tests, key=lambda r: r["wall"])
            rows.append((path.stem, first, last, sum(r["wall"] for r in tests), len(tests),
                         longest))  # fmt: skip
    if not rows:
        return
    origin = min(row[1] for row in rows)
    print("\n| worker | first test began (s) | last test ended (s) | its tests' wall (s) | "
          "tests | its longest test (s) |\n|---|---|---|---|---|---|")  # fmt: skip
    for worker, first, last, busy, count, longest in rows:
        print(
            f"| {worker} | {first - origin:.0f} | {last - origin:.0f} | {busy:.0f} | {count} "
            f"| {longest['test']} ({longest['wall']:.0f}) |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat-reference", type=int, default=3)
    parser.add_argument("--by-file", type=int, default=0, metavar="N",
                        help="also print the N test files that took the most CPU")  # fmt: skip
    arguments = sys.argv[1:]
    split = arguments.index("--") if "--" in arguments else len(arguments)
    options = parser.parse_args(arguments[:split])
    pytest_args = arguments[split + 1 :]
    imports, loop = reference_seconds(options.repeat_reference)
    print(f"reference: import torch, lightning {imports:.2f} s; loop {loop:.2f} s", flush=True)
    with tempfile.TemporaryDirectory() as temporary:
        cpu_directory = Path(temporary) if options.by_file else None
        wall, cpu, stolen, summary, status = run_suite(pytest_args, cpu_directory)
        reference = imports + loop
        print("| figure | value |\n|---|---|")
        print(f"| pytest summary | {summary} |")
        print(f"| wall (s) | {wall:.1f} |")
        print(f"| CPU, the whole machine (s) | {cpu:.1f} |")
        print(f"| stolen by the hypervisor (s) | {stolen:.1f} |")
        print(f"| reference: import torch, lightning + loop (s) | {reference:.2f} |")
        print(f"| suite size: CPU / reference | {cpu / reference:.0f} |")
        if cpu_directory is not None:
            cpu_by_file(cpu_directory, cpu, options.by_file)
            worker_timeline(cpu_directory)
    sys.exit(status)


if __name__ == "__main__":
    main()
