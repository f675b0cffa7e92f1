"""``baseline.blind``: how far a classifier that sees no model tells members from generated
examples (docs/SPEC.md §2.9), beside the baseline's c_lb.

Its bound is measured with the same tests as the baseline's on the same audit slots: the
paper's one-sided game (``c_lb``) and, where the audit runs it, the two-sided game
(``c_lb_two_sided``, in nats). Where either beats the baseline's bound of the same game, the
generated examples are told apart without any model, and ``note`` says so: the baseline is
then not the best generator-only distinguisher this audit knows of, and ε̃ may overstate what
the model adds.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from panoramia.measure import measure
from panoramia.measure.two_sided import measure_two_sided, two_sided_grid


def blind_section(
    membership: np.ndarray,
    scores: np.ndarray,
    *,
    model: str,
    baseline_c_lb: float,
    baseline_c_lb_two_sided: float | None,
    thresholds: str,
    confidence: float,
    gamma: float,
    seed: int,
) -> dict[str, object]:
    """The blind classifier's bounds on the audit slots (``model``: what it reads;
    ``membership``: 1 = member coin; ``scores``: P(member) in [0, 1], shape (m,)), compared
    with the baseline's."""
    one_sided = measure(
        membership, baseline_scores=scores, attack_scores=scores, thresholds=thresholds,
        confidence=confidence, gamma=gamma, seed=seed,
    ).c_lb  # fmt: skip
    section: dict[str, object] = {
        "model": model,
        "c_lb": round(float(one_sided), 6),
        "auc": round(float(roc_auc_score(membership, scores)), 6),
    }
    beats = one_sided > baseline_c_lb
    if baseline_c_lb_two_sided is not None:
        grid = two_sided_grid(thresholds, m=membership.size, gamma=gamma, delta=0.0)
        two_sided = measure_two_sided(
            membership, baseline_scores=scores, attack_scores=scores, grid=grid,
            confidence=confidence,
        ).c_lb  # fmt: skip
        section["c_lb_two_sided"] = round(float(two_sided), 6)
        beats = beats or two_sided > baseline_c_lb_two_sided
    section["beats_baseline"] = bool(beats)
    section["note"] = (
        "A classifier that sees no model tells the generated examples from the members better "
        "than the baseline does: they are told apart without any model, so the baseline "
        "understates the generator's closeness and ε̃ may overstate what the model adds."
        if beats
        else "A classifier that sees no model tells the generated examples apart no better "
        "than the baseline."
    )
    return section
