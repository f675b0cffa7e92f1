"""One claim → the numbers a report shows beside the audit (ISSUE: claimed guarantee).

``summarize_claim(claim)`` returns a :class:`ClaimSummary`:
- DP-SGD: ε(δ) from the PLD at δ ∈ {1e-5, 1e-6, 1/N}, the RDP ε at the same δs (labelled),
  the symmetrised trade-off curve f, μ* and its regret Δ with the Tier I / II verdict, the
  Tier II table of f, the advantage η = δ(0), and TPR ceilings 1 − f(α);
- a bare (ε, δ): f_{ε,δ} only; no μ follows from it (a "Gaussian-equivalent μ", the μ of the
  Gaussian mechanism with the same advantage, is shown as an aside and labelled so);
- no claim: nothing;
- a claim with ``tuning`` (K runs tried, the best released): the above describe one run, and
  ``tuned`` holds, at each δ, the single-run ε, every bound on the tuned ε and the certified
  tuned ε (:mod:`~panoramia.accounting.tuning`). The released model is then only as private
  as the tuned ε: the curve to check an audit against (``check_curve``) is max_δ f_{ε_tuned,δ}.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from panoramia.accounting.claims import Claim, DpSgdClaim, EpsDeltaClaim, NoClaim
from panoramia.accounting.tradeoff import (
    CEILING_ALPHAS,
    TIER_I_REGRET,
    TradeoffCurve,
    curve_from_profile,
    eps_delta_curve,
    eps_delta_tradeoff,
    kairouz_advantage,
    mu_for_advantage,
    symmetric_curve_from_pld,
)
from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    from panoramia.accounting.tuning import TunedGuaranteeDict

TUNED_PROFILE_EPSILONS = np.r_[0.0, np.geomspace(1e-3, 30.0, 300)]
"""ε grid of a tuned claim's certified profile (every point is a valid (ε, δ(ε)) guarantee)."""
DELTAS = (1e-5, 1e-6)
"""δs at which ε is always reported; 1/N is added when the claim declares N."""


@dataclass
class ClaimSummary:
    """What a claim guarantees, as numbers. FPR α / FNR β, member = positive class."""

    claim: JSONDict
    curve: TradeoffCurve | None
    """The claim's symmetric trade-off curve (None without a claim)."""
    epsilons: dict[str, float] = field(default_factory=dict)
    """δ (printed) → ε of the tight (PLD, or declared) account."""
    rdp_epsilons: dict[str, float] | None = None
    """δ → ε via RDP (what papers usually print; looser). DP-SGD only."""
    mu: float | None = None
    """μ* = the smallest μ with f_μ ≤ f (DP-SGD only)."""
    regret: float | None = None
    tier: str | None = None
    """'I' (Δ < 0.01: μ* describes f) or 'II' (report the table of f instead)."""
    tier_table: dict[str, float] = field(default_factory=dict)
    advantage: float | None = None
    """η = max(TPR − FPR) any attack can reach; maximal attack accuracy is (1 + η)/2."""
    tpr_ceilings: dict[str, float] = field(default_factory=dict)
    """α (printed) → 1 − f(α), the highest TPR at FPR α."""
    gaussian_equivalent_mu: float | None = None
    """Bare (ε, δ) only: μ of the Gaussian mechanism with the same advantage — an aside,
    not a guarantee (f_{ε,δ} is not a GDP curve)."""
    tuned: list[TunedGuaranteeDict] | None = None
    """One :class:`~panoramia.accounting.tuning.TunedGuarantee` dict per δ (tuned claims)."""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tuned_curve: TradeoffCurve | None = field(default=None, repr=False)
    """Tuned claims: the curve of the certified tuned privacy profile."""
    pld: PrivacyLossDistribution | None = field(default=None, repr=False)
    """The DP-SGD run's ``dp_accounting`` PLD (in memory only)."""

    @property
    def check_curve(self) -> TradeoffCurve | None:
        """The curve the released model satisfies: the claim's, or for a tuned claim the
        certified tuned profile's (the run's curve is not one), tightened by f_{ε,δ} at each
        tuned (ε, δ)."""
        if self.tuned_curve is None:
            return self.curve
        assert self.tuned is not None  # set with tuned_curve (see _add_tuned)
        alphas = self.tuned_curve.alphas
        betas = np.max(
            [self.tuned_curve.betas,
             *(eps_delta_tradeoff(alphas, t["tuned_epsilon"], t["delta"]) for t in self.tuned)],
            axis=0,
        )  # fmt: skip
        return TradeoffCurve(alphas, betas)

    def to_dict(self) -> JSONDict:
        curve = self.curve.downsampled() if self.curve is not None else None
        return {
            "claim": self.claim,
            "epsilons": self.epsilons,
            "rdp_epsilons": self.rdp_epsilons,
            "mu": self.mu,
            "regret": self.regret,
            "tier": self.tier,
            "tier_table": self.tier_table,
            "advantage": self.advantage,
            "max_attack_accuracy": None if self.advantage is None else (1 + self.advantage) / 2,
            "tpr_ceilings": self.tpr_ceilings,
            "gaussian_equivalent_mu": self.gaussian_equivalent_mu,
            "curve": None if curve is None else
            {"fpr": curve.alphas.tolist(), "fnr": curve.betas.tolist()},
            "tuned": self.tuned,
            "notes": self.notes,
            "seconds": self.seconds,
        }  # fmt: skip


