"""What the shared stages read of the audit they build: the job, the seeds, the runner, the
modality's example sets and the hooks through which the modality trains and scores. The
stages name this protocol, not the graph, so the graph can import them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np

from panoramia.pipeline.stages.example_sets import ExampleSets
from panoramia.pipeline.stages.runner import StageResult, StageRunner


class Audit(Protocol):
    """One audit's context (:class:`panoramia.pipeline.graph.AuditPipeline` implements it)."""

    job: Any
    runner: StageRunner
    seed: int
    generation_seed: int
    sets: ExampleSets

    def trusted_modules(self) -> list[str]: ...
    def inference_device(self, which: str) -> Any: ...
    def probe_target(self, adapter: Any, data: StageResult) -> None: ...
    def train_demo_target(self, data: StageResult, directory: Path) -> dict: ...
    def train_stand_in(
        self, data: StageResult, examples: Any, directory: Path, seed: int
    ) -> dict: ...
    def stand_in_key(self, data: StageResult) -> tuple[dict, list[StageResult]]: ...
    def stand_in_recipe(self) -> Any: ...
    def stand_in_recipe_key(self) -> dict: ...
    def side_losses(self, adapter: Any, examples: Any) -> np.ndarray: ...
    def new_distinguisher(self, data: StageResult, index: int = 0) -> Any: ...
