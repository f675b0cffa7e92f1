"""The stage graph every audit shares, whatever the modality, declared as data.

:data:`STAGE_GRAPH` lists each stage once, as ``(name, inputs, build)``:
data → target → generator_data (D_G) → generator → synthetic (pool) → helper → stand-ins →
split (the other members) → synthetic_split → losses (h, the stand-ins, f) → the reference
attack's rows (f and the stand-ins on real rows no stand-in saw) → game →
baseline → attack (→ RM;RN attack). :meth:`AuditPipeline.run` walks it and
:meth:`AuditPipeline.planned_stages` derives from it. The shared stages live in
:mod:`panoramia.pipeline.stages` (one module each); a modality hands in its example sets
(:class:`~panoramia.pipeline.stages.example_sets.ExampleSets`) and the stages that differ by
data (data, the demo target's and a stand-in's training, generator, synthetic pool, h, the
distinguisher).

Two seeds drive it: ``generation_seed`` (D_G, the generator, the synthetic pool, h) and
``seed`` (which remaining members and which pooled synthetic examples train, validate and
fill the audit; the coins; the distinguishers' training). With ``generation_seed`` fixed,
repeated seeds reuse the generator stages and re-run only the cheap ones (docs/SPEC.md §2.5).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from panoramia.audit_settings import REFERENCE
from panoramia.errors import InputError
from panoramia.pipeline.report_inputs import ReportInputs
from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.settings_reads import recording
from panoramia.pipeline.stage_reads import check_declared
from panoramia.pipeline.stages.blind import BLIND_STAGE, build_blind_baseline
from panoramia.pipeline.stages.distinguisher import build_distinguisher
from panoramia.pipeline.stages.example_sets import ExampleSets
from panoramia.pipeline.stages.game import build_game
from panoramia.pipeline.stages.losses import build_losses
from panoramia.pipeline.stages.reference_models import (
    build_reference_models,
    reference_model_names,
)
from panoramia.pipeline.stages.reference_rows import STAGE as REFERENCE_ROWS
from panoramia.pipeline.stages.reference_rows import build_reference_rows, reference_attack_planned
from panoramia.pipeline.stages.runner import StageResult, StageRunner
from panoramia.pipeline.stages.splits import (
    build_generator_data,
    build_split,
    build_synthetic_split,
)
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, SEED
from panoramia.pipeline.stages.stand_in import build_stand_in
from panoramia.pipeline.stages.target import build_target

Built = Mapping[str, Any]
"""The stages built so far, by the name of their :class:`StageSpec`: a StageResult, or a list
of them for a repeated spec (the stand-ins and their losses)."""


@dataclass(frozen=True)
class StageSpec:
    """One entry of the graph: the stage ``name``, the specs whose stages ``build`` reads
    (``inputs``; a spec that did not run is absent from what ``build`` gets), and ``build``,
    which returns the stage, a list of stages (a repeated spec) or None (skipped at run time).
    ``names``: the stages it makes, for the plan (default: ``[name]``; ``[]``: off)."""

    name: str
    inputs: tuple[str, ...]
    build: Callable[[AuditPipeline, Built], StageResult | list[StageResult] | None]
    names: Callable[[AuditPipeline], list[str]] | None = None

    def planned(self, audit: AuditPipeline) -> list[str]:
        """The stages this spec makes for ``audit``'s settings, at most."""
        return [self.name] if self.names is None else self.names(audit)


def _references(audit: AuditPipeline, built: Built, j: int) -> list[StageResult]:
    """The reference models member ``j`` of an ensemble sees: every stand-in's losses but
    f̂_j's, when the sides end in ``+reference_models`` (SPEC §2.7); else none."""
    if not audit.job.audit.attack_side.endswith(REFERENCE):
        return []
    return [losses for i, losses in enumerate(built.get("losses_stand_in", [])) if i != j]


