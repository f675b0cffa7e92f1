"""The tabular audit's stages (rows in parquet files, sdv, xgboost); the graph, the splits
and the game are :class:`~panoramia.pipeline.graph.AuditPipeline`'s.

Every stage writes a content-addressed artifact (see :mod:`panoramia.pipeline.store`), so a
rerun reuses finished stages and a killed run loses at most the stage that was running.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from panoramia.hashing import settings_but
from panoramia.modalities.tabular.config import (
    TabularDataConfig,
    TabularGeneratorSettings,
    TabularJobConfig,
)
from panoramia.modalities.tabular.data import (
    CONTROL_POOL,
    MEMBERS,
    build_data,
    data_identity,
    load_schema,
    say_inferred_schema,
)
from panoramia.modalities.tabular.sets import TABULAR_SETS
from panoramia.pipeline.graph import AuditPipeline
from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages import StageResult
from panoramia.pipeline.stages.splits import (
    SyntheticWork,
    build_synthetic,
    generator_part_of,
    synthetic_key,
)
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey, fields_of
from panoramia.pipeline.synthetic_draw import (
    MARGIN,
    SAMPLING_ONLY,
    draw_and_deal,
    draw_screened,
)

if TYPE_CHECKING:
    from panoramia.modalities.tabular.generator import TabularGenerator
    from panoramia.modalities.tabular.helper import TabularLabeler
    from panoramia.modalities.tabular.marginals import MarginalMatch
    from panoramia.modalities.tabular.support import SupportScreen
    from panoramia.modalities.tabular.table import TabularSchema

TABULAR_SAMPLING_ONLY = (*SAMPLING_ONLY, "support_novelty", "match_marginals")
"""Settings of the synthetic stage that the generator's fit does not use."""

DATA = StageKey(
    "data",
    version=2,  # 2: Adult says whether the audit drew its held-out rows (held_out_drawn)
    also_reads=fields_of("data", TabularDataConfig, but=("split",)),
)
"""The table's identity (:func:`~panoramia.modalities.tabular.data.data_identity`): the data
settings but the split, which the stages that read it key themselves."""
GENERATOR = StageKey(
    "generator",
    version=4,  # 4: the CART pickle names panoramia.modalities.tabular (the plug-in move)
    seeds=(GENERATION_SEED,),
    also_reads=fields_of("generator", TabularGeneratorSettings, but=TABULAR_SAMPLING_ONLY),
)
SYNTHETIC = synthetic_key(5, "generator", "helper.n_rows")
HELPER = StageKey("helper", seeds=(GENERATION_SEED,), also_reads=("helper",))


