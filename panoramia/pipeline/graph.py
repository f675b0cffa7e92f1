"""The stage graph every audit shares, whatever the modality.

data → target → generator_data (D_G) → generator → synthetic (pool) → helper → split (the
other members) → synthetic_split → losses (h, f) → game → baseline / attack (/ RM;RN attack).
A modality's pipeline implements the data-specific stages; the splits, the target stage's
bookkeeping, the Bernoulli game and the order of the graph live here.

Two seeds drive it: ``generation_seed`` (D_G, the generator, the synthetic pool, h) and
``seed`` (which remaining members and which pooled synthetic examples train, validate and
fill the audit; the coins; the distinguishers' training). With ``generation_seed`` fixed,
repeated seeds reuse the generator stages and re-run only the cheap ones (docs/SPEC.md §2.5).
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from panoramia.errors import InputError
from panoramia.pipeline.seeds import child_rng, child_seed
from panoramia.pipeline.stages import StageResult, StageRunner
from panoramia.ranges import CHOICES
from panoramia.targets import load_target

ATTACK_SIDES = CHOICES["audit.attack_side"]
"""Values of ``audit.attack_side``: the losses the attack sees (f's; f's and h's; f's, h's and
the other stand-ins' as reference models, docs/SPEC.md §2.7)."""
BASELINE_SIDES = CHOICES["audit.baseline_side"]
REFERENCE = "+reference"
"""Values of ``audit.baseline_side``: the losses the baseline sees (h's; the stand-in f̂'s;
f̂'s and h's), docs/SPEC.md §2.7."""
STAND_IN_RECIPES = CHOICES["audit.stand_in.recipe"]
"""Values of ``audit.stand_in.recipe``."""
STAND_IN_DATA = CHOICES["audit.stand_in.training_data"]
"""Values of ``audit.stand_in.training_data``."""
MEMBER_SETS = ("generator", "attack_train", "attack_val", "audit")
"""The parts of the known members: D_G, D_in^tr, D_in^val, D_in^te."""
SYNTHETIC_SETS = ("attack_train", "attack_val", "audit", "helper")
"""The disjoint synthetic sets: the distinguishers' train/val, the audit, h's training set."""
GRAPH_STAGES = (
    "data", "target", "generator_data", "generator", "synthetic", "helper", "split",
    "synthetic_split", "losses_helper", "losses_target", "game", "baseline", "attack",
)  # fmt: skip
"""The stages of :meth:`AuditPipeline.run`, in order (``stand_in`` follows ``helper`` and
``losses_stand_in`` follows ``losses_helper`` when the baseline sees the stand-in;
``attack_rmrn`` follows when real non-members are there)."""
SEQUENCE_LOSSES = "sequence_losses.npz"
"""Per-token losses (n, T) of each set, beside their means in ``losses.npz`` (text)."""


def split_sizes(n: int, fractions: dict[str, float]) -> dict[str, int]:
    """Examples per part of :data:`MEMBER_SETS` for ``n`` known members (floors)."""
    if sum(fractions.values()) > 1 + 1e-9:
        raise InputError("data.split: the fractions add up to more than 1")
    sizes = {name: math.floor(fraction * n) for name, fraction in fractions.items()}
    if min(sizes.values()) < 10:
        raise InputError(f"data.split: {n} known members leave a part under 10 rows: {sizes}")
    return sizes


def member_parts(
    n: int, sizes: dict[str, int], *, generation_seed: int, seed: int
) -> dict[str, np.ndarray]:
    """Indices into the ``n`` known members of each part of :data:`MEMBER_SETS` (disjoint).

    D_G depends on ``generation_seed`` alone; the other parts are drawn by ``seed`` among the
    members D_G leaves, so changing ``seed`` never moves an example into or out of D_G."""
    order = child_rng(generation_seed, "split/members").permutation(n)
    n_generator = sizes["generator"]
    rest = order[n_generator:]
    rest = rest[child_rng(seed, "split/rest").permutation(rest.size)]
    parts, start = {"generator": order[:n_generator]}, 0
    for name in MEMBER_SETS[1:]:
        parts[name] = rest[start : start + sizes[name]]
        start += sizes[name]
    return parts


class AuditPipeline(ABC):
    """Builds (or reuses) every stage for one job config; exposes what the report needs."""

    def __init__(self, job: Any, runner: StageRunner) -> None:
        """``job``: the modality's job schema (a ``JobConfigBase``); sets ``runner.total``."""
        self.job = job
        self.runner = runner
        self.seed = job.seed
        self.generation_seed = job.seed if job.generation_seed is None else job.generation_seed
        runner.total = len(self.planned_stages())

    def planned_stages(self) -> tuple[str, ...]:
        """The stages this job runs at most, in order: :data:`GRAPH_STAGES`, then
        ``attack_rmrn`` when the RM;RN audit is on (it runs only if real non-members exist)."""
        rmrn = ("attack_rmrn",) if self.job.audit.reference.rmrn else ()
        stages = list(GRAPH_STAGES)
        if self.uses_stand_in:
            names = self.stand_in_names()
            at = stages.index("helper") + 1
            stages[at:at] = names
            at = stages.index("losses_helper") + 1
            stages[at:at] = [f"losses_{name}" for name in names]
        return (*stages, *rmrn)

    def stand_in_names(self) -> list[str]:
        """The stand-in stages: ``stand_in_1`` … ``stand_in_k``, k = ``audit.ensemble``."""
        return [f"stand_in_{index}" for index in range(1, self.job.audit.ensemble + 1)]

    @property
    def uses_stand_in(self) -> bool:
        """Whether the baseline sees the stand-in f̂'s losses (``audit.baseline_side``)."""
        return self.job.audit.baseline_side.startswith("stand_in")

    # -- modality-specific stages -------------------------------------------------------
    @abstractmethod
    def check(self) -> None:
        """Fail on inconsistent settings before any stage runs."""

    @abstractmethod
    def data(self) -> StageResult: ...

    @abstractmethod
    def _train_demo_target(self, data: StageResult, directory: Path) -> dict:
        """Train the demo target into ``directory``; returns its metrics."""

    @abstractmethod
    def generator(self, data: StageResult, known: StageResult) -> StageResult:
        """Fit the generator on D_G (``known``: the generator_data stage)."""

    @abstractmethod
    def synthetic(self, data: StageResult, known: StageResult, gen: StageResult) -> StageResult:
        """Sample the synthetic pool: one file per set of :data:`SYNTHETIC_SETS`, sized by
        :meth:`synthetic_sizes`."""

    @abstractmethod
    def helper(
        self, data: StageResult, known: StageResult, synthetic: StageResult
    ) -> StageResult: ...

    @abstractmethod
    def _train_stand_in(self, data: StageResult, examples: Any, directory: Path, seed: int) -> dict:
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

    SET_SUFFIX: str
    """File suffix of a stored example set (``.parquet`` rows, ``.npz`` images or chunks)."""
    MEMBERS_FILE: str
    """The data stage's file of known members."""
    NONMEMBERS_FILE: str
    """The data stage's file of real non-members (absent when the user has none)."""

    @abstractmethod
    def read_set(self, path: Path) -> Any:
        """One stored example set: a DataFrame of rows, an ImageSet or a TextSet."""

    @abstractmethod
    def write_subset(self, examples: Any, indices: np.ndarray, path: Path) -> None:
        """Store ``examples[indices]`` (in that order) as one set at ``path``."""

    @abstractmethod
    def stack(self, members: Any, others: Any) -> Any:
        """Members then others, as one set."""

    @abstractmethod
    def fill_slots(self, members: Any, others: Any, take: np.ndarray) -> Any:
        """The game's audit set: slot i holds member i where ``take[i]``, else other i."""

    @abstractmethod
    def new_distinguisher(self, data: StageResult, index: int = 0) -> Any:
        """An unfitted distinguisher (``fit``, ``score``, ``candidates``, ``chosen``)."""

    def side_losses(self, adapter: Any, examples: Any) -> np.ndarray:
        """The side information of each example: its loss (n,), or a loss sequence (n, T)."""
        return adapter.per_example_loss(examples)

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
        """InputError naming ``audit.slices`` when it names more than 8 columns or one the
        data does not have."""
        slices = list(self.job.audit.slices)
        if len(slices) > 8:
            raise InputError(f"audit.slices: {len(slices)} columns, at most 8")
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

    def audit_members(self, stages: dict[str, StageResult]) -> tuple[Any, list[str]] | None:
        """The audit set's members as a table (a pandas DataFrame, row i: member i of the
        game's slots) and the columns whose values make groups (the label's first), for the
        report's exposed records and groups; None where the modality shows none."""
        return None

    @staticmethod
    def synthetic_sizes(known: StageResult, helper: int) -> dict[str, int]:
        """Synthetic examples per set: as many as the members of each distinguisher split and
        of the audit, and ``helper`` for h (the sets of :data:`SYNTHETIC_SETS`, disjoint).
        ``known``: the generator_data stage (it records every part's size)."""
        sizes = known.info["members"]
        return {**{name: int(sizes[name]) for name in SYNTHETIC_SETS[:3]}, "helper": helper}

    # -- shared stages ------------------------------------------------------------------
    def trusted_modules(self) -> list[str]:
        """``target.trusted_modules``: extra modules a target.json's ``module`` may name."""
        return list(getattr(self.job.target, "trusted_modules", None) or [])

    def target(self, data: StageResult) -> StageResult:
        """Train the demo target (cached) or record an external target's identity."""
        config = asdict(self.job.target)
        config.pop("trusted_modules", None)  # who may be imported, not what the target is
        if config.get("dp_epsilon", 0) is None:  # plain training: the key it always had
            for name in [key for key in config if key.startswith("dp_")]:
                config.pop(name)
        if self.job.target.kind == "path":
            return self._external_target(config, data)
        config.pop("name")
        config.pop("path")
        if self.job.target.members == "disjoint+generator_data":  # D_G is in its training set
            config["generator_data"] = {
                "fractions": asdict(self.job.data.split),
                "generation_seed": self.generation_seed,
            }

        def build(directory: Path) -> dict:
            metrics = self._train_demo_target(data, directory)
            # The identity (format, file hashes) goes into the record, read by every report.
            return {**metrics, "identity": load_target(directory).identity()}

        return self.runner.run(
            "target",
            build,
            config=config,
            inputs=[data],
            label=f"target {self.job.target.name}",
            version=3,  # 2: initial weights follow train_seed; 3: identity in the record
        )

    def probe_target(self, adapter: Any, data: StageResult) -> None:
        """Score a few of the data's members with a brought model before any other work, so
        that a label or feature mismatch is one line at once (InputError); none by default."""
        return  # the modalities whose data can be scored a few rows at a time override it

    def _external_target(self, config: dict, data: StageResult) -> StageResult:
        adapter = load_target(self.job.target.path, trusted_modules=self.trusted_modules())
        self.probe_target(adapter, data)
        identity = adapter.identity()

        def build(directory: Path) -> dict:
            (directory / "external.json").write_text(
                json.dumps({"path": str(Path(self.job.target.path).resolve())})
            )
            return {"identity": identity}

        return self.runner.run(
            "target",
            build,
            config={**config, "identity": identity},
            inputs=[],
            label=f"target {self.job.target.name}",
        )

    def stand_in(self, data: StageResult, known: StageResult, index: int = 1) -> StageResult:
        """The stand-in f̂: h's recipe trained on real examples that no distinguisher and no
        PANORAMIA game sees (docs/SPEC.md §2.7; the real non-members among them may be in the
        reference game of RM;RN and O(1), which only f's and h's losses meet):
        ``audit.stand_in.training_data`` names them (the real non-members, D_G, or both; D_G
        alone when the data has no real non-members). At most ``max_examples`` of them
        (default: as many as the known members), drawn by ``generation_seed``; a fifth is held
        out to choose the epoch as for h when ``select_epoch``. The ``index``-th stand-in
        (1 … ``audit.ensemble``) trains on the same examples with a seed of its own."""
        setting = self.job.audit.stand_in
        nonmembers = data.directory / self.NONMEMBERS_FILE
        generator_data = known.directory / f"member_generator{self.SET_SUFFIX}"
        sources = {
            "real_nonmembers": [nonmembers], "generator_data": [generator_data],
            "real_nonmembers+generator_data": [nonmembers, generator_data],
        }[setting.training_data]  # fmt: skip
        if not nonmembers.exists():  # no real non-members: D_G alone
            sources = [generator_data]
        shown = " + ".join("real non-members" if s == nonmembers else "D_G" for s in sources)
        cap = setting.max_examples or int(data.info["members"])
        extra_config, extra_inputs = self.stand_in_key(data)

        def build(directory: Path) -> dict:
            examples = self.read_set(sources[0])
            for source in sources[1:]:
                examples = self.stack(examples, self.read_set(source))
            rng = child_rng(self.generation_seed, "stand_in/examples")
            order = rng.permutation(len(examples))[:cap]
            training = directory / f"stand_in_training{self.SET_SUFFIX}"  # kept beside f̂
            self.write_subset(examples, order, training)
            seed = child_seed(self.generation_seed, "stand_in" + (f"/{index}" if index > 1 else ""))
            metrics = self._train_stand_in(data, self.read_set(training), directory, seed)
            return {"training_data": shown, "examples": int(order.size), **metrics}

        config = {
            "helper": asdict(self.stand_in_recipe()),
            **self.stand_in_recipe_key(),
            "training_data": [source.name for source in sources],
            "max_examples": cap,
            "generation_seed": self.generation_seed,
            "index": index,
            **extra_config,
        }
        return self.runner.run(
            f"stand_in_{index}", build, config=config,
            inputs=[data, *([known] if generator_data in sources else []), *extra_inputs],
            label=f"stand-in f̂_{index} ({shown})",
        )  # fmt: skip

    def inference_device(self, which: str):  # -> torch.device
        """Where the forward passes of ``which`` model run: the target's settings for f, the
        helper's for h and the stand-ins (:func:`panoramia.devices.inference_device`)."""
        from panoramia.devices import inference_device

        section = self.job.target if which == "target" else self.job.helper
        return inference_device(
            getattr(section, "accelerator", "auto"), getattr(section, "devices", "auto")
        )

    def losses(
        self, model: StageResult, split: StageResult, synthetic: StageResult, *, which: str
    ) -> StageResult:
        """Per-example losses of f (``which="target"``) or h on every set the audit uses."""

        def build(directory: Path) -> dict:
            adapter = load_target(
                self.model_directory(model), trusted_modules=self.trusted_modules(),
                device=self.inference_device(which),
            )  # fmt: skip
            pattern = f"*{self.SET_SUFFIX}"
            files = sorted([*split.directory.glob(pattern), *synthetic.directory.glob(pattern)])
            side = {file.stem: self.side_losses(adapter, self.read_set(file)) for file in files}
            losses = {k: v.mean(axis=1) if v.ndim == 2 else v for k, v in side.items()}
            np.savez(directory / "losses.npz", **losses)
            if any(v.ndim == 2 for v in side.values()):
                np.savez(directory / SEQUENCE_LOSSES, **side)
            return {"mean_loss": {k: round(float(v.mean()), 5) for k, v in losses.items()}}

        return self.runner.run(
            f"losses_{which}",
            build,
            config={"which": which},
            inputs=[model, split, synthetic],
            label=f"losses under {which}",
        )

    def distinguisher(
        self,
        name: str,
        data: StageResult,
        split: StageResult,
        synthetic: StageResult,
        sides: list[list[StageResult]],
        game: StageResult,
        *,
        real_nonmembers: bool = False,
    ) -> StageResult:
        """Train on members vs non-members (synthetic, or real for RM;RN) and score the audit.

        ``sides``: one list of losses stages per distinguisher of the ensemble (``audit.
        ensemble``; member k is trained with seed k); their per-example losses are that
        distinguisher's side information, stacked on a last axis ((n, k) or (n, T, k) for
        sequences) in this order. The stage's scores are the members' mean score."""
        prefix = "nonmember" if real_nonmembers else "synthetic"
        others_folder = split.directory if real_nonmembers else synthetic.directory

        tables_read: dict[str, dict[str, np.ndarray]] = {}  # h's losses serve every member

        def side_table(stage: StageResult) -> dict[str, np.ndarray]:
            if stage.key not in tables_read:
                sequences = stage.directory / SEQUENCE_LOSSES
                tables_read[stage.key] = dict(
                    np.load(sequences if sequences.exists() else stage.directory / "losses.npz")
                )
            return tables_read[stage.key]

        def side(losses: list[StageResult]) -> dict[str, np.ndarray]:
            tables = [side_table(stage) for stage in losses]
            loss = tables[0]
            if len(tables) > 1:
                loss = {name: np.stack([t[name] for t in tables], axis=-1) for name in loss}
            return loss

        def member(
            directory: Path, loss: dict[str, np.ndarray], index: int
        ) -> tuple[dict, np.ndarray]:
            """Train and score the ``index``-th distinguisher: (its record, its scores)."""

            def part(which: str) -> tuple[Any, Any, np.ndarray, np.ndarray]:
                members = self.read_set(split.directory / f"member_{which}{self.SET_SUFFIX}")
                others = self.read_set(others_folder / f"{prefix}_{which}{self.SET_SUFFIX}")
                return members, others, loss[f"member_{which}"], loss[f"{prefix}_{which}"]

            def stacked(which: str) -> tuple[Any, np.ndarray, np.ndarray]:
                members, others, member_loss, other_loss = part(which)
                labels = np.r_[np.ones(len(members)), np.zeros(len(others))].astype(np.int8)
                return self.stack(members, others), np.r_[member_loss, other_loss], labels

            # One seed per member for the baseline and the attack (paired): their bounds then
            # differ by the side information, not by training randomness.
            model = self.new_distinguisher(data, index)
            model.fit(*stacked("attack_train"), *stacked("attack_val"))
            game_arrays = np.load(game.directory / "game.npz")
            coins = game_arrays["reference_coins" if real_nonmembers else "coins"]
            members, others, member_loss, other_loss = part("audit")
            take = coins.astype(bool)
            slots = take.reshape(-1, *[1] * (member_loss.ndim - 1))
            side = np.where(slots, member_loss[: coins.size], other_loss[: coins.size])
            scores = model.score(self.fill_slots(members, others, take), side)
            suffix = f"_{index}" if len(sides) > 1 else ""
            np.savez(directory / f"scores{suffix}.npz", scores=scores, membership=coins, side=side)
            record = {
                "selection": [asdict(c) for c in model.candidates],
                "chosen": asdict(model.chosen),
            }
            return record, scores

        def build(directory: Path) -> dict:
            members = [member(directory, side(losses), k) for k, losses in enumerate(sides)]
            records = [record for record, _ in members]
            if len(records) == 1:
                return records[0]
            first = np.load(directory / "scores_0.npz")
            np.savez(
                directory / "scores.npz",
                scores=np.mean([scores for _, scores in members], axis=0),
                membership=first["membership"],
                side=first["side"],
            )
            return {"ensemble": records, "chosen": records[0]["chosen"],
                    "selection": records[0]["selection"]}  # fmt: skip

        config = {
            "distinguisher": asdict(self.job.distinguisher),
            "seed": self.seed,
            "real_nonmembers": real_nonmembers,
        }
        if len(sides) > 1:
            config["ensemble"] = len(sides)
        if any(len(losses) > 2 for losses in sides):
            # The inputs are a set: with reference models (each member's own choice of the
            # other stand-ins) they no longer say which member sees which losses.
            config["sides"] = [[stage.name for stage in losses] for losses in sides]
        inputs = list({stage.key: stage for losses in sides for stage in losses}.values())
        return self.runner.run(
            name, build, config=config, inputs=[data, split, synthetic, *inputs, game]
        )

    @staticmethod
    def model_directory(model: StageResult) -> Path:
        """Where a target or helper stage's model lives (an external target's own path)."""
        path = model.directory
        if (path / "external.json").exists():
            path = Path(json.loads((path / "external.json").read_text())["path"])
        return path

    def _member_parts(self, data: StageResult) -> tuple[Any, dict[str, np.ndarray]]:
        members = self.read_set(data.directory / self.MEMBERS_FILE)
        sizes = split_sizes(len(members), asdict(self.job.data.split))
        parts = member_parts(
            len(members), sizes, generation_seed=self.generation_seed, seed=self.seed
        )
        return members, parts

    def generator_data(self, data: StageResult) -> StageResult:
        """D_G: the known members the generator (and the labeler) learn from; it depends on
        ``generation_seed`` only. Its info records the size of every member part."""
        fractions = asdict(self.job.data.split)

        def build(directory: Path) -> dict:
            members, parts = self._member_parts(data)
            self.write_subset(
                members, parts["generator"], directory / f"member_generator{self.SET_SUFFIX}"
            )
            return {"members": {name: int(part.size) for name, part in parts.items()}}

        return self.runner.run(
            "generator_data",
            build,
            config={"fractions": fractions, "generation_seed": self.generation_seed},
            inputs=[data],
            label="D_G (generator's members)",
        )

    def split(self, data: StageResult) -> StageResult:
        """The known members outside D_G into attack train/val and audit (by ``seed``); real
        non-members (if any) into attack train/val/audit, for RM;RN and O(1)."""
        fractions = asdict(self.job.data.split)

        def build(directory: Path) -> dict:
            members, parts = self._member_parts(data)
            for name in MEMBER_SETS[1:]:
                self.write_subset(
                    members, parts[name], directory / f"member_{name}{self.SET_SUFFIX}"
                )
            info: dict = {"members": {name: int(part.size) for name, part in parts.items()}}
            if (data.directory / self.NONMEMBERS_FILE).exists():
                nonmembers = self.read_set(data.directory / self.NONMEMBERS_FILE)
                order = child_rng(self.seed, "split/nonmembers").permutation(len(nonmembers))
                start, info["nonmembers"] = 0, {}
                for name in MEMBER_SETS[1:]:
                    size = min(parts[name].size, max(0, len(nonmembers) - start))
                    if size:
                        self.write_subset(
                            nonmembers, order[start : start + size],
                            directory / f"nonmember_{name}{self.SET_SUFFIX}",
                        )  # fmt: skip
                    info["nonmembers"][name] = size
                    start += size
            return info

        config = {"fractions": fractions, "generation_seed": self.generation_seed}
        return self.runner.run("split", build, config={**config, "seed": self.seed}, inputs=[data])

    def synthetic_split(self, pool: StageResult) -> StageResult:
        """The pool's distinguisher and audit sets, pooled and re-dealt by ``seed`` into sets
        of the same sizes (h's set stays out: h never sees an audited example)."""
        names = SYNTHETIC_SETS[:3]

        def build(directory: Path) -> dict:
            sets = [
                self.read_set(pool.directory / f"synthetic_{n}{self.SET_SUFFIX}") for n in names
            ]
            sizes = [len(part) for part in sets]
            pooled = sets[0]
            for part in sets[1:]:
                pooled = self.stack(pooled, part)
            order = child_rng(self.seed, "split/synthetic").permutation(len(pooled))
            for name, end, size in zip(names, np.cumsum(sizes), sizes, strict=True):
                self.write_subset(
                    pooled,
                    order[end - size : end],
                    directory / f"synthetic_{name}{self.SET_SUFFIX}",
                )
            return dict(zip(names, sizes, strict=True))

        return self.runner.run(
            "synthetic_split", build, config={"seed": self.seed}, inputs=[pool],
            label="synthetic split",
        )  # fmt: skip

    def game(self, split: StageResult, synthetic: StageResult) -> StageResult:
        """The Bernoulli game: coins s and which member/synthetic row fills each audit slot."""

        def build(directory: Path) -> dict:
            m = int(split.info["members"]["audit"])
            rng = child_rng(self.seed, "game")
            coins = rng.integers(0, 2, m).astype(np.int8)
            arrays = {
                "coins": coins,
                "member_index": np.arange(m),
                "synthetic_index": np.arange(m),
                "seed": np.array(self.seed),
            }
            n_real = int(split.info.get("nonmembers", {}).get("audit", 0))
            if n_real:
                m_ref = min(m, n_real)
                arrays["reference_coins"] = (
                    child_rng(self.seed, "game/reference").integers(0, 2, m_ref).astype(np.int8)
                )
            np.savez(directory / "game.npz", **arrays)
            return {
                "m": m,
                "members_in_audit": int(coins.sum()),
                "m_reference": int(arrays.get("reference_coins", np.zeros(0)).size),
            }

        return self.runner.run("game", build, config={"seed": self.seed}, inputs=[split, synthetic])

    # -- the whole graph ----------------------------------------------------------------
    def run(self) -> dict[str, StageResult]:
        self.check()
        self.check_slices()
        if self.job.audit.attack_side not in ATTACK_SIDES:
            raise InputError(
                f"audit.attack_side: {self.job.audit.attack_side!r} is not one of {ATTACK_SIDES}"
            )
        if self.job.audit.baseline_side not in BASELINE_SIDES:
            raise InputError(
                f"audit.baseline_side: {self.job.audit.baseline_side!r} is not one of "
                f"{BASELINE_SIDES}"
            )
        attack_reference = self.job.audit.attack_side.endswith(REFERENCE)
        baseline_reference = self.job.audit.baseline_side.endswith(REFERENCE)
        if (attack_reference or baseline_reference) and (
            not (attack_reference and baseline_reference) or self.job.audit.ensemble < 2
        ):
            raise InputError(
                "audit.attack_side=target+helper+reference goes with "
                "audit.baseline_side=stand_in+helper+reference and audit.ensemble ≥ 2 (the "
                "reference models are the other stand-ins, on both sides)"
            )
        if self.job.audit.stand_in.recipe not in STAND_IN_RECIPES:
            raise InputError(
                f"audit.stand_in.recipe: {self.job.audit.stand_in.recipe!r} is not one of "
                f"{STAND_IN_RECIPES}"
            )
        if self.job.audit.stand_in.training_data not in STAND_IN_DATA:
            raise InputError(
                f"audit.stand_in.training_data: {self.job.audit.stand_in.training_data!r} is "
                f"not one of {STAND_IN_DATA}"
            )
        from panoramia.measure.null import check_null_settings

        check_null_settings(self.job.audit.null.draws, self.job.audit.null.false_alarm_rate)
        data = self.data()
        target = self.target(data)
        known = self.generator_data(data)
        gen = self.generator(data, known)
        pool = self.synthetic(data, known, gen)
        helper = self.helper(data, known, pool)
        k = self.job.audit.ensemble
        if k < 1:
            raise InputError(f"audit.ensemble: {k} is not ≥ 1")
        stand_ins = (
            [self.stand_in(data, known, i) for i in range(1, k + 1)] if self.uses_stand_in else []
        )
        split = self.split(data)
        synthetic = self.synthetic_split(pool)
        losses_h = self.losses(helper, split, synthetic, which="helper")
        losses_s = [
            self.losses(stand_in, split, synthetic, which=stand_in.name) for stand_in in stand_ins
        ]
        losses_f = self.losses(target, split, synthetic, which="target")
        game = self.game(split, synthetic)
        stages = {
            "data": data,
            "target": target,
            "generator_data": known,
            "generator": gen,
            "synthetic": pool,
            "helper": helper,
            "split": split,
            "synthetic_split": synthetic,
            "losses_helper": losses_h,
            "losses_target": losses_f,
            "game": game,
        }
        for stand_in, losses in zip(stand_ins, losses_s, strict=True):
            stages[stand_in.name], stages[losses.name] = stand_in, losses
        # The attack's side: f's losses, then h's when it is to know all the baseline knows;
        # with reference models, member j also sees every stand-in but f̂_j (SPEC §2.7).
        attack_side = [losses_f, losses_h] if self.job.audit.attack_side != "target" else [losses_f]

        def references(j: int) -> list[StageResult]:
            if not self.job.audit.attack_side.endswith(REFERENCE):
                return []
            return [losses for i, losses in enumerate(losses_s) if i != j]

        attack_sides = [[*attack_side, *references(j)] for j in range(k)]
        # The baseline's: h's (the paper's), or a stand-in's in f's place (SPEC §2.7), one
        # stand-in per member of the ensemble, and the same reference models as the attack's.
        baseline_sides = [
            {"helper": [losses_h], "stand_in": [s], "stand_in+helper": [s, losses_h],
             "stand_in+helper+reference": [s, losses_h, *references(j)]}[
                self.job.audit.baseline_side
            ]
            for j, s in enumerate(losses_s or [losses_h] * k)
        ]  # fmt: skip
        stages["baseline"] = self.distinguisher(
            "baseline", data, split, synthetic, baseline_sides, game
        )
        stages["attack"] = self.distinguisher("attack", data, split, synthetic, attack_sides, game)
        has_reference = bool(game.info.get("m_reference"))
        # The stand-ins train on the data's real non-members, RM;RN's too: an attack that
        # sees them as reference models would tell those non-members by their low losses.
        with_references = self.job.audit.attack_side.endswith(REFERENCE)
        if self.job.audit.reference.rmrn and has_reference and not with_references:
            stages["attack_rmrn"] = self.distinguisher(
                "attack_rmrn", data, split, synthetic, attack_sides, game,
                real_nonmembers=True,
            )  # fmt: skip
        return stages
