"""Pool a multirun's runs into one verdict per (target, generation seed) and count them
(docs/SPEC.md §3.2): the judgement of the pooling rule, beside the rule before it (each
run's own verdict).

    python benchmarks/pooled_judgement.py SWEEP_DIR [--json OUT]

SWEEP_DIR holds one folder per run (``.hydra/overrides.yaml`` and ``report.json``); every
verdict is read anew from the run's figures with the code as it is. Prints one table: per
target, the pooled verdicts called, borderline and quiet, and the single runs called.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from panoramia.report.pooled import pooled_verdict, run_reading
from panoramia.report.verdict import verdict
from panoramia.report.verdict_rule import DETECTED


def _overrides(run: Path) -> dict[str, str]:
    listed = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text()) or []
    return dict(item.split("=", 1) for item in listed if "=" in item)


def pooled_counts(sweep: Path) -> dict[str, dict]:
    """Per target: its pooled verdicts (one per generation seed) and its single runs' calls."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for overrides_file in sorted(sweep.glob("*/.hydra/overrides.yaml")):
        run = overrides_file.parent.parent
        chosen = _overrides(run)
        report = run / "report.json"
        found = None
        if report.is_file():
            try:
                found = verdict(json.loads(report.read_text()))
            except (KeyError, TypeError, ValueError):  # an unreadable run enters as p = 1
                found = None
        groups[(chosen.get("target", "?"), chosen.get("generation_seed", "?"))].append(
            {"run": run.name, "seed": chosen.get("seed"), "verdict": found}
        )
    targets: dict[str, dict] = {}
    for (target, generation_seed), runs in sorted(groups.items()):
        readings = [run_reading(r["verdict"]) for r in runs]
        pooled = pooled_verdict(readings)
        entry = targets.setdefault(target, {"pooled": [], "single_called": 0, "single_runs": 0})
        kept = {k: pooled[k] for k in ("level", "p_value", "called", "runs", "quote")}
        seeds = [r["seed"] for r in runs]
        entry["pooled"].append({"generation_seed": generation_seed, "seeds": seeds} | kept)
        entry["single_runs"] += len(runs)
        entry["single_called"] += sum(1 for r in readings if r["level"] in DETECTED)
    return targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not args.sweep.is_dir():
        print(f"pooled_judgement: {args.sweep}: not a folder", file=sys.stderr)
        return 2
    targets = pooled_counts(args.sweep)
    print("| target | pooled verdicts | called | borderline | no leak | pooled p (range) "
          "| single runs called (the rule before) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for target, entry in targets.items():
        levels = [p["level"] for p in entry["pooled"]]
        ps = [p["p_value"] for p in entry["pooled"]]
        print(
            f"| {target} | {len(levels)} | {levels.count('leak_detected')} | "
            f"{levels.count('borderline')} | {levels.count('no_leak_detected')} | "
            f"{min(ps):.3f}–{max(ps):.3f} | {entry['single_called']} of {entry['single_runs']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(targets, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
