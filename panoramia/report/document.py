"""The report document (``report.json``, schema version :data:`SCHEMA_VERSION`).

Top level: ``c_lb``, ``c_plus_eps_lb``, ``eps_tilde``, ``confidence``, ``m``, ``thresholds``,
``baseline``, ``attack`` (maximisers, ROC, per-threshold tables, distinguisher selection),
``reference_audits`` (``o1``, ``rmrn``, ``rmia``, ``lira`` or null), ``two_sided`` (the game
with member and non-member guesses, docs/SPEC.md §2.6, beside the paper's one-sided figures;
or ``skipped``), ``seed``, ``config``, ``timings``, ``target``,
``data`` (hashes and sizes), ``versions``, ``interpretation``.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib import metadata

from panoramia.measure import INTERPRETATION, Measurement, O1Result, RmRnResult
from panoramia.measure.jsonable import JSONDict
from panoramia.measure.reference_attack import ATTACKS, ReferenceAttackResult
from panoramia.report import SCHEMA_VERSION

PACKAGES = ("panoramia-audit", "numpy", "scipy", "torch", "lightning", "sdv", "xgboost-cpu",
            "xgboost", "scikit-learn", "hydra-core")  # fmt: skip


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def report_document(
    *,
    modality: str,
    measurement: Measurement,
    o1: O1Result | None,
    rmrn: RmRnResult | None,
    seed: int,
    reference_attacks: dict[str, ReferenceAttackResult] | None = None,
    config: JSONDict,
    timings: JSONDict,
    target: JSONDict,
    data: JSONDict,
    distinguishers: JSONDict,
) -> JSONDict:
    """Assemble the JSON-safe report of one audit run."""
    body = measurement.to_dict(include_table=measurement.strategy.kind != "all")
    for side in ("baseline", "attack"):
        body[side]["distinguisher"] = distinguishers.get(side)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "panoramia-audit-report",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "modality": modality,
        **body,
        "detectable": measurement.detectable(),
        "reference_audits": {
            "o1": o1.to_dict() if o1 is not None else None,
            "rmrn": rmrn.to_dict() if rmrn is not None else None,
            **{
                name: found.to_dict() if (found := (reference_attacks or {}).get(name)) else None
                for name in ATTACKS
            },
            "note": (
                "Reference audits use real held-out non-members; they bound ε only if "
                "membership was randomised, and approximate that game post hoc. RMIA and "
                "LiRA use reference models that never saw the rows they score (the "
                "audit's stand-ins, or models of a tree target's own recipe); the loss "
                "attack reads the model's loss alone."
            ),
        },
        "seed": seed,
        "target": target,
        "data": data,
        "config": config,
        "timings": timings,
        "versions": versions(),
        "interpretation": INTERPRETATION,
    }
