"""Read the reference attack's judgement (docs/SPEC.md §3.1, level 8, 2026-12-07) off finished
runs: one row per target with the pre-registered lines' figures, beside the rule before (O(1)
the only reference audit in the decision), read from each run's ``report.json`` with
``verdict()`` once.

    .venv/bin/python benchmarks/reference_attack_judgement.py SWEEP_DIR [SWEEP_DIR ...]

Columns: runs; called (the combined verdict) and called by the rule before; RMIA's TPR at 1 %
FPR (mean, min–max) and in how many runs its interval holds the FPR it realises; the game's
member-side TPR at 1 % FPR (mean) and in how many runs RMIA's is above it (where resolved),
the mean ratio; RMIA's and O(1)'s mean ε_lb; RMIA's TPR at 0.1 % and AUC (means); LiRA's TPR at
1 % and AUC (means); RMIA's largest ε_lb beside the claimed ε (DP targets); runs with a
reference group standing out, and with a game group standing out.
"""

from __future__ import annotations

import copy
import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

from panoramia.report.verdict import verdict

DETECTED = ("leak_detected", "clear_leak", "leak_beyond_claim")


def _called(document: dict) -> bool:
    """The pre-registered rule: RMIA's test joins the decision (as the judged code had it)."""
    joined = copy.deepcopy(document)
    if isinstance(joined["reference_audits"].get("rmia"), dict):
        joined["reference_audits"]["rmia"]["decides"] = True
    return verdict(joined)["level"] in DETECTED


def _before(document: dict) -> bool:
    """The verdict with O(1) alone as the reference audit (no RMIA section)."""
    older = copy.deepcopy(document)
    older["reference_audits"]["rmia"] = None
    return _called(older)


def _row(target: str, runs: list[dict]) -> dict:
    rmia = [r["reference_audits"]["rmia"] for r in runs]
    lira = [r["reference_audits"]["lira"] for r in runs]
    o1 = [r["reference_audits"]["o1"]["eps_lb"] for r in runs]
    tpr = [a["tpr_at_fpr"]["0.01"] for a in rmia]
    holds = sum(
        a["tpr_at_fpr_interval"]["0.01"][0] <= a["realised_fpr"]["0.01"]
        <= a["tpr_at_fpr_interval"]["0.01"][1]
        for a in rmia
    )  # fmt: skip
    game = [r["attacker"]["attack"]["tpr_at_fpr"]["0.01"] for r in runs]
    resolved = [(t, g) for t, g in zip(tpr, game, strict=True) if g is not None]
    ratios = [t / g for t, g in resolved if g > 0]
    claim = runs[0].get("claim", {}).get("summary", {}).get("epsilons", {}) or {}
    groups = [r.get("exposure", {}) or {} for r in runs]
    return {
        "target": target,
        "runs": len(runs),
        "called": sum(_called(r) for r in runs),
        "called_before": sum(_before(r) for r in runs),
        "rmia_tpr_1pct": [mean(tpr), min(tpr), max(tpr)],
        "interval_holds_realised_fpr": holds,
        "game_tpr_1pct": mean(g for _, g in resolved) if resolved else None,
        "rmia_above_game": sum(t > g for t, g in resolved),
        "game_resolved": len(resolved),
        "mean_ratio": mean(ratios) if ratios else None,
        "rmia_eps_lb": mean(a["eps_lb"] for a in rmia),
        "rmia_eps_lb_max": max(a["eps_lb"] for a in rmia),
        "o1_eps_lb": mean(o1),
        "rmia_tpr_01pct": mean(a["tpr_at_fpr"]["0.001"] for a in rmia),
        "rmia_auc": mean(a["auc"] for a in rmia),
        "lira_tpr_1pct": mean(a["tpr_at_fpr"]["0.01"] for a in lira),
        "lira_auc": mean(a["auc"] for a in lira),
        "claimed_eps": claim.get("1e-05"),
        "reference_group_out": sum(
            bool((g.get("reference_groups") or {}).get("standing_out")) for g in groups
        ),
        "has_reference_groups": sum("reference_groups" in g for g in groups),
        "game_group_out": sum(bool(g.get("standing_out")) for g in groups),
    }


def main() -> None:
    by_target: dict[str, list[dict]] = defaultdict(list)
    for sweep in sys.argv[1:]:
        for path in sorted(Path(sweep).glob("*/report.json")):
            document = json.loads(path.read_text())
            by_target[document["target"]["name"]].append(document)
    rows = [_row(target, runs) for target, runs in sorted(by_target.items())]
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
