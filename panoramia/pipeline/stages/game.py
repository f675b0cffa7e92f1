"""The game stage: the Bernoulli coins and which member or non-member fills each audit slot."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.pipeline.seeds import child_rng
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult


def build_game(audit: Audit, split: StageResult, synthetic: StageResult) -> StageResult:
    """The Bernoulli game: coins s and which member/synthetic row fills each audit slot."""

    def build(directory: Path) -> dict:
        m = int(split.info["members"]["audit"])
        rng = child_rng(audit.seed, "game")
        coins = rng.integers(0, 2, m).astype(np.int8)
        arrays: dict[str, np.ndarray] = {
            "coins": coins,
            "member_index": np.arange(m),
            "synthetic_index": np.arange(m),
            "seed": np.array(audit.seed),
        }
        n_real = int(split.info.get("nonmembers", {}).get("audit", 0))
        if n_real:
            m_ref = min(m, n_real)
            arrays["reference_coins"] = (
                child_rng(audit.seed, "game/reference").integers(0, 2, m_ref).astype(np.int8)
            )
        # savez's stub: ** could fill allow_pickle: bool
        np.savez(directory / "game.npz", **arrays)  # type: ignore[arg-type]
        return {
            "m": m,
            "members_in_audit": int(coins.sum()),
            "m_reference": int(arrays.get("reference_coins", np.zeros(0)).size),
        }

    return audit.runner.run("game", build, config={"seed": audit.seed}, inputs=[split, synthetic])