def attack_sides(audit: AuditPipeline, built: Built) -> list[list[StageResult]]:
    """The attack's side, per member of the ensemble: f's losses, then h's when it is to know
    all the baseline knows, then the reference models."""
    losses_f, losses_h = built["losses_target"], built["losses_helper"]
    side = [losses_f, losses_h] if audit.job.audit.attack_side != "target" else [losses_f]
    return [[*side, *_references(audit, built, j)] for j in range(audit.job.audit.ensemble)]


def baseline_sides(audit: AuditPipeline, built: Built) -> list[list[StageResult]]:
    """The baseline's side, per member: h's (the paper's), or a stand-in's in f's place
    (SPEC §2.7), one stand-in per member, and the same reference models as the attack's."""
    losses_h = built["losses_helper"]
    stand_ins = built.get("losses_stand_in") or [losses_h] * audit.job.audit.ensemble
    return [
        {"helper": [losses_h], "stand_in": [s], "stand_in+helper": [s, losses_h],
         "stand_in+helper+reference_models": [s, losses_h, *_references(audit, built, j)]}[
            audit.job.audit.baseline_side
        ]
        for j, s in enumerate(stand_ins)
    ]  # fmt: skip


def _distinguisher(
    name: str, sides: Callable[[AuditPipeline, Built], list], *, real_nonmembers: bool = False
) -> Callable:
    def build(audit: AuditPipeline, built: Built) -> StageResult | None:
        if real_nonmembers and (
            not built["game"].info.get("m_reference")
            # The stand-ins train on the data's real non-members, RM;RN's too: an attack that
            # sees them as reference models would tell those non-members by their low losses.
            or audit.job.audit.attack_side.endswith(REFERENCE)
            # A blind column fit on members vs real non-members tells them apart by their
            # documents, with no model at all (docs/SPEC.md §2.9).
            or audit.distinguisher_is_blind()
        ):
            return None
        return build_distinguisher(
            audit, name, built["data"], built["split"], built["synthetic_split"],
            sides(audit, built), built["game"], real_nonmembers=real_nonmembers,
            pool=None if real_nonmembers else _pool(built),
        )  # fmt: skip

    return build


def _pool(built: Built) -> StageResult | None:
    """The synthetic stage where it drew the attacker's pool of generated non-members
    (docs/SPEC.md §3, ``attacker``); None where the audit set's own suffice."""
    synthetic = built.get("synthetic")
    return synthetic if synthetic is not None and synthetic.info.get("pool") else None


def _losses(which: str) -> Callable[[AuditPipeline, Built], StageResult]:
    def build(audit: AuditPipeline, built: Built) -> StageResult:
        return build_losses(
            audit, built[which], built["split"], built["synthetic_split"], which=which,
            pool=_pool(built),
        )  # fmt: skip

    return build


def _stand_in_names(audit: AuditPipeline) -> list[str]:
    return audit.stand_in_names() if audit.uses_stand_in else []


