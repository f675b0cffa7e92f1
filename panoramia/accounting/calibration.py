"""Noise calibration to an attack-risk target: the DP-SGD noise multiplier σ at which no
membership attack exceeds a given advantage, or a given TPR at a given FPR (Kulynych et al.,
"Attack-aware noise calibration").

Both searches run on σ over the connect-the-dots PLD (the TPR with ``riskcal``'s trade-off,
``get_beta_from_pld``, as its ``get_beta_for_dpsgd``; the advantage as δ(ε = 0)): each starts
from the central-limit (μ-GDP) approximation of DP-SGD, brackets the answer with the exact
PLD and stops when the bracket is 1 % wide, returning its upper end (a σ that meets the
target, at most 1 % above the smallest). A σ whose privacy loss is too wide to account
counts as not meeting it. The result is then re-accounted here,
so the reported advantage, TPR and ε are those of the returned σ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from panoramia.accounting.claims import DpSgdClaim
from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

NOISE_RANGE = (0.1, 50.0)
"""Range of σ searched; a target outside what this range reaches is an error."""


@dataclass(frozen=True)
class Calibration:
    noise_multiplier: float
    """σ meeting the target (the smallest one found, to riskcal's tolerance)."""
    advantage: float
    """η of DP-SGD at σ (max TPR − FPR of any attack)."""
    tpr_at_fpr: float | None
    """1 − f(at_fpr) at σ, for a TPR target."""
    epsilon: float
    """ε at ``delta`` (PLD) that σ implies."""
    delta: float

    def to_dict(self) -> JSONDict:
        return self.__dict__.copy()


TIGHTNESS = 1.01
"""The TPR search stops when its bracket [low, high] has high / low ≤ this."""


def _clt_sigma(mu: float, sample_rate: float, steps: int) -> float:
    """σ at which the μ-GDP approximation of DP-SGD, μ = q·√(T·(e^{1/σ²} − 1)), equals
    ``mu``: a starting point for the exact search."""
    ratio = (mu / sample_rate) ** 2 / steps  # = e^{1/σ²} − 1
    if ratio <= 0:
        return NOISE_RANGE[1]
    sigma = 1.0 / math.sqrt(math.log1p(ratio))
    return min(max(sigma, NOISE_RANGE[0]), NOISE_RANGE[1])


@functools.lru_cache(maxsize=4)
def _single_phase_pld(sigma: float, sample_rate: float, steps: int) -> PrivacyLossDistribution:
    """The PLD of T steps at σ and rate q. The last four are kept for the length of one
    :func:`calibrate_dpsgd` (which clears them; ~10 MB each at a small σ), so that the σ its
    search returns is mostly not accounted a second time for the result (seconds each for a
    small σ); a σ no longer kept is accounted again, to the same PLD."""
    from panoramia.accounting.dpsgd import dpsgd_pld

    return dpsgd_pld(DpSgdClaim.single_phase(sigma, sample_rate=sample_rate, steps=steps))


def _smallest_sigma(
    risk_at: Callable[[PrivacyLossDistribution], float],
    target: float,
    guess: float,
    sample_rate: float,
    steps: int,
    describe: Callable[[float, float], str],
    progress: Callable[[str], None] | None = None,
) -> float:
    """The smallest σ (to :data:`TIGHTNESS`, rounded up) whose PLD has ``risk_at(pld)`` ≤
    ``target`` (a risk in (0, 1) that falls as σ grows): a bracket around ``guess``, then
    regula falsi on logit(risk) against log σ (smooth and monotone), each estimate tested
    just above and just below so that the bracket closes."""

    def gap(sigma: float) -> float:
        """logit(risk at σ) − logit(target): ≤ 0 where σ meets the target."""
        try:
            pld = _single_phase_pld(sigma, sample_rate, steps)
        except InputError:  # the loss spans more than is accounted: far too little noise
            return math.inf
        risk = min(max(float(risk_at(pld)), 1e-12), 1 - 1e-12)
        if progress is not None:
            progress(describe(sigma, risk))
        return math.log(risk / (1 - risk)) - math.log(target / (1 - target))

    low_end, high_end = NOISE_RANGE
    found = gap(guess)
    if found <= 0:  # meets: look below
        high, high_gap, low, low_gap = guess, found, guess, found
        while low_gap <= 0:
            if low <= low_end:
                return low_end
            high, high_gap = low, low_gap
            low = max(low / 1.2, low_end)
            low_gap = gap(low)
    else:  # fails: look above
        low, low_gap, high, high_gap = guess, found, guess, found
        while high_gap > 0:
            if high >= high_end:
                raise InputError(f"calibrate: no σ ≤ {high_end} meets the target {target:g}")
            low, low_gap = high, high_gap
            high = min(high * 1.2, high_end)
            high_gap = gap(high)
    while high / low > TIGHTNESS:
        if math.isfinite(low_gap):  # interpolate log σ where the gap crosses 0
            share = low_gap / (low_gap - high_gap)
            estimate = math.exp(math.log(low) + share * (math.log(high) - math.log(low)))
        else:
            estimate = math.sqrt(low * high)
        above = min(estimate * TIGHTNESS**0.5, high)  # test just above, then just below
        for sigma in (above, above / TIGHTNESS):
            if not low < sigma < high:
                continue
            value = gap(sigma)
            if value <= 0:
                high, high_gap = sigma, value
            else:
                low, low_gap = sigma, value
            if high / low <= TIGHTNESS:
                break
    return high


def _sigma_for_tpr(
    tpr: float,
    fpr: float,
    sample_rate: float,
    steps: int,
    progress: Callable[[str], None] | None = None,
) -> float:
    """The smallest σ (to :data:`TIGHTNESS`) with 1 − β_σ(fpr) ≤ tpr (riskcal's β)."""
    from riskcal.analysis import get_beta_from_pld
    from scipy.special import ndtri

    guess = _clt_sigma(float(ndtri(tpr) - ndtri(fpr)), sample_rate, steps)
    return _smallest_sigma(
        lambda pld: 1.0 - float(get_beta_from_pld(pld, alpha=fpr)), tpr, guess, sample_rate,
        steps, lambda sigma, risk: f"σ = {sigma:.4f}: TPR {risk:.4f} at FPR {fpr:g}", progress,
    )  # fmt: skip


def _sigma_for_advantage(
    advantage: float,
    sample_rate: float,
    steps: int,
    progress: Callable[[str], None] | None = None,
) -> float:
    """The smallest σ (to :data:`TIGHTNESS`) whose advantage η = δ(ε = 0) is ≤ ``advantage``
    (μ-GDP's η = 2Φ(μ/2) − 1 gives the starting point)."""
    from scipy.special import ndtri

    guess = _clt_sigma(2.0 * float(ndtri((1.0 + advantage) / 2.0)), sample_rate, steps)
    return _smallest_sigma(
        lambda pld: pld.get_delta_for_epsilon(0.0), advantage, guess, sample_rate, steps,
        lambda sigma, risk: f"σ = {sigma:.4f}: advantage {risk:.4f}", progress,
    )  # fmt: skip


def calibrate_dpsgd(
    *,
    sample_rate: float,
    steps: int,
    target_advantage: float | None = None,
    target_tpr: float | None = None,
    at_fpr: float | None = None,
    delta: float = 1e-5,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """σ such that the advantage is ≤ ``target_advantage``, or TPR ≤ ``target_tpr`` at FPR
    ``at_fpr`` (exactly one target), for Poisson rate q and T steps (add/remove);
    ``progress`` receives a line per σ tried by the TPR search."""

    DpSgdClaim.single_phase(1.0, sample_rate=sample_rate, steps=steps)  # validates q and T
    if (target_advantage is None) == (target_tpr is None):
        raise InputError("calibrate: give exactly one of --target-advantage and --target-tpr")
    if target_advantage is not None and not 0 < target_advantage < 1:
        raise InputError(f"calibrate: target advantage must be in (0, 1), got {target_advantage}")
    if target_tpr is not None:
        if at_fpr is None or not 0 < at_fpr < 1:
            raise InputError(f"calibrate: --at-fpr must be in (0, 1), got {at_fpr}")
        if not at_fpr < target_tpr < 1:
            raise InputError(
                f"calibrate: target TPR must be in (FPR, 1) = ({at_fpr}, 1), got {target_tpr}"
            )
    try:  # the search's PLDs are kept (_single_phase_pld) until the result is accounted
        if target_advantage is not None:
            sigma = _sigma_for_advantage(target_advantage, sample_rate, steps, progress)
        else:
            # exactly one target is given, and a TPR target comes with its FPR (checked above)
            target, fpr = cast(float, target_tpr), cast(float, at_fpr)
            sigma = _sigma_for_tpr(target, fpr, sample_rate, steps, progress)
        pld = _single_phase_pld(sigma, sample_rate, steps)
        tpr = None
        if at_fpr is not None:
            from riskcal.analysis import get_beta_from_pld

            tpr = float(1.0 - get_beta_from_pld(pld, alpha=at_fpr))
        return Calibration(
            noise_multiplier=sigma,
            advantage=float(pld.get_delta_for_epsilon(0.0)),
            tpr_at_fpr=tpr,
            epsilon=float(pld.get_epsilon_for_delta(delta)),
            delta=delta,
        )
    finally:
        _single_phase_pld.cache_clear()
