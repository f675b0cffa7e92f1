"""DP-SGD accounting: the connect-the-dots PLD of the declared run, and the RDP ε.

The PLD (``dp_accounting``, pessimistic connect-the-dots discretisation) is the tight
numerical account of Poisson-subsampled Gaussian steps; ε(δ), the trade-off curve, μ* and
the advantage all come from it. The RDP ε is computed only because papers usually print
it: it is an upper bound that is looser than the PLD's, and reports label it so.
"""

from __future__ import annotations

import numpy as np

from panoramia.accounting.claims import DpSgdClaim

PLD_GRID = 1e-4
"""Discretisation interval of the privacy-loss grid (``value_discretization_interval``)."""
RDP_ORDERS = tuple(np.r_[np.linspace(1.01, 10.0, 600), np.geomspace(10.0, 1024.0, 400)[1:]])
"""Orders α of the RDP account; dense, since a coarse grid moves the second decimal of ε."""


def _relation(claim: DpSgdClaim) -> object:
    from dp_accounting import NeighboringRelation

    return {
        "add_remove": NeighboringRelation.ADD_OR_REMOVE_ONE,
        "replace_one": NeighboringRelation.REPLACE_ONE,
    }[claim.neighbouring]


def dpsgd_pld(claim: DpSgdClaim, *, grid: float = PLD_GRID) -> object:
    """The privacy-loss distribution of the whole declared run (phases composed in order)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

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


def _rdp_accountant(claim: DpSgdClaim) -> object | None:
    """``dp_accounting``'s RDP accountant with the declared run composed in; None where it has
    no bound (Poisson sampling, replace-one)."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

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
