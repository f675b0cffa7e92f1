"""The distinguisher stages: baseline, attack and RM;RN attack, trained on members vs
non-members and scored on the game's audit set."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.losses import SEQUENCE_LOSSES
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.splits import POOL_SET


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

    def member(directory: Path, loss: dict[str, np.ndarray], index: int) -> tuple[dict, np.ndarray]:
        """Train and score the ``index``-th distinguisher: (its record, its scores)."""

        def part(which: str) -> tuple[Any, Any, np.ndarray, np.ndarray]:
            members = audit.sets.read(split.directory / f"member_{which}{audit.sets.suffix}")
            others = audit.sets.read(others_folder / f"{prefix}_{which}{audit.sets.suffix}")
            return members, others, loss[f"member_{which}"], loss[f"{prefix}_{which}"]

        def stacked(which: str) -> tuple[Any, np.ndarray, np.ndarray]:
            members, others, member_loss, other_loss = part(which)
            labels = np.r_[np.ones(len(members)), np.zeros(len(others))].astype(np.int8)
            return audit.sets.stack(members, others), np.r_[member_loss, other_loss], labels

        # One seed per member for the baseline and the attack (paired): their bounds then
        # differ by the side information, not by training randomness.
        model = audit.new_distinguisher(data, index)
        model.fit(*stacked("attack_train"), *stacked("attack_val"))
        game_arrays = np.load(game.directory / "game.npz")
        coins = game_arrays["reference_coins" if real_nonmembers else "coins"]
        members, others, member_loss, other_loss = part("audit")
        take = coins.astype(bool)
        slots = take.reshape(-1, *[1] * (member_loss.ndim - 1))
        side = np.where(slots, member_loss[: coins.size], other_loss[: coins.size])
        scores = model.score(audit.sets.fill(members, others, take), side)
        suffix = f"_{index}" if len(sides) > 1 else ""
        extra = {}
        if pool is not None:
            pooled = audit.sets.read(pool.directory / f"{POOL_SET}{audit.sets.suffix}")
            extra["pool_scores"] = model.score(pooled, loss[POOL_SET])
        np.savez(
            directory / f"scores{suffix}.npz", scores=scores, membership=coins, side=side, **extra
        )
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
        extra = {}
        if pool is not None:
            extra["pool_scores"] = np.mean(
                [np.load(directory / f"scores_{k}.npz")["pool_scores"] for k in range(len(sides))],
                axis=0,
            )
        np.savez(
            directory / "scores.npz",
            scores=np.mean([scores for _, scores in members], axis=0),
            membership=first["membership"],
            side=first["side"],
            **extra,
        )
        return {"ensemble": records, "chosen": records[0]["chosen"],
                "selection": records[0]["selection"]}  # fmt: skip

    config = {
        "distinguisher": asdict(audit.job.distinguisher),
        "seed": audit.seed,
        "real_nonmembers": real_nonmembers,
    }
    if len(sides) > 1:
        config["ensemble"] = len(sides)
    if any(len(losses) > 2 for losses in sides):
        # The inputs are a set: with reference models (each member's own choice of the
        # other stand-ins) they no longer say which member sees which losses.
        config["sides"] = [[stage.name for stage in losses] for losses in sides]
    inputs = list({stage.key: stage for losses in sides for stage in losses}.values())
    if pool is not None:
        inputs.append(pool)
    return audit.runner.run(
        name, build, config=config, inputs=[data, split, synthetic, *inputs, game]
    )