class TabularPipeline(AuditPipeline):
    """The stages of a tabular audit (rows in parquet files, sdv, xgboost)."""

    job: TabularJobConfig
    sets = TABULAR_SETS
    device_sections = True

    def trusted_modules(self) -> list[str]:
        """``target.trusted_modules``: extra modules a target.json's ``module`` may name."""
        return list(self.job.target.trusted_modules)

    @classmethod
    def distinguisher_threads(cls, job: Any, threads: int) -> None:
        """xgboost's ``n_jobs`` follows torch's thread count."""
        job.distinguisher.n_jobs = threads

    def slice_columns(self) -> tuple[str, ...] | None:
        """The embedded data's columns, or the declared ones of a CSV (None: inferred from
        the file once it is read)."""
        data = self.job.data
        if data.source == "adult":
            from panoramia.modalities.tabular.adult import SCHEMA as ADULT_SCHEMA

            return ADULT_SCHEMA.columns
        if data.categorical or data.continuous:
            # data.label may still be None here (data_identity refuses that in its own line
            # once the stages start): the declared columns are the known ones then
            label = () if data.label is None else (data.label,)
            return (*label, *data.categorical, *data.continuous)
        return None

    def group_table(self, path: Path, data: StageResult) -> tuple[pd.DataFrame, list[str]]:
        """A stored set's rows; groups by the label and ``audit.slices``."""
        label = load_schema(data.directory).label
        return self.sets.read(path), [label, *self.job.audit.slices]

    def audit_members(self, stages: dict[str, StageResult]) -> tuple[pd.DataFrame, list[str]]:
        """The audited members' rows; groups by the label and ``audit.slices``."""
        split = stages["split"].directory
        return self.group_table(split / f"member_audit{self.sets.suffix}", stages["data"])

    def probe_target(self, adapter: Any, data: StageResult) -> None:
        """The model's losses on the first 16 members: a label the model does not know or a
        missing feature ends the audit here, at stage 2, in one line."""
        rows = self.sets.read(data.directory / self.sets.members_file).head(16)
        adapter.per_example_loss(rows)

    def new_distinguisher(
        self, data: StageResult, index: int = 0
    ):  # -> panoramia.modalities.tabular.distinguisher.XGBoostDistinguisher
        from panoramia.modalities.tabular.distinguisher import XGBoostDistinguisher

        return XGBoostDistinguisher(
            load_schema(data.directory), self.job.distinguisher,
            seed=self.distinguisher_seed(index),
        )  # fmt: skip

    def data(self) -> StageResult:
        identity = data_identity(self.job.data)
        result = self.runner.run(
            DATA, lambda d: build_data(self.job.data, d), config=identity, inputs=[]
        )
        config = self.job.data
        if config.source == "csv" and not (config.categorical or config.continuous):
            say_inferred_schema(load_schema(result.directory))  # built now or reused alike
        return result

    def train_demo_target(self, data: StageResult, directory: Path) -> dict:
        """Train the demo target (mlp or xgboost) into ``directory``; returns its metrics and
        ``trained_on``, the rows it trained on."""
        members = self.job.target.members
        rows = pd.read_parquet(data.directory / (MEMBERS if members == "same" else CONTROL_POOL))
        if members == "disjoint+generator_data":  # a control that knows D_G, never D_in
            known, generator = generator_part_of(self, data)
            rows = pd.concat([rows, known.iloc[generator]], ignore_index=True)
        schema = load_schema(data.directory)
        return {"trained_on": len(rows), **self._fit_demo_target(rows, schema, directory)}

    def _fit_demo_target(self, rows: pd.DataFrame, schema: Any, directory: Path) -> dict:
        from panoramia.modalities.tabular.training import (
            XGBoostTargetConfig,
            train_mlp_directory,
            train_xgboost_directory,
        )

        if self.job.target.kind == "xgboost":
            xgb_config = XGBoostTargetConfig(
                self.job.target.n_estimators, self.job.target.max_depth,
                self.job.target.xgb_learning_rate,
            )  # fmt: skip
            return train_xgboost_directory(
                rows, schema, xgb_config, directory, seed=self.job.target.train_seed
            )
        return train_mlp_directory(
            rows, schema, self.job.target, directory, seed=self.job.target.train_seed,
            dp=self.dp_settings(),
        )  # fmt: skip

    def dp_settings(self):  # -> panoramia.models.dp_training.DpSgdSettings | None
        """The target's DP-SGD training settings, or None for plain training."""
        from panoramia.models.dp_settings import DpSgdSettings

        target = self.job.target
        if target.dp_epsilon is None:
            return None
        return DpSgdSettings(target.dp_epsilon, target.dp_delta, target.dp_max_grad_norm)

    def generator(self, data: StageResult, known: StageResult) -> StageResult:
        from panoramia.modalities.tabular.generator import TabularGenerator

        config = self.job.generator

        def build(directory: Path) -> dict:
            schema = load_schema(data.directory)
            members = pd.read_parquet(known.directory / "member_generator.parquet")
            generator = TabularGenerator(schema, config)
            generator.fit(members, seed=child_seed(self.generation_seed, "generator"))
            generator.save(directory)
            return {"trained_on": len(members)}

        # Every generator setting except those used only when sampling (a new field counts).
        fit_config = settings_but(config, TABULAR_SAMPLING_ONLY)
        return self.runner.run(
            GENERATOR,
            build,
            config=fit_config,
            inputs=[data, known],
            label=f"generator ({config.synthesizer})",
        )

    def synthetic(self, data: StageResult, known: StageResult, gen: StageResult) -> StageResult:
        # The whole generator section: every setting of sampling, labelling and filtering.
        return build_synthetic(
            self, data, known, gen, helper=self.job.helper.n_rows,
            settings=asdict(self.job.generator), draw=self._draw_synthetic, spec=SYNTHETIC,
        )  # fmt: skip

    def _draw_synthetic(self, work: SyntheticWork) -> dict:
        """The synthetic stage's work: draw, screen and deal the synthetic rows (and the
        attacker's pool) into ``work.directory``; its info."""
        from panoramia.modalities.tabular.generator import TabularGenerator
        from panoramia.modalities.tabular.generator_filter import synthetic_fidelity
        from panoramia.modalities.tabular.support import SupportScreen

        config = self.job.generator
        schema = load_schema(work.data.directory)
        generator = TabularGenerator.load(work.gen.directory, schema, config)
        real = pd.read_parquet(work.known.directory / "member_generator.parquet")
        labeler = _fit_labeler(config, real, schema, self.generation_seed)
        marginals = _fit_marginals(config, generator, real, schema, self.generation_seed)
        draw = _TabularDraw(generator, marginals, labeler, self.generation_seed)
        support = SupportScreen.fit(
            real, novelty=config.support_novelty,
            seed=child_seed(self.generation_seed, "synthetic/support"),
        )  # fmt: skip
        extra = None
        if config.filter.enabled:
            # The filter learns what the support screen leaves: its synthetic rows pass it.
            n_extra = max(100, round(config.filter.extra_fraction * len(real)))
            extra = support.screen(draw(n_extra, "synthetic/extra"))
        screen = _TabularScreen(config, real, schema, support, extra, self.generation_seed)

        # The filter keeps at least 1 - max_drop of a batch, so one round normally suffices.
        # The support screen's share varies with the generator: later rounds adapt.
        screened = partial(
            draw_screened, draw=draw, screen=screen, size=len, adapt=bool(support.checks),
            what="rows", hint="raise max_drop or lower support_novelty",
            factor=MARGIN / (1.0 - config.filter.max_drop) if extra is not None else 1.0,
        )  # fmt: skip
        dealt = draw_and_deal(
            self.sets, work.needed, work.pool, work.directory, screened=screened,
            concat=lambda parts: pd.concat(parts, ignore_index=True),
        )  # fmt: skip
        kept = dealt.kept
        # How far the kept rows are from D_G, for the report: a classifier's held-out AUC.
        fidelity = synthetic_fidelity(
            real, kept.iloc[: len(real)], schema,
            seed=child_seed(self.generation_seed, "synthetic/fidelity"),
        )  # fmt: skip
        return {
            "drawn": dealt.drawn, "kept_fraction": round(len(kept) / dealt.drawn, 4),
            "support_checks": len(support.checks),
            "matched_columns": len(marginals.columns) if marginals is not None else 0,
            "real_vs_synthetic_auc": round(fidelity, 4), **work.needed, "pool": work.pool,
            "pool_drawn": dealt.pool_drawn,
        }  # fmt: skip

    def train_stand_in(
        self, data: StageResult, examples: pd.DataFrame, directory: Path, seed: int
    ) -> dict:
        from panoramia.modalities.tabular.helper import train_helper

        recipe = self.stand_in_recipe()
        return train_helper(
            examples, load_schema(data.directory), recipe, directory, seed=seed,
            validation_fraction=recipe.validation_fraction,
        )  # fmt: skip

    def reference_recipe_key(self) -> dict | None:
        """A tree target's recipe (``target.kind=xgboost``): the stand-ins are MLPs of h's
        recipe whatever the target, a poor reference for a boosted model (docs/RESULTS.md
        §28), so the reference attack trains models of the target's recipe; None for an MLP
        target or a brought model (the stand-ins are its references)."""
        target = self.job.target
        if target.kind != "xgboost":
            return None
        return {
            "kind": target.kind, "n_estimators": target.n_estimators,
            "max_depth": target.max_depth, "xgb_learning_rate": target.xgb_learning_rate,
        }  # fmt: skip

    def train_reference_model(
        self, data: StageResult, examples: pd.DataFrame, directory: Path, seed: int
    ) -> dict:
        """The demo target's tree recipe on ``examples`` (an XGBoost JSON directory, read by
        the target loader as the target is)."""
        from panoramia.modalities.tabular.training import (
            XGBoostTargetConfig,
            train_xgboost_directory,
        )

        target = self.job.target
        recipe = XGBoostTargetConfig(
            target.n_estimators, target.max_depth, target.xgb_learning_rate
        )
        return train_xgboost_directory(
            examples, load_schema(data.directory), recipe, directory, seed=seed
        )

    def helper(self, data: StageResult, known: StageResult, synthetic: StageResult) -> StageResult:
        from panoramia.modalities.tabular.helper import train_helper

        def build(directory: Path) -> dict:
            rows = pd.read_parquet(synthetic.directory / "synthetic_helper.parquet")
            return train_helper(
                rows, load_schema(data.directory), self.job.helper, directory,
                seed=child_seed(self.generation_seed, "helper"),
                validation_fraction=self.job.helper.validation_fraction,
            )  # fmt: skip

        return self.runner.run(
            HELPER, build, config=asdict(self.job.helper), inputs=[data, synthetic],
            label="helper h",
        )  # fmt: skip


