"""Reference-model attacks on real rows (docs/SPEC.md §2.4, "the reference attack"): RMIA's
offline score (Zarifzadeh et al., ICML 2024) and LiRA's offline one-sided test (Carlini et
al., S&P 2022), with the audit's stand-ins as OUT reference models, scored on the
contributor's members against held-out rows that no reference model trained on.

Inputs are per-example losses in nats (cross-entropy of the true label; a text chunk's mean
token loss): the target's, shape (n,), and the k reference models', shape (k, n).
``membership`` is 1 for a member of the target's training set (the positive class), 0 for a
held-out row. Every score is "higher = more member-like".

In attacker terms the section reads the scores exactly, from their sorted order (no grid of
thresholds): TPR at 0.1 % and 1 % FPR with the FPR each one realises, and the AUC, with
percentile bootstrap intervals over the scored rows. Its test of ε = 0 is O(1)'s guessing
game (:func:`panoramia.measure.real_nonmembers.o1_on_units`) played on pairs of one member
and one held-out row shown by a fair coin, so that its Bin(r, ½) null holds wherever the
split into members and held-out rows was drawn at random, whatever a model that never saw
the members makes of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from panoramia.measure.jsonable import number
from panoramia.measure.real_nonmembers import O1Result, o1_on_units
from panoramia.measure.roc import roc_intervals
from panoramia.measure.validation import check_membership, check_scores

OFFLINE_A = 0.3
"""RMIA's offline coefficient a: Pr(x) ≈ ((1 + a) · mean OUT Pr(x) + (1 − a)) / 2. Fixed at
ML Privacy Meter's default before any run (docs/SPEC.md §2.4); never tuned on an audit."""
ATTACK_FPRS = (0.001, 0.01)
"""The FPRs the section reads TPR at (members caught when 1 in 1,000 / 1 in 100 held-out rows
is wrongly flagged)."""
LIRA_MIN_PROBABILITY = 1e-12
"""The probabilities LiRA's logit scaling is clipped to (1e-12 … 1 − 1e-12)."""
ATTACKS = ("rmia", "lira", "loss")
"""The attacks on real rows, in the order the report lists them: the two reference attacks and
the plain loss attack (f's loss alone, no reference model: the yardstick of what the
references add). RMIA joins the verdict's decision where its split was drawn at random and
``audit.real_nonmembers.rmia_decides`` says so (docs/SPEC.md §3.1, level 8); LiRA and the
loss attack are figures."""


def _losses(target_loss: object, reference_losses: object) -> tuple[np.ndarray, np.ndarray]:
    target = check_scores(target_loss, name="target losses", n=np.asarray(target_loss).size)
    references = np.asarray(reference_losses, dtype=float)
    if references.ndim != 2 or references.shape[1] != target.size or references.shape[0] < 1:
        raise ValueError(
            f"reference losses: expected shape (k ≥ 1, {target.size}), got {references.shape}"
        )
    if not np.all(np.isfinite(references)):
        raise ValueError("reference losses: every value must be finite")
    return target, references


def rmia_offline_scores(
    target_loss: object, reference_losses: object, *, offline_a: float = OFFLINE_A
) -> np.ndarray:
    """RMIA's offline score as a log-likelihood ratio, shape (n,): ln Pr(x | f) − ln Pr(x),
    Pr(x | f) = exp(−loss_f(x)), Pr(x) = ((1 + a) · mean_j exp(−loss_j(x)) + (1 − a)) / 2
    over the OUT reference models j.

    RMIA's published score compares this ratio with that of population rows z and counts
    the share with ratio_x / ratio_z > γ; with one population shared by every x, that count is
    a non-decreasing function of ratio_x, so its ROC is this score's, coarsened to steps of
    1 / |Z| (``tests/measure/test_reference_attack.py`` checks it against the published
    formula). The score itself keeps every row's order."""
    if not 0.0 <= offline_a <= 1.0:
        raise ValueError(f"offline_a: {offline_a} is not in [0, 1]")
    target, references = _losses(target_loss, reference_losses)
    prior = (1.0 + offline_a) / 2.0 * np.exp(-references).mean(axis=0) + (1.0 - offline_a) / 2.0
    return np.asarray(-target - np.log(prior), dtype=float)


