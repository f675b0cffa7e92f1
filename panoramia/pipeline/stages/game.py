"""The game stage: the Bernoulli coins and which member or non-member fills each audit slot."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.pipeline.seeds import child_rng
from panoramia.pipeline.stages.artifacts import GameDraw
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import SEED, StageKey

GAME = StageKey("game", seeds=(SEED,))


def build_game(audit: Audit, split: StageResult, synthetic: StageResult) -> StageResult:
    """The Bernoulli game: coins s and which member/synthetic row fills each audit slot."""

    def build(directory: Path) -> dict:
        m = int(split.info["members"]["audit"])
        rng = child_rng(audit.seed, "game")
        coins = rng.integers(0, 2, m).astype(np.int8)
        n_real = int(split.info.get("nonmembers", {}).get("audit", 0))
        reference_coins = None
        if n_real:
            m_ref = min(m, n_real)
            reference_coins = (
                child_rng(audit.seed, "game/reference").integers(0, 2, m_ref).astype(np.int8)
            )
        GameDraw(
            coins=coins, member_index=np.arange(m), synthetic_index=np.arange(m),
            seed=audit.seed, reference_coins=reference_coins,
        ).save(directory)  # fmt: skip
        return {
            "m": m,
            "members_in_audit": int(coins.sum()),
            "m_reference": 0 if reference_coins is None else int(reference_coins.size),
        }

    return audit.runner.run(GAME, build, inputs=[split, synthetic])
