"""The audit's stages: the runner that builds or reuses them (:mod:`.runner`), the small typed
object a modality hands in for its example sets (:mod:`.example_sets`), and one module per
shared stage (target, stand-in, splits, losses, game, distinguisher). The graph that wires them
is declared in :mod:`panoramia.pipeline.graph`."""

from panoramia.pipeline.stages.runner import StageResult, StageRunner, stage_key

__all__ = ["StageResult", "StageRunner", "stage_key"]
