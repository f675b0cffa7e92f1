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

from panoramia.pipeline.stages.stage_key import StageKey
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
        self.job: object = None
        """The job whose settings the stages' keys read (:meth:`bind`)."""
        self.seeds: dict[str, int] = {}
        """The audit's seeds by name (``seed``, ``generation_seed``), for the keys."""
        self.declared: dict[str, frozenset[str]] = {}
        """Each stage's key → the settings it and every stage it builds on declare."""

    def bind(self, job: object, seeds: dict[str, int]) -> None:
        """The job and seeds that the stages' keys read what they declare from."""
        self.job, self.seeds = job, dict(seeds)

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
        spec: StageKey,
        build: Callable[[Path], dict | None],
        *,
        inputs: list[StageResult],
        config: object = None,
        name: str | None = None,
        label: str | None = None,
    ) -> StageResult:
        """Reuse the stage's artifact for its key, or ``build(directory)`` it now. The key
        holds ``spec``'s version, the settings and seeds it declares and what the caller
        computed (``config``); ``name``: the stage's own where a spec makes several
        (``stand_in_2``), default ``spec.name``."""
        name = name or spec.name
        config = spec.config(self.job, self.seeds, config)
        key = stage_key(name, spec.version, config, inputs, self.environment)
        self.declared[key] = spec.reads().union(
            *(self.declared.get(stage.key, frozenset()) for stage in inputs)
        )
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
