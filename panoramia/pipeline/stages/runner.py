"""Running stages with reuse: a stage's key hashes its name, version, config and input keys."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from panoramia.pipeline.store import ArtifactStore

log = logging.getLogger("panoramia.pipeline")


@dataclass(frozen=True)
class StageResult:
    name: str
    key: str
    directory: Path
    seconds: float
    """Time spent building it (as recorded when it was built)."""
    reused: bool
    info: dict = field(default_factory=dict)
    """What the stage's build function returned (metrics, sizes), from its record."""


def stage_key(
    name: str,
    version: int,
    config: object,
    inputs: list[StageResult],
    environment: dict | None = None,
) -> str:
    """The stage's key: a hash of its name, version, config, its inputs' keys and, where
    given, the compute ``environment`` its results depend on (e.g. torch's thread count)."""
    body = {"stage": name, "version": version, "config": config,
            "inputs": {i.name: i.key for i in inputs}}  # fmt: skip
    if environment:
        body["environment"] = environment
    payload = json.dumps(body, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


class StageRunner:
    """Runs stages in order, reusing finished ones; records timings for the report."""

    def __init__(
        self,
        store: ArtifactStore,
        *,
        total: int = 0,
        console: Console | None = None,
        progress_file: Path | None = None,
        environment: dict | None = None,
    ):
        self.store = store
        self.environment = environment or {}
        """What every stage's result depends on besides its settings and inputs (torch's
        thread count: float sums are ordered by it); part of every key."""
        self.total = total
        """Stages planned (the progress lines' denominator); the pipeline sets it from its graph."""
        self.console = console or Console(stderr=True)
        self.progress_file = progress_file
        """If set, rewritten (atomically) as each stage starts and ends, for a service to poll."""
        self.results: list[StageResult] = []

    def _report_progress(self, stage: str, state: str) -> None:
        if self.progress_file is None:
            return
        done = len(self.results) + (state != "running")
        body = {"stage": stage, "state": state, "done": done, "total": self.total}
        partial = self.progress_file.with_name(f".{self.progress_file.name}.{os.getpid()}")
        partial.write_text(json.dumps(body))
        partial.replace(self.progress_file)

    def run(
        self,
        name: str,
        build: Callable[[Path], dict | None],
        *,
        config: object,
        inputs: list[StageResult],
        version: int = 1,
        label: str | None = None,
    ) -> StageResult:
        """Reuse ``name``'s artifact for this key, or ``build(directory)`` it now."""
        key = stage_key(name, version, config, inputs, self.environment)
        shown = label or name
        step = f"[{len(self.results) + 1}/{self.total}]"
        if not self.store.is_done(name, key):

            def waiting() -> None:
                self.console.print(f"{step} {shown}: another run is building it; waiting …")

            with self.store.building(name, key, waiting=waiting):
                if not self.store.is_done(name, key):  # else it landed while we waited
                    return self._build(name, key, build, config, inputs, f"{step} {shown}")
        record = self.store.record(name, key)
        result = StageResult(
            name, key, self.store.path(name, key), float(record["seconds"]), True,
            record.get("info") or {},
        )  # fmt: skip
        self.console.print(f"{step} {shown}: reused ({key})", style="dim")
        return self._finish(result)

    def _build(
        self,
        name: str,
        key: str,
        build: Callable[[Path], dict | None],
        config: object,
        inputs: list[StageResult],
        shown: str,
    ) -> StageResult:
        """Build (name, key) now, under its lock; ``shown``: its step and label."""
        self.console.print(f"{shown}: running …")
        self._report_progress(name, "running")
        started = time.perf_counter()
        info: dict = {}
        record: dict[str, object] = {
            "stage": name,
            "key": key,
            "config": config,
            "inputs": {i.name: i.key for i in inputs},
        }
        with self.store.writing(name, key, record) as directory:
            info.update(build(directory) or {})
            seconds = time.perf_counter() - started
            record.update(seconds=seconds, info=info)  # in _done.json, written on leaving
        result = StageResult(name, key, self.store.path(name, key), seconds, False, info)
        self.console.print(f"{shown}: done in {seconds:.1f} s", style="green")
        return self._finish(result)

    def _finish(self, result: StageResult) -> StageResult:
        """Log and record a stage built or reused."""
        log.info(
            "stage %s key=%s reused=%s seconds=%.2f",
            result.name, result.key, result.reused, result.seconds,
        )  # fmt: skip
        self._report_progress(result.name, "reused" if result.reused else "done")
        self.results.append(result)
        return result

    def timings(self) -> dict[str, dict[str, object]]:
        return {
            r.name + (f"/{r.key[:6]}" if sum(x.name == r.name for x in self.results) > 1 else ""):
            {"seconds": round(r.seconds, 3), "reused": r.reused, "key": r.key}
            for r in self.results
        }  # fmt: skip
