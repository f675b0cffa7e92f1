"""DP-SGD accounting: the connect-the-dots PLD of the declared run, and the RDP ε.

The PLD (``dp_accounting``, pessimistic connect-the-dots discretisation) is the tight
numerical account of Poisson-subsampled Gaussian steps; ε(δ), the trade-off curve, μ* and
the advantage all come from it. The RDP ε is computed only because papers usually print
it: it is an upper bound that is looser than the PLD's, and reports label it so.

Both accounts refuse (:class:`InputError`, one line) a claim outside :func:`check_accountable`'s
limits, before allocating anything: the PLD's memory grows with the span of the privacy loss
(1/σ² for one step, the number of steps times the loss per step for the run), and tiny σ or
huge T ask for more memory than any machine has (measured figures: docs/RESULTS.md §8).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from panoramia.accounting.claims import DpSgdClaim
from panoramia.errors import InputError

if TYPE_CHECKING:
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
    from dp_accounting.rdp import RdpAccountant

PLD_GRID = 1e-4
"""Discretisation interval of the privacy-loss grid (``value_discretization_interval``)."""
RDP_ORDERS = tuple(np.r_[np.linspace(1.01, 10.0, 600), np.geomspace(10.0, 1024.0, 400)[1:]])
"""Orders α of the RDP account; dense, since a coarse grid moves the second decimal of ε."""
NOISE_MULTIPLIER_RANGE = (0.1, 1e4)
"""Accounted σ. Below 0.1 a claim is vacuous (one full-batch step at σ = 0.1 is already
ε ≈ 92 at δ = 10⁻⁵) and one step's loss grid grows as 1/σ²; above 10⁴ the noise drowns any
gradient (ε < 10⁻⁴ per full-batch step) and the RDP series stops converging. Measured
figures: docs/RESULTS.md §8."""
MAX_STEPS = 10**9
"""Most accounted steps T per phase: beyond any training run."""
MAX_LOSS_SPAN = 1000.0
"""Largest estimated span of the run's privacy loss (nats; :func:`loss_span`): 10⁷ points of
the 10⁻⁴ grid (its cost: docs/RESULTS.md §8). A run beyond it has ε in the hundreds
or more, a guarantee that bounds no attack (σ = 1, q = 0.01, T = 10⁷: span ≈ 860 nats,
ε ≈ 1000)."""


def loss_span(claim: DpSgdClaim) -> float:
    """Estimated span (nats) of the privacy loss the PLD must cover, summed over the phases.

    Per phase, the larger of one step's span, 1/(2σ²) + 10/σ (the Gaussian loss over ±10σ,
    what ``dp_accounting`` keeps of the tails), and T times the expected loss of a step, its KL
    divergence, which is at most q/(2σ²) (convexity) and about q²(e^{1/σ²} − 1)/2 for small q.
    An estimate, not a bound: heavy-tailed steps (σ near 0.1) span up to ~2.5 times more.
    """
    span = 0.0
    for phase in claim.phases:
        sigma, q = phase.noise_multiplier, phase.sample_rate
        one_step = 0.5 / sigma / sigma + 10.0 / sigma
        kl = q * min(0.5 / sigma / sigma, q * math.expm1(min(1.0 / sigma / sigma, 700.0)) / 2)
        span += max(one_step, phase.steps * kl)
    return span


def check_accountable(claim: DpSgdClaim) -> None:
    """Raise InputError (one line, naming the parameter) unless every phase has σ in
    :data:`NOISE_MULTIPLIER_RANGE` and at most :data:`MAX_STEPS` steps, and the run's
    :func:`loss_span` is at most :data:`MAX_LOSS_SPAN`."""
    low, high = NOISE_MULTIPLIER_RANGE
    for phase in claim.phases:
        if not low <= phase.noise_multiplier <= high:
            raise InputError(
                f"claim: noise multiplier σ = {phase.noise_multiplier:g} is outside the "
                f"accounted range [{low:g}, {high:g}]"
            )
        if phase.steps > MAX_STEPS:
            raise InputError(
                f"claim: {phase.steps} steps T is more than the {MAX_STEPS:,} accounted"
            )
    span = loss_span(claim)
    if span > MAX_LOSS_SPAN:
        described = "; ".join(
            f"σ = {p.noise_multiplier:g}, q = {p.sample_rate:g}, T = {p.steps}"
            for p in claim.phases
        )
        raise InputError(
            f"claim: {described}: the privacy loss spans ≈ {span:.3g} nats, over the "
            f"{MAX_LOSS_SPAN:g} accounted (ε in the hundreds or more: a vacuous guarantee)"
        )


def _relation(claim: DpSgdClaim) -> NeighboringRelation:
    from dp_accounting import NeighboringRelation

    return {
        "add_remove": NeighboringRelation.ADD_OR_REMOVE_ONE,
        "replace_one": NeighboringRelation.REPLACE_ONE,
    }[claim.neighbouring]


def dpsgd_pld(claim: DpSgdClaim, *, grid: float = PLD_GRID) -> PrivacyLossDistribution:
    """The privacy-loss distribution of the whole declared run (phases composed in order);
    InputError for a claim outside :func:`check_accountable`'s limits."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    check_accountable(claim)

    total = None
    for phase in claim.phases:
        step = pld_lib.from_gaussian_mechanism(
            standard_deviation=phase.noise_multiplier,
            sampling_prob=phase.sample_rate,
            use_connect_dots=True,
            value_discretization_interval=grid,
            neighboring_relation=_relation(claim),
        )
        run = step.self_compose(phase.steps)
        total = run if total is None else total.compose(run)
    return total


def _rdp_accountant(claim: DpSgdClaim) -> RdpAccountant | None:
    """``dp_accounting``'s RDP accountant with the declared run composed in; None where it has
    no bound (Poisson sampling, replace-one)."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    check_accountable(claim)
    accountant = RdpAccountant(list(RDP_ORDERS), _relation(claim))
    for phase in claim.phases:
        event = dp_accounting.PoissonSampledDpEvent(
            phase.sample_rate, dp_accounting.GaussianDpEvent(phase.noise_multiplier)
        )
        composed = dp_accounting.SelfComposedDpEvent(event, phase.steps)
        if not accountant.supports(composed):
            return None
        accountant.compose(composed)
    return accountant


def rdp_curve(claim: DpSgdClaim) -> np.ndarray | None:
    """The run's RDP ε(α) at ``RDP_ORDERS``, shape (len(RDP_ORDERS),); None where unknown."""
    accountant = _rdp_accountant(claim)
    return None if accountant is None else np.asarray(accountant.rdp, dtype=float)


def rdp_epsilons(claim: DpSgdClaim, deltas: list[float]) -> list[float] | None:
    """ε at each of ``deltas`` from the RDP account (upper bounds, looser than the PLD's); None
    where ``dp_accounting``'s RDP accountant has no bound (Poisson sampling, replace-one)."""
    accountant = _rdp_accountant(claim)
    if accountant is None:
        return None
    return [float(accountant.get_epsilon(delta)) for delta in deltas]
