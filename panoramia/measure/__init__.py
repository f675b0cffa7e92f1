"""The PANORAMIA measurement engine (docs/SPEC.md §2): exact, vectorised, no deep-learning imports.

Scores are numpy vectors with member = 1 (the positive class) and higher = more member-like.

>>> from panoramia.measure import measure
>>> result = measure(membership, baseline_scores=b, attack_scores=a, thresholds="grid:100")
>>> result.c_lb, result.c_plus_eps_lb, result.eps_tilde
"""

from panoramia.measure.aggregate import Aggregate, aggregate
from panoramia.measure.bounds import (
    max_precision_allowed,
    rejects,
    saturation_ceiling,
    theta_lb,
)
from panoramia.measure.measurement import INTERPRETATION, Measurement, measure
from panoramia.measure.real_nonmembers import O1Result, RmRnResult, o1_audit, rmrn
from panoramia.measure.relaxed import attack_slack, relaxed_p_value, relaxed_theta_lb
from panoramia.measure.roc import RocSummary, roc_summary
from panoramia.measure.sweep import (
    OperatingPoint,
    SweepResult,
    ThresholdTable,
    argmax_theta_lb,
    sweep,
)
from panoramia.measure.thresholds import ThresholdStrategy

__all__ = [
    "INTERPRETATION",
    "Aggregate",
    "Measurement",
    "O1Result",
    "OperatingPoint",
    "RmRnResult",
    "RocSummary",
    "SweepResult",
    "ThresholdStrategy",
    "ThresholdTable",
    "aggregate",
    "argmax_theta_lb",
    "attack_slack",
    "max_precision_allowed",
    "measure",
    "o1_audit",
    "rejects",
    "relaxed_p_value",
    "relaxed_theta_lb",
    "rmrn",
    "roc_summary",
    "saturation_ceiling",
    "sweep",
    "theta_lb",
]
