"""Repeats with a control counted and named as she asked (issue 72): 3 runs of the target and
3 of its control are "3 repeats" beside 3 of the control, in the console and the CLI, and the
control's runs are never a version row of the target's nor points of its history."""

from __future__ import annotations

from typing import Any

from panoramia.cli.service import repeat_lines
from panoramia.service.console.pages import control_audit_ids, history_rows


def _line(audit_id: str, version: str) -> dict[str, Any]:
    return {"audit_id": audit_id, "version": version, "id": f"r-{audit_id}"}


def test_a_groups_control_runs_are_counted_in_its_row_and_never_a_version() -> None:
    lines = [_line("t0", "3"), _line("t1", "3"), _line("c0", "3-control"),
             _line("c1", "3-control"), _line("solo", "2")][::-1]  # oldest first  # fmt: skip
    groups = {audit: "g" for audit in ("t0", "t1", "c0", "c1")}
    summary = {"group": "g", "targets": 2, "controls": 2, "control_audits": {"c0", "c1"}}
    rows = history_rows(lines, groups, {"g": summary})
    assert [(row["kind"], row["line"]["version"]) for row in rows] == [
        ("group", "3"),
        ("report", "2"),  # newest first; never "3-control"
    ]
    assert control_audit_ids({"g": summary, "other": None}) == {"c0", "c1"}


def test_the_cli_says_the_repeats_she_asked_for_beside_the_controls() -> None:
    runs = [{"role": role, "seed": seed, "status": "succeeded", "level": "no_leak_detected",
             "report_id": None}
            for role in ("target", "control") for seed in (0, 1, 2)]  # fmt: skip
    found = {"model": {"name": "census", "version": "3"}, "pooled": None, "runs": runs}
    assert repeat_lines(found)[0] == "census version 3: 3 repeats, beside 3 runs of your control"
    alone = found | {"runs": runs[:3]}
    assert repeat_lines(alone)[0] == "census version 3: 3 repeats"