def _logit_confidence(loss: np.ndarray) -> np.ndarray:
    """LiRA's scaled confidence φ = ln(p / (1 − p)) with p = exp(−loss), clipped."""
    p = np.clip(np.exp(-loss), LIRA_MIN_PROBABILITY, 1.0 - LIRA_MIN_PROBABILITY)
    return np.asarray(np.log(p) - np.log1p(-p), dtype=float)


def lira_offline_scores(target_loss: object, reference_losses: object) -> np.ndarray:
    """LiRA's offline one-sided test statistic, shape (n,): (φ_f(x) − μ_OUT(x)) / σ_OUT, with
    μ_OUT(x) the mean of the reference models' φ on x and σ_OUT one global scale (LiRA's
    fixed variance, for few reference models): the root of the mean of the per-row sample
    variances (k ≥ 2; with one reference model, the spread of φ_ref − its mean over rows).
    Its p-value 1 − Φ(statistic) is a decreasing function of it."""
    target, references = _losses(target_loss, reference_losses)
    phi_target, phi = _logit_confidence(target), _logit_confidence(references)
    mu = phi.mean(axis=0)
    if phi.shape[0] >= 2:
        variance = float(phi.var(axis=0, ddof=1).mean())
    else:
        variance = float(np.var(phi[0] - mu.mean()))
    return np.asarray((phi_target - mu) / max(float(np.sqrt(variance)), 1e-12), dtype=float)


def loss_scores(target_loss: object) -> np.ndarray:
    """The plain loss attack's score, shape (n,): −loss_f(x) (a row the target fits better is
    more member-like; Yeom et al. 2018). It uses no reference model."""
    target = check_scores(target_loss, name="target losses", n=np.asarray(target_loss).size)
    return np.asarray(-target, dtype=float)


def tpr_at_fpr_exact(scores: object, membership: object, fpr: float) -> tuple[float, float]:
    """(TPR, realised FPR) of the rule "score ≥ τ" at the τ with the largest TPR whose FPR is
    at most ``fpr``, read from every distinct score (ties fall on one side together)."""
    labels = check_membership(membership)
    values = check_scores(scores, name="scores", n=labels.size)
    order = np.argsort(-values, kind="stable")
    ranked = values[order]
    ends = np.r_[np.flatnonzero(np.diff(ranked) != 0), values.size - 1]
    positives = np.cumsum(labels[order])[ends]
    negatives = np.cumsum(1 - labels[order])[ends]
    tpr = np.r_[0.0, positives / labels.sum()]
    realised = np.r_[0.0, negatives / (labels.size - labels.sum())]
    allowed = np.flatnonzero(realised <= fpr + 1e-12)
    best = allowed[-1]  # the curve only rises: the last allowed point has the largest TPR
    return float(tpr[best]), float(realised[best])