def _fit_labeler(
    config: TabularGeneratorSettings,
    real: pd.DataFrame,
    schema: TabularSchema,
    generation_seed: int,
) -> TabularLabeler | None:
    """The labeler fitted on D_G that redraws the synthetic rows' labels (None: no
    ``relabel``)."""
    if not config.relabel:
        return None
    from panoramia.modalities.tabular.helper import TabularLabeler

    return TabularLabeler(schema, seed=child_seed(generation_seed, "labeler")).fit(real)


def _fit_marginals(
    config: TabularGeneratorSettings,
    generator: TabularGenerator,
    real: pd.DataFrame,
    schema: TabularSchema,
    generation_seed: int,
) -> MarginalMatch | None:
    """The maps of the continuous columns onto D_G's values, fitted on a reference draw (None:
    no ``match_marginals``)."""
    if not config.match_marginals:
        return None
    from panoramia.modalities.tabular.marginals import MarginalMatch

    reference = generator.sample(
        max(20_000, 2 * len(real)),
        seed=child_seed(generation_seed, "synthetic/marginals"),
    )
    return MarginalMatch.fit(real, reference, schema.continuous)


class _TabularDraw:
    """The synthetic stage's draws: ``n`` generated rows under a name's seed, mapped onto
    D_G's marginals and relabelled by the labeler where either is set."""

    def __init__(
        self,
        generator: TabularGenerator,
        marginals: MarginalMatch | None,
        labeler: TabularLabeler | None,
        generation_seed: int,
    ) -> None:
        self.generator, self.marginals, self.labeler = generator, marginals, labeler
        self.generation_seed = generation_seed

    def __call__(self, n: int, name: str) -> pd.DataFrame:
        """Draw ``n`` rows under ``name``."""
        rows = self.generator.sample(n, seed=child_seed(self.generation_seed, name))
        if self.marginals is not None:
            rows = self.marginals.apply(
                rows,
                np.random.default_rng(child_seed(self.generation_seed, f"{name}/match")),
            )
        if self.labeler is None:
            return rows
        return self.labeler.relabel(rows, seed=child_seed(self.generation_seed, f"{name}/labels"))


class _TabularScreen:
    """The synthetic stage's screen of a batch: the support screen, then the real-vs-synthetic
    filter (with ``extra``)."""

    def __init__(
        self,
        config: TabularGeneratorSettings,
        real: pd.DataFrame,
        schema: TabularSchema,
        support: SupportScreen,
        extra: pd.DataFrame | None,
        generation_seed: int,
    ) -> None:
        self.config, self.real, self.schema = config, real, schema
        self.support, self.extra = support, extra
        self.generation_seed = generation_seed

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``batch`` that pass the screen."""
        from panoramia.modalities.tabular.generator_filter import filter_synthetic

        batch = self.support.screen(batch)
        if self.extra is None:
            return batch
        return filter_synthetic(
            self.real, self.extra, batch, self.schema,
            real_quantile=self.config.filter.real_quantile,
            max_drop=self.config.filter.max_drop,
            seed=child_seed(self.generation_seed, "synthetic/filter"),
        ).kept  # fmt: skip