_SCORED = ("data", "split", "synthetic_split", "game", "synthetic")
STAGE_GRAPH: tuple[StageSpec, ...] = (
    StageSpec("data", (), lambda a, b: a.data()),
    StageSpec("target", ("data",), lambda a, b: build_target(a, b["data"])),
    StageSpec("generator_data", ("data",), lambda a, b: build_generator_data(a, b["data"])),
    StageSpec(
        "generator", ("data", "generator_data"),
        lambda a, b: a.generator(b["data"], b["generator_data"]),
    ),
    StageSpec(
        "synthetic", ("data", "generator_data", "generator"),
        lambda a, b: a.synthetic(b["data"], b["generator_data"], b["generator"]),
    ),
    StageSpec(
        "helper", ("data", "generator_data", "synthetic"),
        lambda a, b: a.helper(b["data"], b["generator_data"], b["synthetic"]),
    ),
    StageSpec(
        "stand_in", ("data", "generator_data"),
        lambda a, b: [
            build_stand_in(a, b["data"], b["generator_data"], i)
            for i in range(1, a.job.audit.ensemble + 1)
        ],
        names=_stand_in_names,
    ),
    StageSpec("split", ("data",), lambda a, b: build_split(a, b["data"])),
    StageSpec(
        "synthetic_split", ("synthetic",), lambda a, b: build_synthetic_split(a, b["synthetic"])
    ),
    StageSpec(
        "losses_helper", ("helper", "split", "synthetic_split", "synthetic"), _losses("helper")
    ),
    StageSpec(
        "losses_stand_in", ("stand_in", "split", "synthetic_split", "synthetic"),
        lambda a, b: [
            build_losses(a, s, b["split"], b["synthetic_split"], which=s.name, pool=_pool(b))
            for s in b["stand_in"]
        ],
        names=lambda a: [f"losses_{name}" for name in _stand_in_names(a)],
    ),
    StageSpec(
        "losses_target", ("target", "split", "synthetic_split", "synthetic"), _losses("target")
    ),
    StageSpec(
        "reference_model", ("data", "generator_data"),
        lambda a, b: build_reference_models(a, b["data"], b["generator_data"]),
        names=reference_model_names,
    ),
    StageSpec(
        REFERENCE_ROWS, ("data", "target", "stand_in", "reference_model"),
        lambda a, b: build_reference_rows(
            a, b["data"], b["target"], b.get("reference_model") or b.get("stand_in", []),
            own_recipe=bool(b.get("reference_model")),
        ),
        names=lambda a: [REFERENCE_ROWS] if reference_attack_planned(a) and a.uses_stand_in else [],
    ),
    StageSpec(
        "game", ("split", "synthetic_split"),
        lambda a, b: build_game(a, b["split"], b["synthetic_split"]),
    ),
    StageSpec(
        BLIND_STAGE, ("split", "synthetic_split", "game"),
        lambda a, b: build_blind_baseline(a, b["split"], b["synthetic_split"], b["game"]),
        names=lambda a: [BLIND_STAGE] if a.blind_classifier(0) is not None else [],
    ),
    StageSpec(
        "baseline", (*_SCORED, "losses_helper", "losses_stand_in"),
        _distinguisher("baseline", baseline_sides),
    ),
    StageSpec(
        "attack", (*_SCORED, "losses_target", "losses_helper", "losses_stand_in"),
        _distinguisher("attack", attack_sides),
    ),
    StageSpec(
        "attack_rmrn", (*_SCORED, "losses_target", "losses_helper", "losses_stand_in"),
        _distinguisher("attack_rmrn", attack_sides, real_nonmembers=True),
        names=lambda a: ["attack_rmrn"] if a.job.audit.real_nonmembers.rmrn else [],
    ),
)  # fmt: skip
"""The audit's stages in the order they run (the RM;RN attack runs only where the data has
real non-members and the attack sees no reference models)."""


class DeviceSection(Protocol):
    """What the shared job reads of a plug-in's ``target`` and ``helper`` sections where its
    pipeline says it has them (:attr:`AuditPipeline.device_sections`): where their forward
    passes run (``tests/packaging/test_plugin_fields.py`` holds that those sections have
    them)."""

    accelerator: str
    devices: Any


