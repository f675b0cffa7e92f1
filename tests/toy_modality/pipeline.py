"""The toy audit's stages that differ by data; the graph, splits, losses, distinguisher
stages and the game are :class:`~panoramia.pipeline.graph.AuditPipeline`'s."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from panoramia.mia.selection import CandidateRecord, validation_lower_bound
from panoramia.pipeline.graph import AuditPipeline
from panoramia.pipeline.seeds import child_rng, child_seed
from panoramia.pipeline.stages import StageResult
from panoramia.pipeline.stages.splits import (
    POOL_SET,
    SYNTHETIC_SETS,
    build_synthetic,
    synthetic_key,
)
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey
from tests.toy_modality.config import ToyJobConfig
from tests.toy_modality.data import CONTROL_POOL, MEMBERS, build_data, data_identity
from tests.toy_modality.points import PointSet
from tests.toy_modality.sets import TOY_SETS
from tests.toy_modality.targets import train_linear_directory

DATA = StageKey("data", also_reads=("data",))
GENERATOR = StageKey("generator", seeds=(GENERATION_SEED,), also_reads=("generator",))
SYNTHETIC = synthetic_key(1, "generator", "helper.n_points")
HELPER = StageKey("helper", seeds=(GENERATION_SEED,), also_reads=("helper",))


@dataclass
class ToyDistinguisher:
    """Logistic regression on [point, side losses]; ``fit`` then ``score``."""

    inverse_penalty: float
    seed: int
    candidates: list[CandidateRecord] = field(default_factory=list)
    chosen: CandidateRecord | None = None
    model: Any = None

    @staticmethod
    def _features(points: PointSet, side: np.ndarray) -> np.ndarray:
        return np.c_[points.x, np.asarray(side).reshape(len(points), -1)]

    def fit(self, x_train: PointSet, side_train: np.ndarray, y_train: np.ndarray,
            x_val: PointSet, side_val: np.ndarray, y_val: np.ndarray) -> None:  # fmt: skip
        from sklearn.linear_model import LogisticRegression

        self.model = LogisticRegression(C=self.inverse_penalty, max_iter=2000)
        self.model.fit(self._features(x_train, side_train), y_train)
        bound = validation_lower_bound(self.score(x_val, side_val), y_val)
        self.chosen = CandidateRecord({"C": self.inverse_penalty}, bound)
        self.candidates = [self.chosen]

    def score(self, points: PointSet, side: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(self._features(points, side))[:, 1]


class ToyPipeline(AuditPipeline):
    job: ToyJobConfig
    sets = TOY_SETS

    def data(self) -> StageResult:
        return self.runner.run(
            DATA, lambda d: build_data(self.job.data, d),
            config=data_identity(self.job.data), inputs=[],
        )  # fmt: skip

    def train_demo_target(self, data: StageResult, directory: Path) -> dict:
        pool = MEMBERS if self.job.target.members == "same" else CONTROL_POOL
        return train_linear_directory(
            PointSet.read(data.directory / pool), directory,
            inverse_penalty=self.job.target.inverse_penalty, features=self.job.target.features,
            seed=self.job.target.train_seed,
        )  # fmt: skip

    def generator(self, data: StageResult, known: StageResult) -> StageResult:
        def build(directory: Path) -> dict:
            real = PointSet.read(known.directory / "member_generator.npz")
            means = np.stack([real.x[real.y == c].mean(axis=0) for c in (0, 1)])
            covariances = np.stack([np.cov(real.x[real.y == c].T) for c in (0, 1)])
            np.savez(directory / "gaussians.npz", means=means, covariances=covariances,
                     share=np.array([real.y.mean()]))  # fmt: skip
            return {"trained_on": len(real)}

        return self.runner.run(GENERATOR, build, config=asdict(self.job.generator),
                               inputs=[data, known])  # fmt: skip

    def synthetic(self, data: StageResult, known: StageResult, gen: StageResult) -> StageResult:
        def draw(work: Any) -> dict:
            with np.load(work.gen.directory / "gaussians.npz") as fitted:
                means, covariances = fitted["means"], fitted["covariances"]
                share = float(fitted["share"][0])
            if self.job.generator.covariance == "diagonal":
                covariances = np.stack([np.diag(np.diag(c)) for c in covariances])
            rng = child_rng(self.generation_seed, "synthetic")
            sizes = {**work.needed, **({POOL_SET: work.pool} if work.pool else {})}
            for name, size in sizes.items():
                y = (rng.random(size) < share).astype(np.int64)
                x = np.stack([
                    rng.multivariate_normal(means[c], self.job.generator.spread * covariances[c])
                    for c in y
                ])  # fmt: skip
                stem = name if name == POOL_SET else f"synthetic_{name}"
                PointSet(x, y).save(work.directory / f"{stem}.npz")
            info = {name: size for name, size in sizes.items() if name in SYNTHETIC_SETS}
            return {**info, "pool": work.pool}  # the attacker's pool: its losses are scored

        return build_synthetic(
            self, data, known, gen, helper=self.job.helper.n_points,
            settings=asdict(self.job.generator), draw=draw, spec=SYNTHETIC,
        )  # fmt: skip

    def helper(self, data: StageResult, known: StageResult, synthetic: StageResult) -> StageResult:
        config = self.job.helper

        def build(directory: Path) -> dict:
            points = PointSet.read(synthetic.directory / "synthetic_helper.npz")
            return train_linear_directory(
                points, directory, inverse_penalty=config.inverse_penalty,
                features=config.features, seed=child_seed(self.generation_seed, "helper"),
            )  # fmt: skip

        return self.runner.run(HELPER, build, config=asdict(config), inputs=[data, synthetic])

    def train_stand_in(self, data: StageResult, examples: PointSet, directory: Path,
                       seed: int) -> dict:  # fmt: skip
        recipe = self.stand_in_recipe()
        return train_linear_directory(
            examples, directory, inverse_penalty=recipe.inverse_penalty,
            features=recipe.features, seed=seed,
        )  # fmt: skip

    def new_distinguisher(self, data: StageResult, index: int = 0) -> ToyDistinguisher:
        return ToyDistinguisher(
            self.job.distinguisher.inverse_penalty, seed=self.distinguisher_seed(index)
        )