def auc_exact(scores: object, membership: object) -> float:
    """The Mann–Whitney AUC (ties count one half): the chance a member outscores a held-out
    row."""
    from scipy.stats import rankdata

    labels = check_membership(membership)
    values = check_scores(scores, name="scores", n=labels.size)
    ranks = rankdata(values)
    n_pos, n_neg = int(labels.sum()), int(labels.size - labels.sum())
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class ReferenceAttackResult:
    """One reference attack's figures on real rows (docs/SPEC.md §2.4).

    ``test``: O(1)'s game on fair-coin pairs of one member and one held-out row, its ε lower
    bound (nats) at the audit's confidence and its p-value of ε = 0; ``randomised`` says
    whether the audit drew the split (only then does RMIA's test join the verdict)."""

    attack: str
    """``rmia``, ``lira`` or ``loss``."""
    members: int
    """Members scored: every known member no reference model trained on."""
    nonmembers: int
    """Held-out rows scored: those no reference model trained on."""
    references: int
    """OUT reference models (the audit's stand-ins, or models of a tree target's recipe; 0
    for the loss attack, which uses none)."""
    auc: float
    auc_interval: tuple[float, float]
    tpr_at_fpr: dict[float, tuple[float, float] | None]
    """Per FPR asked: (TPR, the FPR it realises); None where fewer than one held-out row
    could be wrongly flagged at that rate (rate × held-out rows < 1)."""
    tpr_interval: dict[float, tuple[float, float] | None]
    """Per FPR asked: the TPR's interval (None where no held-out row could be flagged)."""
    interval_level: float
    test: O1Result
    offline_a: float | None = None
    """RMIA's a (None for LiRA)."""
    decides: bool = False
    """Whether its test joins the verdict's decision (``audit.real_nonmembers.rmia_decides``
    for RMIA; LiRA never does)."""

    @property
    def eps_lb(self) -> float:
        return self.test.eps_lb

    def to_dict(self) -> dict[str, object]:
        def pair(found: tuple[float, float] | None) -> list[object] | None:
            return None if found is None else [number(found[0]), number(found[1])]

        return {
            "attack": self.attack,
            "eps_lb": number(self.test.eps_lb),
            "p_value": number(self.test.p_value),
            "randomised": self.test.randomised,
            "members": self.members,
            "nonmembers": self.nonmembers,
            "references": self.references,
            "auc": number(self.auc),
            "auc_interval": pair(self.auc_interval),
            "tpr_at_fpr": {
                f"{rate:g}": None if found is None else number(found[0])
                for rate, found in self.tpr_at_fpr.items()
            },
            "realised_fpr": {
                f"{rate:g}": None if found is None else number(found[1])
                for rate, found in self.tpr_at_fpr.items()
            },
            "tpr_at_fpr_interval": {f"{rate:g}": pair(i) for rate, i in self.tpr_interval.items()},
            "interval_level": self.interval_level,
            "test": self.test.to_dict(),
            "decides": self.decides,
            **({} if self.offline_a is None else {"offline_a": self.offline_a}),
        }


def reference_attack(
    attack: str,
    target_loss: object,
    reference_losses: object,
    membership: object,
    *,
    confidence: float = 0.95,
    randomised: bool = True,
    game_seed: int = 0,
    audit_seed: int = 0,
    draws: int = 999,
    level: float = 0.9,
    interval_seed: int = 0,
    offline_a: float = OFFLINE_A,
    decides: bool = False,
) -> ReferenceAttackResult:
    """Score ``attack`` (``rmia``, ``lira`` or ``loss``) on the rows and read its figures.

    ``target_loss`` (n,) and ``reference_losses`` (k, n): per-row losses in nats under the
    target and under k OUT reference models; ``membership`` (n,) 0/1, 1 = a member of the
    target's training set. ``game_seed`` draws the fair-coin pairs of the test,
    ``audit_seed`` breaks its ties, ``interval_seed`` drives the ``draws`` bootstrap draws
    of the intervals (``level`` coverage); ``decides``: its test joins the verdict's decision
    (RMIA only)."""
    labels = check_membership(membership)
    if attack == "rmia":
        scores = rmia_offline_scores(target_loss, reference_losses, offline_a=offline_a)
    elif attack == "lira":
        scores = lira_offline_scores(target_loss, reference_losses)
    elif attack == "loss":
        scores = loss_scores(target_loss)
    else:
        raise ValueError(f"attack: {attack!r} is not one of {', '.join(ATTACKS)}")
    if scores.size != labels.size:
        raise ValueError(f"membership: {labels.size} rows for {scores.size} scores")
    intervals = roc_intervals(
        scores, labels, fprs=ATTACK_FPRS, draws=draws, level=level, seed=interval_seed
    )
    test = o1_on_units(
        labels, -scores, game_seed=game_seed, audit_seed=audit_seed, confidence=confidence
    )
    return ReferenceAttackResult(
        attack=attack,
        members=int(labels.sum()),
        nonmembers=int(labels.size - labels.sum()),
        references=0 if attack == "loss" else int(np.asarray(reference_losses).shape[0]),
        auc=auc_exact(scores, labels),
        auc_interval=intervals.auc,
        tpr_at_fpr={
            rate: tpr_at_fpr_exact(scores, labels, rate)
            if rate * int(labels.size - labels.sum()) >= 1
            else None
            for rate in ATTACK_FPRS
        },
        tpr_interval=dict(intervals.tpr_at_fpr),
        interval_level=level,
        test=replace(test, randomised=randomised),
        offline_a=offline_a if attack == "rmia" else None,
        decides=decides and attack == "rmia",
    )
