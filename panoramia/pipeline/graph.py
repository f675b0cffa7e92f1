"""The stage graph every audit shares, whatever the modality.

data → target → split → generator → synthetic → helper → losses (h, f) → game → baseline /
attack (/ RM;RN attack). A modality's pipeline implements the data-specific stages; the target
stage's bookkeeping, the Bernoulli game and the order of the graph live here.
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
from panoramia.pipeline.seeds import child_rng
from panoramia.pipeline.stages import StageResult, StageRunner
from panoramia.targets import load_target

MEMBER_SETS = ("generator", "attack_train", "attack_val", "audit")
"""The parts of the known members: D_G, D_in^tr, D_in^val, D_in^te."""
SYNTHETIC_SETS = ("attack_train", "attack_val", "audit", "helper")
"""The disjoint synthetic sets: the distinguishers' train/val, the audit, h's training set."""
SEQUENCE_LOSSES = "sequence_losses.npz"
"""Per-token losses (n, T) of each set, beside their means in ``losses.npz`` (text)."""


def split_sizes(n: int, fractions: dict[str, float]) -> dict[str, int]:
    if sum(fractions.values()) > 1 + 1e-9:
        raise InputError("data.split: the fractions add up to more than 1")
    sizes = {name: math.floor(fraction * n) for name, fraction in fractions.items()}
    if min(sizes.values()) < 10:
        raise InputError(f"data.split: {n} known members leave a part under 10 rows: {sizes}")
    return sizes


class AuditPipeline(ABC):
    """Builds (or reuses) every stage for one job config; exposes what the report needs."""

    def __init__(self, job: Any, runner: StageRunner) -> None:
        """``job``: the modality's JobConfig (tabular or image)."""
        self.job = job
        self.runner = runner
        self.seed = job.seed

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
    def split(self, data: StageResult) -> StageResult: ...

    @abstractmethod
    def generator(self, data: StageResult, split: StageResult) -> StageResult: ...

    @abstractmethod
    def synthetic(self, data: StageResult, split: StageResult, gen: StageResult) -> StageResult: ...

    @abstractmethod
    def helper(
        self, data: StageResult, split: StageResult, synthetic: StageResult
    ) -> StageResult: ...

    SET_SUFFIX: str
    """File suffix of a stored example set (``.parquet`` rows, ``.npz`` images)."""

    @abstractmethod
    def read_set(self, path: Path) -> Any:
        """One stored example set: a DataFrame of rows or an ImageSet."""

    @abstractmethod
    def stack(self, members: Any, others: Any) -> Any:
        """Members then others, as one set."""

    @abstractmethod
    def fill_slots(self, members: Any, others: Any, take: np.ndarray) -> Any:
        """The game's audit set: slot i holds member i where ``take[i]``, else other i."""

    @abstractmethod
    def new_distinguisher(self, data: StageResult) -> Any:
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

    @staticmethod
    def synthetic_sizes(split: StageResult, helper: int) -> dict[str, int]:
        """Synthetic examples per set: as many as the members of each distinguisher split and
        of the audit, and ``helper`` for h (the sets of :data:`SYNTHETIC_SETS`, disjoint)."""
        sizes = split.info["members"]
        return {**{name: int(sizes[name]) for name in SYNTHETIC_SETS[:3]}, "helper": helper}

    # -- shared stages ------------------------------------------------------------------
    def target(self, data: StageResult) -> StageResult:
        """Train the demo target (cached) or record an external target's identity."""
        config = asdict(self.job.target)
        if self.job.target.kind == "path":
            return self._external_target(config)
        config.pop("name")
        config.pop("path")

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

    def _external_target(self, config: dict) -> StageResult:
        identity = load_target(self.job.target.path).identity()

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

    def losses(
        self, model: StageResult, split: StageResult, synthetic: StageResult, *, which: str
    ) -> StageResult:
        """Per-example losses of f (``which="target"``) or h on every set the audit uses."""

        def build(directory: Path) -> dict:
            adapter = load_target(self.model_directory(model))
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
        losses: StageResult,
        game: StageResult,
        *,
        real_nonmembers: bool = False,
    ) -> StageResult:
        """Train on members vs non-members (synthetic, or real for RM;RN) and score the audit."""
        prefix = "nonmember" if real_nonmembers else "synthetic"
        others_folder = split.directory if real_nonmembers else synthetic.directory

        def build(directory: Path) -> dict:
            sequences = losses.directory / SEQUENCE_LOSSES
            loss = dict(
                np.load(sequences if sequences.exists() else losses.directory / "losses.npz")
            )

            def part(which: str) -> tuple[Any, Any, np.ndarray, np.ndarray]:
                members = self.read_set(split.directory / f"member_{which}{self.SET_SUFFIX}")
                others = self.read_set(others_folder / f"{prefix}_{which}{self.SET_SUFFIX}")
                return members, others, loss[f"member_{which}"], loss[f"{prefix}_{which}"]

            def stacked(which: str) -> tuple[Any, np.ndarray, np.ndarray]:
                members, others, member_loss, other_loss = part(which)
                labels = np.r_[np.ones(len(members)), np.zeros(len(others))].astype(np.int8)
                return self.stack(members, others), np.r_[member_loss, other_loss], labels

            # One seed for the baseline and the attack (paired): their bounds then differ by
            # the side information, not by training randomness.
            model = self.new_distinguisher(data)
            model.fit(*stacked("attack_train"), *stacked("attack_val"))
            game_arrays = np.load(game.directory / "game.npz")
            coins = game_arrays["reference_coins" if real_nonmembers else "coins"]
            members, others, member_loss, other_loss = part("audit")
            take = coins.astype(bool)
            slots = take.reshape(-1, *[1] * (member_loss.ndim - 1))
            side = np.where(slots, member_loss[: coins.size], other_loss[: coins.size])
            scores = model.score(self.fill_slots(members, others, take), side)
            np.savez(directory / "scores.npz", scores=scores, membership=coins, side=side)
            return {
                "selection": [asdict(c) for c in model.candidates],
                "chosen": asdict(model.chosen),
            }

        config = {
            "distinguisher": asdict(self.job.distinguisher),
            "seed": self.seed,
            "real_nonmembers": real_nonmembers,
        }
        return self.runner.run(
            name, build, config=config, inputs=[data, split, synthetic, losses, game]
        )

    @staticmethod
    def model_directory(model: StageResult) -> Path:
        """Where a target or helper stage's model lives (an external target's own path)."""
        path = model.directory
        if (path / "external.json").exists():
            path = Path(json.loads((path / "external.json").read_text())["path"])
        return path

    def split_example_files(
        self, data: StageResult, members_file: str, nonmembers_file: str
    ) -> StageResult:
        """The split stage for sets stored as files (images, text): the known members into
        D_G, attack train/val and audit; real non-members (if any) into attack train/val/audit.
        """
        fractions = asdict(self.job.data.split)

        def build(directory: Path) -> dict:
            members = self.read_set(data.directory / members_file)
            sizes = split_sizes(len(members), fractions)
            order = child_rng(self.seed, "split/members").permutation(len(members))
            start = 0
            for name in MEMBER_SETS:
                members.take(order[start : start + sizes[name]]).save(
                    directory / f"member_{name}{self.SET_SUFFIX}"
                )
                start += sizes[name]
            info: dict = {"members": {name: sizes[name] for name in MEMBER_SETS}}
            if (data.directory / nonmembers_file).exists():
                nonmembers = self.read_set(data.directory / nonmembers_file)
                order = child_rng(self.seed, "split/nonmembers").permutation(len(nonmembers))
                start, info["nonmembers"] = 0, {}
                for name in ("attack_train", "attack_val", "audit"):
                    size = min(sizes[name], max(0, len(nonmembers) - start))
                    if size:
                        nonmembers.take(order[start : start + size]).save(
                            directory / f"nonmember_{name}{self.SET_SUFFIX}"
                        )
                    info["nonmembers"][name] = size
                    start += size
            return info

        return self.runner.run(
            "split", build, config={"fractions": fractions, "seed": self.seed}, inputs=[data]
        )

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
        data = self.data()
        target = self.target(data)
        split = self.split(data)
        gen = self.generator(data, split)
        synthetic = self.synthetic(data, split, gen)
        helper = self.helper(data, split, synthetic)
        losses_h = self.losses(helper, split, synthetic, which="helper")
        losses_f = self.losses(target, split, synthetic, which="target")
        game = self.game(split, synthetic)
        stages = {
            "data": data,
            "target": target,
            "split": split,
            "generator": gen,
            "synthetic": synthetic,
            "helper": helper,
            "losses_helper": losses_h,
            "losses_target": losses_f,
            "game": game,
        }
        stages["baseline"] = self.distinguisher("baseline", data, split, synthetic, losses_h, game)
        stages["attack"] = self.distinguisher("attack", data, split, synthetic, losses_f, game)
        has_reference = bool(game.info.get("m_reference"))
        if self.job.audit.reference.rmrn and has_reference:
            stages["attack_rmrn"] = self.distinguisher(
                "attack_rmrn", data, split, synthetic, losses_f, game, real_nonmembers=True
            )
        return stages