class AuditPipeline(ABC):
    """Builds (or reuses) every stage of :meth:`graph` for one job config; the modality's
    subclass hands in its :attr:`sets` and the stages that differ by data."""

    sets: ExampleSets
    """How the modality's example sets are stored, stacked and dealt into the game."""
    job: Any
    """The modality's job schema (a ``JobConfigBase`` subclass; a modality's class names it)."""
    rows_are_units: bool = True
    """Whether one example is the unit the members and held-out rows were drawn by (rows,
    images); False for text, whose chunks come in documents (docs/SPEC.md §2.4): the
    reference attack, which scores examples, does not run there."""
    device_sections: bool = False
    """Whether its ``target`` and ``helper`` sections say where their forward passes run
    (:class:`DeviceSection`); else they run where :func:`panoramia.devices.inference_device`
    puts ``auto``."""

    def __init__(self, job: Any, runner: StageRunner) -> None:
        """``job``: the modality's job schema (a ``JobConfigBase``); sets ``runner.total``."""
        self.job = job
        self.runner = runner
        runner.bind(job, {SEED: self.seed, GENERATION_SEED: self.generation_seed})
        runner.total = len(self.planned_stages())

    @property
    def seed(self) -> int:
        """The audit seed (``job.seed``), read from the job each time, so that a stage that
        reads it is seen to (:mod:`panoramia.pipeline.settings_reads`)."""
        return int(self.job.seed)

    @property
    def generation_seed(self) -> int:
        """``job.generation_seed``, or the audit seed where it is unset (then its value: a
        stage keyed by the generation seed holds it, so the fallback is not a read of
        ``seed``)."""
        chosen = self.job.generation_seed
        if chosen is None:
            chosen = object.__getattribute__(self.job, "seed")  # not recorded as ``seed``
        return int(chosen)

    def graph(self) -> tuple[StageSpec, ...]:
        """The stages this modality runs: :data:`STAGE_GRAPH` (text adds its public base)."""
        return STAGE_GRAPH

    def planned_stages(self) -> tuple[str, ...]:
        """The stages this job runs at most, in order (the RM;RN attack runs only if real
        non-members exist)."""
        return tuple(name for spec in self.graph() for name in spec.planned(self))

    def run(self) -> dict[str, StageResult]:
        """Check what the settings alone cannot tell, then build or reuse every planned stage of
        :meth:`graph` in order; returns the stages by name (each stand-in and its losses under
        its own)."""
        self.check_before_stages()
        built: dict[str, Any] = {}
        for spec in self.graph():
            if not spec.planned(self):
                continue
            before = len(self.runner.results)
            with recording(self.job) as reads:
                made = spec.build(self, {n: built[n] for n in spec.inputs if n in built})
            check_declared(spec.name, reads, self.runner.results[before:], self.runner.declared)
            if made is not None:
                built[spec.name] = made
        stages: dict[str, StageResult] = {}
        for made in built.values():
            for stage in made if isinstance(made, list) else [made]:
                stages[stage.name] = stage
        return stages

    def stand_in_names(self) -> list[str]:
        """The stand-in stages: ``stand_in_1`` … ``stand_in_k``, k = ``audit.ensemble``."""
        return [f"stand_in_{index}" for index in range(1, self.job.audit.ensemble + 1)]

    @property
    def uses_stand_in(self) -> bool:
        """Whether the baseline sees the stand-in f̂'s losses (``audit.baseline_side``)."""
        return self.job.audit.baseline_side.startswith("stand_in")

    def check_before_stages(self) -> None:
        """Fail, before any stage runs, on what the settings alone cannot tell (every setting's
        range, choice and combination is checked once, before the pipeline is built, by
        :func:`panoramia.audit_settings.check_settings` in ``app.run_job``, the one caller of
        :meth:`run`, and at the service's door)."""
        self.check()
        self.check_slices()

    # -- what a modality hands in ------------------------------------------------------
    def check(self) -> None:
        """What the settings alone cannot tell, before any stage runs (text: the public
        base's packages are installed); nothing by default. Every setting's range, choice and
        combination is checked before the job by
        :func:`panoramia.audit_settings.check_settings`."""
        return

    @abstractmethod
    def data(self) -> StageResult:
        """The data stage: the known members (and real non-members) in the modality's sets."""

    @abstractmethod
    def train_demo_target(self, data: StageResult, directory: Path) -> dict:
        """Train the demo target into ``directory``; returns its metrics."""

    @abstractmethod
    def generator(self, data: StageResult, known: StageResult) -> StageResult:
        """Fit the generator on D_G (``known``: the generator_data stage)."""

    @abstractmethod
    def synthetic(self, data: StageResult, known: StageResult, gen: StageResult) -> StageResult:
        """Sample the synthetic pool: one file per set of :data:`SYNTHETIC_SETS`, sized by
        :func:`~panoramia.pipeline.stages.splits.synthetic_sizes`."""

    @abstractmethod
    def helper(self, data: StageResult, known: StageResult, synthetic: StageResult) -> StageResult:
        """Train h, which never sees the target's members, on its synthetic set."""

    @abstractmethod
    def train_stand_in(self, data: StageResult, examples: Any, directory: Path, seed: int) -> dict:
        """Train a stand-in f̂ (:meth:`stand_in_recipe`) on the real ``examples`` into
        ``directory``, as a model directory :func:`~panoramia.targets.load_target` opens;
        returns its metrics."""

    def stand_in_key(self, data: StageResult) -> tuple[dict, list[StageResult]]:
        """What else the stand-in stage's key holds: settings and stages (text: the public
        base LM and the architecture)."""
        return {}, []

    def stand_in_recipe_key(self) -> dict:
        """What the stand-in stage's key holds of ``audit.stand_in.recipe`` (nothing for h's
        recipe, so that stand-ins trained before the setting existed are reused)."""
        return {}

    def reference_recipe_key(self) -> dict | None:
        """The target's recipe as the reference attack's own reference models train with it
        (their stages' key), where the stand-ins are of another family than the target; None
        (the default): the stand-ins are the reference attack's reference models."""
        return None

    def train_reference_model(
        self, data: StageResult, examples: Any, directory: Path, seed: int
    ) -> dict:
        """Train one reference model of the target's recipe on ``examples`` into
        ``directory`` (only where :meth:`reference_recipe_key` names one)."""
        raise NotImplementedError(f"{type(self).__name__} names no reference recipe")

    def distinguisher_seed(self, index: int) -> int:
        """The seed of the ``index``-th distinguisher of each side's ensemble (0: the paper's
        one, the same for the baseline and the attack)."""
        return child_seed(self.seed, "distinguisher" + (f"/{index}" if index else ""))

    def stand_in_recipe(self) -> Any:
        """h's settings as the stand-in trains with them: without a held-out split unless
        ``audit.stand_in.select_epoch``."""
        from dataclasses import replace

        if self.job.audit.stand_in.select_epoch:
            return self.job.helper
        return replace(self.job.helper, validation_fraction=0.0)

    @abstractmethod
    def new_distinguisher(self, data: StageResult, index: int = 0) -> Any:
        """An unfitted distinguisher (``fit``, ``score``, ``candidates``, ``chosen``)."""

    def target_inputs(self, data: StageResult) -> list[StageResult]:
        """Stages the demo target starts from, beside the data (in its key); none by default
        (text: the public base, for a LoRA target)."""
        return []

    def target_key(self, settings: dict) -> dict:
        """The target's settings (:func:`panoramia.hashing.settings_key` of ``job.target``) as
        its stage key holds them; unchanged by default."""
        return settings

    def blind_classifier(self, seed: int) -> Any:
        """A classifier that sees no model (``fit(examples, labels, out_of_fold=...)``,
        ``probabilities(examples)``, ``description``, ``key()``), for the blind baseline stage
        (docs/SPEC.md §2.9); None (the default): the modality runs none."""
        return None

    def side_losses(self, adapter: Any, examples: Any) -> np.ndarray:
        """The side information of each example: its loss (n,), or a loss sequence (n, T)."""
        return adapter.per_example_loss(examples)

    def report_inputs(self, stages: dict[str, StageResult]) -> ReportInputs:
        """What the report shows besides the figures, the one hook the job asks (its parts
        are the optional hooks below: :meth:`galleries`, :meth:`examples`,
        :meth:`audit_members`, :meth:`reference_groups`)."""
        return ReportInputs(
            galleries=self.galleries(stages),
            examples=self.examples(stages),
            members=self.audit_members(stages),
            reference_groups=self.reference_groups(stages),
        )

    def galleries(self, stages: dict[str, StageResult]) -> dict[str, np.ndarray]:
        """Example inputs to show in the report (uint8 images by caption); none by default."""
        return {}

    def examples(self, stages: dict[str, StageResult]) -> dict[str, list[str]]:
        """Example inputs to show in the report as text (by caption); none by default."""
        return {}

    def slice_columns(self) -> tuple[str, ...] | None:
        """The columns ``audit.slices`` may name, known before any stage (None: known only
        once the data is read); none by default (only tables have columns)."""
        return ()

    def check_slices(self) -> None:
        """InputError naming ``audit.slices`` when it names a column the data does not have
        (their count is checked with the settings)."""
        slices = list(self.job.audit.slices)
        known = self.slice_columns()
        if known is None or not slices:
            return
        if not known:
            raise InputError(
                f"audit.slices: {slices} — only tables have columns to group by; images and "
                "text are grouped by their label's classes"
            )
        unknown = [c for c in slices if c not in known]
        if unknown:
            raise InputError(
                f"audit.slices: {unknown} not among the data's columns ({', '.join(known)})"
            )

    def group_table(self, path: Path, data: StageResult) -> tuple[Any, list[str]] | None:
        """A stored set's rows as a table (a pandas DataFrame, row i: example i of the set at
        ``path``) and the columns whose values make groups (the label's first), ``data`` the
        data stage; None where the modality shows none (the default)."""
        return None

    def reference_groups(self, stages: dict[str, StageResult]) -> tuple[Any, list[str]] | None:
        """The reference attack's scored rows as a table in the order of its stage's rows
        (members outside D_G, then the reserved held-out rows, by the indices the stage
        kept) and the group columns (:meth:`group_table`); None where its stage did not run
        or the modality has none."""
        import pandas as pd

        from panoramia.pipeline.stages.reference_rows import read_rows

        data = stages.get("data")
        if REFERENCE_ROWS not in stages or data is None:
            return None
        found = [
            self.group_table(data.directory / name, data)
            for name in (self.sets.members_file, self.sets.nonmembers_file)
        ]
        if found[0] is None or found[1] is None:
            return None
        (members, columns), (nonmembers, _) = found[0], found[1]
        scored = read_rows(stages[REFERENCE_ROWS])
        rows = pd.concat(
            [members.iloc[scored.member_index], nonmembers.iloc[scored.nonmember_index]],
            ignore_index=True,
        )
        return rows, columns

    def audit_members(self, stages: dict[str, StageResult]) -> tuple[Any, list[str]] | None:
        """The audit set's members as a table (a pandas DataFrame, row i: member i of the
        game's slots) and the columns whose values make groups (the label's first), for the
        report's exposed records and groups; None where the modality shows none."""
        return None

    def trusted_modules(self) -> list[str]:
        """``target.trusted_modules``: extra modules a target.json's ``module`` may name; none
        by default (the modalities whose manifests may name a network class override it)."""
        return []

    def distinguisher_is_blind(self) -> bool:
        """Whether the distinguisher also reads the examples themselves with no model (text's
        ``distinguisher.blind``): its RM;RN game would then tell members from real non-members
        by their content alone, so that game does not run. False by default."""
        return False

    @classmethod
    def distinguisher_threads(cls, job: Any, threads: int) -> None:
        """Give the distinguisher ``threads`` where it has a thread count of its own (tables:
        xgboost's ``n_jobs`` follows torch's); nothing by default."""
        return

    def probe_target(self, adapter: Any, data: StageResult) -> None:
        """Score a few of the data's members with a brought model before any other work, so
        that a label or feature mismatch is one line at once (InputError); none by default."""
        return  # the modalities whose data can be scored a few rows at a time override it

    def inference_device(self, which: str):  # -> torch.device
        """Where the forward passes of ``which`` model run: the target's settings for f, the
        helper's for h and the stand-ins (:func:`panoramia.devices.inference_device`)."""
        from panoramia.devices import inference_device

        if not self.device_sections:
            return inference_device("auto", "auto")
        section: DeviceSection = self.job.target if which == "target" else self.job.helper
        return inference_device(section.accelerator, section.devices)
