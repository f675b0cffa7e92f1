"""The blind baseline stage: a classifier that sees no model tells members from generated
examples (docs/SPEC.md §2.9); a modality runs it where its pipeline offers one
(:meth:`panoramia.pipeline.graph.AuditPipeline.blind_classifier`; text: token n-grams).

Trained on the attack's training split (members vs synthetic examples, the sets the
distinguishers train on) and scored on the game's audit slots. Its ``scores.npz`` has the
distinguisher stages' keys (``scores``: P(member), ``membership``: the coins, 1 = member), so the
report measures its own c_lb with the game's tests (``baseline.blind``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages.artifacts import GameDraw, Scores
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import SEED, StageKey

BLIND_STAGE = "baseline_blind"
BLIND = StageKey(BLIND_STAGE, seeds=(SEED,))
"""Its key: the seed and the classifier's own key (what it is, as the modality describes it)."""


def build_blind_baseline(
    audit: Audit, split: StageResult, synthetic: StageResult, game: StageResult
) -> StageResult:
    """Fit the modality's blind classifier on the attack's training split and score the audit
    slots."""
    sets, seed = audit.sets, child_seed(audit.seed, "blind")

    def build(directory: Path) -> dict:
        members = sets.read(split.directory / f"member_attack_train{sets.suffix}")
        generated = sets.read(synthetic.directory / f"synthetic_attack_train{sets.suffix}")
        labels = np.r_[np.ones(len(members)), np.zeros(len(generated))].astype(int)
        model = audit.blind_classifier(seed)
        model.fit(sets.stack(members, generated), labels, out_of_fold=False)
        coins = GameDraw.load(game.directory).coins
        slots = sets.fill(
            sets.read(split.directory / f"member_audit{sets.suffix}"),
            sets.read(synthetic.directory / f"synthetic_audit{sets.suffix}"),
            coins.astype(bool),
        )  # fmt: skip
        Scores(model.probabilities(slots), coins).save(directory)
        return {"model": model.description, "trained_on": len(labels)}

    config = {"model": audit.blind_classifier(seed).key()}
    return audit.runner.run(
        BLIND, build, config=config, inputs=[split, synthetic, game],
        label="blind baseline (no model)",
    )  # fmt: skip
