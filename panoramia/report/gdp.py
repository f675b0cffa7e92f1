"""The report's ``gdp`` section (docs/SPEC.md §2.8): μ̃ read off the measurement's games by
:mod:`panoramia.measure.gdp`, with the claimed μ beside it. The mathematics stays in
``measure/``; this builds the document's section from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from panoramia.measure.gdp import gdp_bound, mu_lb
from panoramia.measure.jsonable import number

if TYPE_CHECKING:
    from panoramia.measure import Measurement, RmRnResult

MU_INTERPRETATION = (
    "μ̃ is not a lower bound on μ. The audit could not reject c-closeness of the generator for "
    "c = c_lb; if that is tight, the target cannot be μ-GDP for any μ below μ̃. With real "
    "non-members (RM;RN, c = 0) μ_lb is a lower bound on the μ of any GDP guarantee the "
    "target has, as far as the held-out split stands in for random inclusion."
)


def gdp_section(
    measurement: Measurement, rmrn_result: RmRnResult | None, *, claimed_mu: float | None
) -> dict[str, object]:
    """The report's ``gdp`` section (docs/SPEC.md §2.8): μ̃ of the paper's game at c_lb, its
    reach ``mu_tilde_max`` (μ̃ if every member of the audit set were guessed and no other
    slot), RM;RN's μ_lb at c = 0 (when real non-members exist), the claimed μ (None without a GDP
    reading of the claim) and whether each exceeds it. ``measurement`` is a
    :class:`~panoramia.measure.Measurement`, ``rmrn_result`` an ``RmRnResult``. Relaxed tests
    (γ or δ > 0) and ``split:f`` (whose table is not the tested set) are skipped."""
    if measurement.gamma > 0 or measurement.delta > 0:
        return {"skipped": "μ̃ has only the exact test (γ = δ = 0)"}
    if measurement.strategy.kind == "split":
        return {"skipped": "μ̃ needs every threshold counted on the tested set (not split:f)"}
    table = measurement.attack.table
    attack = gdp_bound(
        table.tau, table.r, table.v, m=measurement.m, alpha=measurement.alpha_per_test,
        c=measurement.c_lb,
    )  # fmt: skip
    reference = None
    if rmrn_result is not None and rmrn_result.delta == 0:
        ref_table, roc = rmrn_result.attack.table, rmrn_result.attack.roc
        reference = gdp_bound(
            ref_table.tau, ref_table.r, ref_table.v, m=int(roc.n_positive + roc.n_negative),
            alpha=rmrn_result.alpha, c=0.0,
        )  # fmt: skip
    members = int(measurement.attack.roc.n_positive)
    reach = mu_lb(
        np.array([members]), np.array([members]), m=measurement.m,
        alpha=measurement.alpha_per_test, c=measurement.c_lb,
    )  # fmt: skip
    section: dict[str, object] = {
        "game": "one-sided",
        "mu_tilde": number(attack.mu_lb),
        "mu_tilde_max": number(float(reach[0])),
        "attack": attack.to_dict(),
        "rmrn": None if reference is None else reference.to_dict(),
        "claimed_mu": None if claimed_mu is None else number(claimed_mu),
        "interpretation": MU_INTERPRETATION,
    }
    if claimed_mu is not None:
        section["mu_tilde_above_claim"] = attack.mu_lb > claimed_mu
        section["rmrn_above_claim"] = reference is not None and reference.mu_lb > claimed_mu
    return section
