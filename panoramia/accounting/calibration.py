"""Noise calibration to an attack-risk target (seed 003): the DP-SGD noise multiplier σ at
which no membership attack exceeds a given advantage, or a given TPR at a given FPR.

The advantage search is ``riskcal``'s, the TPR search a bisection here (both on σ over the
connect-the-dots PLD); the result is then re-accounted here, so the reported advantage,
TPR and ε are those of the returned σ.
"""

from __future__ import annotations

from dataclasses import dataclass

from panoramia.accounting.claims import DpSgdClaim
from panoramia.errors import InputError

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

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def _riskcal_sigma_for_advantage(advantage: float, sample_rate: float, steps: int) -> float:
    from riskcal.calibration import CalibrationConfig, CalibrationTarget, calibrate_parameter
    from riskcal.calibration.dpsgd import create_dpsgd_evaluator

    evaluator = create_dpsgd_evaluator(sample_rate=sample_rate, num_steps=steps)
    target = CalibrationTarget(kind="advantage", advantage=advantage)
    config = CalibrationConfig(
        param_min=NOISE_RANGE[0], param_max=NOISE_RANGE[1], target_tol=1e-3, increasing=False
    )  # more noise, less advantage
    try:
        return float(calibrate_parameter(evaluator, target, config).parameter_value)
    except (ValueError, RuntimeError) as error:
        raise InputError(f"calibrate: no σ in {NOISE_RANGE} meets the target ({error})") from None


def _sigma_for_tpr(tpr: float, fpr: float, sample_rate: float, steps: int) -> float:
    """Smallest σ (to a relative 1e-3, rounded up) with 1 − f_σ(fpr) ≤ tpr, by bisection on
    log σ over the PLD curve, faster here than riskcal's error-rate evaluator (measured
    figures: docs/RESULTS.md §8)."""
    from panoramia.accounting.dpsgd import dpsgd_pld
    from panoramia.accounting.tradeoff import symmetric_curve_from_pld

    def reached_tpr(sigma: float) -> float:
        claim = DpSgdClaim.single_phase(sigma, sample_rate=sample_rate, steps=steps)
        return float(1.0 - symmetric_curve_from_pld(dpsgd_pld(claim))(fpr))

    low, high = NOISE_RANGE
    if reached_tpr(high) > tpr:
        raise InputError(f"calibrate: no σ ≤ {high} keeps TPR ≤ {tpr} at FPR {fpr}")
    if reached_tpr(low) <= tpr:
        return low
    while high / low > 1.001:
        middle = (low * high) ** 0.5
        low, high = (low, middle) if reached_tpr(middle) <= tpr else (middle, high)
    return high


def calibrate_dpsgd(
    *,
    sample_rate: float,
    steps: int,
    target_advantage: float | None = None,
    target_tpr: float | None = None,
    at_fpr: float | None = None,
    delta: float = 1e-5,
) -> Calibration:
    """σ such that the advantage is ≤ ``target_advantage``, or TPR ≤ ``target_tpr`` at FPR
    ``at_fpr`` (exactly one target), for Poisson rate q and T steps (add/remove)."""

    from panoramia.accounting.dpsgd import dpsgd_pld
    from panoramia.accounting.tradeoff import symmetric_curve_from_pld

    DpSgdClaim.single_phase(1.0, sample_rate=sample_rate, steps=steps)  # validates q and T
    if (target_advantage is None) == (target_tpr is None):
        raise InputError("calibrate: give exactly one of --target-advantage and --target-tpr")
    if target_advantage is not None:
        if not 0 < target_advantage < 1:
            raise InputError(
                f"calibrate: target advantage must be in (0, 1), got {target_advantage}"
            )
        sigma = _riskcal_sigma_for_advantage(target_advantage, sample_rate, steps)
    else:
        if at_fpr is None or not 0 < at_fpr < 1:
            raise InputError(f"calibrate: --at-fpr must be in (0, 1), got {at_fpr}")
        if not at_fpr < target_tpr < 1:  # type: ignore[operator]
            raise InputError(
                f"calibrate: target TPR must be in (FPR, 1) = ({at_fpr}, 1), got {target_tpr}"
            )
        sigma = _sigma_for_tpr(target_tpr, at_fpr, sample_rate, steps)  # type: ignore[arg-type]
    claim = DpSgdClaim.single_phase(sigma, sample_rate=sample_rate, steps=steps)
    pld = dpsgd_pld(claim)
    tpr = None
    if at_fpr is not None:
        tpr = float(1.0 - symmetric_curve_from_pld(pld)(at_fpr))
    return Calibration(
        noise_multiplier=sigma,
        advantage=float(pld.get_delta_for_epsilon(0.0)),
        tpr_at_fpr=tpr,
        epsilon=float(pld.get_epsilon_for_delta(delta)),
        delta=delta,
    )
