"""The distinguisher stages: baseline, attack and RM;RN attack, trained on members vs
non-members and scored on the game's audit set."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from panoramia.pipeline.stages.artifacts import GameDraw, Scores
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.losses import side_losses_of
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.splits import POOL_SET
from panoramia.pipeline.stages.stage_key import SEED, StageKey

DISTINGUISHER = StageKey(
    "baseline", settings={"distinguisher": "distinguisher"}, seeds=(SEED,),
    also_reads=("audit.ensemble", "audit.attack_side", "audit.baseline_side"),
)  # fmt: skip
"""The distinguisher stages (``baseline``, ``attack``, ``attack_rmrn``): the distinguisher's
settings, the seed, whether the non-members are real and, where it has several, the
ensemble's size and which losses each member sees (the sides)."""


def build_distinguisher(
    audit: Audit,
    name: str,
    data: StageResult,
    split: StageResult,
    synthetic: StageResult,
    sides: list[list[StageResult]],
    game: StageResult,
    *,
    real_nonmembers: bool = False,
    pool: StageResult | None = None,
) -> StageResult:
    """Train on members vs non-members (synthetic, or real for RM;RN) and score the audit;
    with ``pool`` (the synthetic stage, where it drew the attacker's pool), score the pool's
    generated non-members too (``pool_scores``: the attacker's false-positive side only).

    ``sides``: one list of losses stages per distinguisher of the ensemble (``audit.
    ensemble``; member k is trained with seed k); their per-example losses are that
    distinguisher's side information, stacked on a last axis ((n, k) or (n, T, k) for
    sequences) in this order. The stage's scores are the members' mean score."""
    ensemble = _Ensemble(
        audit, data, split, synthetic, game, pool, real_nonmembers, size=len(sides)
    )

    def build(directory: Path) -> dict:
        side = _SideTables()  # h's losses serve every member
        members = [ensemble.member(directory, side(losses), k) for k, losses in enumerate(sides)]
        records = [record for record, _ in members]
        if len(records) == 1:
            return records[0]
        ensemble.save_mean(directory, [scores for _, scores in members])
        return {"ensemble": records, "chosen": records[0]["chosen"],
                "selection": records[0]["selection"]}  # fmt: skip

    config = _stage_config(audit, sides, real_nonmembers)
    inputs = list({stage.key: stage for losses in sides for stage in losses}.values())
    if pool is not None:
        inputs.append(pool)
    return audit.runner.run(
        DISTINGUISHER, build, name=name, config=config,
        inputs=[data, split, synthetic, *inputs, game],
    )  # fmt: skip


def _stage_config(audit: Audit, sides: list[list[StageResult]], real_nonmembers: bool) -> dict:
    """The distinguisher stage's key inputs (beside its input stages)."""
    config: dict[str, Any] = {"real_nonmembers": real_nonmembers}
    if len(sides) > 1:
        config["ensemble"] = len(sides)
    if any(len(losses) > 2 for losses in sides):
        # The inputs are a set: with reference models (each member's own choice of the
        # other stand-ins) they no longer say which member sees which losses.
        config["sides"] = [[stage.name for stage in losses] for losses in sides]
    return config


class _SideTables:
    """The side information of each member, its losses stages' tables read once each."""

    def __init__(self) -> None:
        self.tables_read: dict[str, dict[str, np.ndarray]] = {}

    def table(self, stage: StageResult) -> dict[str, np.ndarray]:
        """One losses stage's table (its loss sequences where it stored them)."""
        if stage.key not in self.tables_read:
            self.tables_read[stage.key] = side_losses_of(stage)
        return self.tables_read[stage.key]

    def __call__(self, losses: list[StageResult]) -> dict[str, np.ndarray]:
        """One member's side information: its stages' losses, stacked on a last axis."""
        tables = [self.table(stage) for stage in losses]
        loss = tables[0]
        if len(tables) > 1:
            loss = {name: np.stack([t[name] for t in tables], axis=-1) for name in loss}
        return loss


@dataclass(frozen=True)
class _Ensemble:
    """What every distinguisher of the ensemble is trained and scored on."""

    audit: Audit
    data: StageResult
    split: StageResult
    synthetic: StageResult
    game: StageResult
    pool: StageResult | None
    real_nonmembers: bool
    size: int

    @property
    def prefix(self) -> str:
        """The non-members' sets' prefix: real (RM;RN) or synthetic."""
        return "nonmember" if self.real_nonmembers else "synthetic"

    def part(
        self, loss: dict[str, np.ndarray], which: str
    ) -> tuple[Any, Any, np.ndarray, np.ndarray]:
        """The members and non-members of set ``which``, and their losses."""
        sets, prefix = self.audit.sets, self.prefix
        others_folder = self.split.directory if self.real_nonmembers else self.synthetic.directory
        members = sets.read(self.split.directory / f"member_{which}{sets.suffix}")
        others = sets.read(others_folder / f"{prefix}_{which}{sets.suffix}")
        return members, others, loss[f"member_{which}"], loss[f"{prefix}_{which}"]

    def stacked(
        self, loss: dict[str, np.ndarray], which: str
    ) -> tuple[Any, np.ndarray, np.ndarray]:
        """Set ``which``'s members then non-members: examples, losses, labels (1: member)."""
        members, others, member_loss, other_loss = self.part(loss, which)
        labels = np.r_[np.ones(len(members)), np.zeros(len(others))].astype(np.int8)
        return self.audit.sets.stack(members, others), np.r_[member_loss, other_loss], labels

    def member(
        self, directory: Path, loss: dict[str, np.ndarray], index: int
    ) -> tuple[dict, np.ndarray]:
        """Train and score the ``index``-th distinguisher: (its record, its scores)."""
        audit = self.audit
        # One seed per member for the baseline and the attack (paired): their bounds then
        # differ by the side information, not by training randomness.
        model = audit.new_distinguisher(self.data, index)
        model.fit(*self.stacked(loss, "attack_train"), *self.stacked(loss, "attack_val"))
        game = GameDraw.load(self.game.directory)
        coins = game.reference_coins if self.real_nonmembers else game.coins
        assert coins is not None  # the real-non-member games run only where the game drew them
        members, others, member_loss, other_loss = self.part(loss, "audit")
        take = coins.astype(bool)
        slots = take.reshape(-1, *[1] * (member_loss.ndim - 1))
        side = np.where(slots, member_loss[: coins.size], other_loss[: coins.size])
        scores = model.score(audit.sets.fill(members, others, take), side)
        pool_scores = None
        if self.pool is not None:
            pooled = audit.sets.read(self.pool.directory / f"{POOL_SET}{audit.sets.suffix}")
            pool_scores = model.score(pooled, loss[POOL_SET])
        Scores(scores, coins, side=side, pool_scores=pool_scores).save(
            directory, member=index if self.size > 1 else None
        )
        record = {
            "selection": [asdict(c) for c in model.candidates],
            "chosen": asdict(model.chosen),
        }
        return record, scores

    def save_mean(self, directory: Path, scores: list[np.ndarray]) -> None:
        """The ensemble's ``scores.npz``: its members' mean scores (and pool scores)."""
        members = [Scores.load(directory, member=k) for k in range(self.size)]
        pool_scores = None
        if self.pool is not None:
            # every member scored the pool: one without its scores fails here, as it did
            pool_scores = np.mean([cast(np.ndarray, m.pool_scores) for m in members], axis=0)
        Scores(
            np.mean(scores, axis=0), members[0].membership, side=members[0].side,
            pool_scores=pool_scores,
        ).save(directory)  # fmt: skip
