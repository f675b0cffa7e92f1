"""A request for repeats (docs/SPEC.md §3.2): N audits of the same request at seeds s, s+1, …,
and the pooled verdict of their reports once all have ended."""

from __future__ import annotations

from typing import Any

from panoramia.report.plain import pooled_paragraph
from panoramia.report.pooled import paired_difference, pooled_verdict, run_reading
from panoramia.service.submission.plan import MAX_SEED as PLAN_MAX_SEED
from panoramia.store.repository import Principal, ReportStore
from panoramia.store.tables import Audit

ENDED = ("succeeded", "failed", "cancelled")


MAX_SEED = PLAN_MAX_SEED
"""The largest seed an audit takes (numpy's); a repeat's seed is its plan's
(:func:`panoramia.service.submission.plan.repeated`)."""


def repeat_summary(store: ReportStore, principal: Principal, group: str) -> dict[str, Any] | None:
    """The group's audits (in seed order), how many have ended, each one's report id and
    digest verdict and attacker section, and the ``pooled`` verdict (its ``plain`` the
    paragraph of :func:`~panoramia.report.plain.pooled_paragraph`) once every audit has
    ended (None before), with
    how many runs are the target's (``targets``, what she asked for) and her control's
    (``controls``; ``control_audits``, their ids: the pooled verdict is the target's); None
    where ``principal`` may see no audit of ``group``."""
    audits: list[Audit] = store.repeat_audits(principal, group)
    if not audits:
        return None
    reports = store.reports_of_audits([audit.id for audit in audits])
    planned = (audits[0].request or {}).get("repeat") or {}
    size = got if isinstance(got := planned.get("of"), int) else len(audits)
    runs: list[dict[str, Any]] = []
    for audit in audits:
        report = reports.get(audit.id)
        digest = report.digest if report is not None and isinstance(report.digest, dict) else {}
        runs.append({
            "audit": audit,
            "report_id": report.id if report is not None else None,
            "verdict": got if isinstance(got := digest.get("verdict"), dict) else None,
            "attacker": got if isinstance(got := digest.get("attacker"), dict) else None,
        })  # fmt: skip
    ended = sum(1 for audit in audits if audit.status in ENDED)
    pooled = paired = None
    targets = [run for run in runs if _role(run["audit"]) == "target"]
    controls = [run for run in runs if _role(run["audit"]) == "control"]
    if ended == len(audits):  # an audit of the group no longer kept enters as unread (p = 1)
        missing = [run_reading(None)] * max(0, size - len(targets))
        pooled = pooled_verdict([run_reading(run["verdict"]) for run in targets] + missing)
        if controls:
            paired = paired_difference(_by_seed(targets), _by_seed(controls))
        pooled["plain"] = pooled_paragraph(pooled, [run["attacker"] for run in targets], paired)
    return {"group": group, "audits": audits, "runs": runs, "ended": ended, "pooled": pooled,
            "paired": paired, "targets": len(targets), "controls": len(controls),
            "control_audits": {run["audit"].id for run in controls}}  # fmt: skip


def _role(audit: Audit) -> str:
    """``control`` for the control's audits of a group, else ``target``."""
    repeat = (audit.request or {}).get("repeat")
    return "control" if isinstance(repeat, dict) and repeat.get("role") == "control" else "target"


def _by_seed(runs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Run readings by their repeat's seed."""
    found = {}
    for run in runs:
        seed = ((run["audit"].request or {}).get("repeat") or {}).get("seed")
        if isinstance(seed, int):
            found[seed] = run_reading(run["verdict"])
    return found