def _printed(value: float) -> str:
    """A δ or an FPR as a JSON key (3 significant digits)."""
    return f"{value:.3g}"


def _ceilings(curve: TradeoffCurve) -> dict[str, float]:
    return {_printed(a): float(1.0 - curve(a)) for a in CEILING_ALPHAS}


def summarize_claim(claim: Claim, *, extra_deltas: tuple[float, ...] = ()) -> ClaimSummary:
    """The numbers of ``claim`` (``extra_deltas``: more δs for a DP-SGD claim's ε); DP-SGD
    takes a few seconds for 10⁴ steps (PLD + RDP)."""
    start = time.perf_counter()
    if isinstance(claim, DpSgdClaim):
        summary = _summarize_dpsgd(claim, extra_deltas)
    elif isinstance(claim, EpsDeltaClaim):
        summary = _summarize_eps_delta(claim)
    else:
        summary = ClaimSummary(claim.to_dict(), None, notes=["no guarantee declared"])
    if not isinstance(claim, NoClaim) and claim.tuning is not None:
        _add_tuned(summary, claim)
    summary.seconds = round(time.perf_counter() - start, 3)
    return summary


def _summarize_dpsgd(claim: DpSgdClaim, extra_deltas: tuple[float, ...]) -> ClaimSummary:
    from panoramia.accounting.dpsgd import dpsgd_pld, rdp_epsilons

    deltas = list(DELTAS)
    if claim.dataset_size is not None:
        deltas.append(1.0 / claim.dataset_size)
    for delta in extra_deltas:
        if not 0 < delta < 1:
            raise InputError(f"claim: δ must be in (0, 1), got {delta}")
    deltas = sorted(set(deltas) | set(extra_deltas), reverse=True)
    pld = dpsgd_pld(claim)
    curve = symmetric_curve_from_pld(pld)
    mu = curve.mu_star()
    regret = curve.regret(mu)
    rdp = rdp_epsilons(claim, deltas)
    notes = []
    if rdp is None:
        notes.append("no RDP ε: dp_accounting's RDP has no bound for Poisson + replace-one")
    return ClaimSummary(
        claim=claim.to_dict(),
        curve=curve,
        epsilons={_printed(d): float(pld.get_epsilon_for_delta(d)) for d in deltas},
        rdp_epsilons=None if rdp is None else dict(zip(map(_printed, deltas), rdp, strict=True)),
        mu=mu,
        regret=regret,
        tier="I" if regret < TIER_I_REGRET else "II",
        tier_table=curve.tier_table(),
        advantage=float(pld.get_delta_for_epsilon(0.0)),
        tpr_ceilings=_ceilings(curve),
        notes=notes,
        pld=pld,
    )


def _add_tuned(summary: ClaimSummary, claim: DpSgdClaim | EpsDeltaClaim) -> None:
    from panoramia.accounting.tuning import run_privacy_from_claim, tuned_guarantee, tuned_profile

    assert claim.tuning is not None  # the caller's condition
    base = run_privacy_from_claim(claim, pld=summary.pld, mu=summary.mu)
    deltas = [float(d) for d in summary.epsilons if float(d) > 0] or list(DELTAS)
    summary.tuned = [tuned_guarantee(base, claim.tuning, d).to_dict() for d in deltas]
    alphas = np.unique(np.r_[0.0, np.geomspace(1e-8, 1.0, 600)])
    summary.tuned_curve = curve_from_profile(
        alphas, TUNED_PROFILE_EPSILONS, tuned_profile(base, claim.tuning, TUNED_PROFILE_EPSILONS)
    )
    summary.notes.append(
        f"the released model is the best of {claim.tuning.describe()}: ε, μ*, the curve and "
        "the ceilings above describe one run; the tuned ε is what the model satisfies"
    )


def _summarize_eps_delta(claim: EpsDeltaClaim) -> ClaimSummary:
    curve = eps_delta_curve(claim.epsilon, claim.delta)
    advantage = kairouz_advantage(claim.epsilon, claim.delta)
    return ClaimSummary(
        claim=claim.to_dict(),
        curve=curve,
        epsilons={_printed(claim.delta): claim.epsilon},
        tier_table=curve.tier_table(),
        advantage=advantage,
        tpr_ceilings=_ceilings(curve),
        gaussian_equivalent_mu=mu_for_advantage(min(advantage, 1 - 1e-12)),
        notes=[
            "a bare (ε, δ) determines f_{ε,δ} only; no GDP μ follows from it "
            "(the Gaussian-equivalent μ is an aside: the Gaussian mechanism with the same "
            "advantage)"
        ],
    )
