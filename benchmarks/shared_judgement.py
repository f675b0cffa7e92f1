"""The shared model's model-level test judged on a multirun (docs/SPEC.md §3.3): trial t of a
target is three contributors c = 0, 1, 2 auditing it at generation seed FIRST + 3t + c; each
trial's verdict is Holm over the three runs' decision p, read anew from each run's
``report.json`` by the repository's own code (its digest, then ``version_leakage``), beside
the rule before it (the trial is called where any of its three runs' own verdicts calls).

    python benchmarks/shared_judgement.py SWEEP_DIR [SWEEP_DIR ...] [--json OUT]
        [--first 600 --trials 20]

Each SWEEP_DIR (one multirun, or one per target: their runs are read together) holds one
folder per run (``.hydra/overrides.yaml`` and ``report.json``). A run
that is missing, or whose ``report.json`` is absent or unreadable, enters its trial as a
failed run (p = 1, as SPEC §3.3 enters one) and the trial is listed as holding a missing
run: never dropped. Prints one table per target, one line per trial, and the pass line
(the control's model-level calls at most 1 of its trials).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from panoramia.report.digest import report_digest
from panoramia.report.shared_leakage import (
    ContributorUnit,
    Published,
    RunRecord,
    version_leakage,
)
from panoramia.report.verdict_rule import DETECTED

FIRST = 600
"""The first generation seed of the judgement (trial 0's contributor 0)."""
TRIALS = 20
"""Trials per target."""
CONTRIBUTORS = 3
"""Contributors per trial."""
CONTROL = "mlp_disjoint"
"""The null control: it never saw the Adult rows the contributors draw their members from."""
MAX_CALLS = 1
"""The pass line: the control's model-level calls in at most 5 % of 20 trials."""
PUBLISHED_AT = datetime(2026, 12, 3, tzinfo=UTC)


def _overrides(run: Path) -> dict[str, str]:
    listed = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text()) or []
    return dict(item.split("=", 1) for item in listed if "=" in item)


def read_runs(sweep: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Every run of ``sweep`` by (target, generation seed): its folder's name, seed, and its
    report's digest (None: no ``report.json``, or one that is not JSON)."""
    runs: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for overrides_file in sorted(sweep.glob("*/.hydra/overrides.yaml")):
        run = overrides_file.parent.parent
        chosen = _overrides(run)
        try:
            generation_seed = int(chosen.get("generation_seed", ""))
        except ValueError:
            generation_seed = -1
        report = run / "report.json"
        digest = None
        if report.is_file():
            try:
                digest = report_digest(json.loads(report.read_text()))
            except (OSError, ValueError):
                digest = None
        runs[(chosen.get("target", "?"), generation_seed)].append(
            {"run": run.name, "seed": chosen.get("seed"), "digest": digest}
        )
    return runs


def shared_trials(
    runs: dict[tuple[str, int], list[dict[str, Any]]],
    *,
    first: int = FIRST,
    trials: int = TRIALS,
    contributors: int = CONTRIBUTORS,
) -> dict[str, list[dict[str, Any]]]:
    """Per target: its trials, each with the model-level verdict (Holm over its
    contributors), their p and found, its missing runs and the rule before's call."""
    out: dict[str, list[dict[str, Any]]] = {}
    for target in sorted({target for target, _ in runs}):
        rows = out.setdefault(target, [])
        for t in range(trials):
            units, missing, unread, extra, levels = [], [], [], [], []
            seeds = [first + contributors * t + c for c in range(contributors)]
            for c, generation_seed in enumerate(seeds):
                found_runs = runs.get((target, generation_seed), [])
                if len(found_runs) > 1:
                    extra.append(generation_seed)
                digest = found_runs[0]["digest"] if found_runs else None
                if digest is None:
                    missing.append(generation_seed)
                    record = RunRecord("failed", None, None)
                else:
                    if digest.get("verdict") is None:
                        unread.append(generation_seed)
                    record = RunRecord("succeeded", digest, None)
                levels.append(((digest or {}).get("verdict") or {}).get("level"))
                units.append(ContributorUnit(key=c, label=f"c{c}", named=False, runs=[record]))
            published = Published(
                owner="judge", name=target, version=str(t), published_at=PUBLISHED_AT,
                withdrawn=False, claim=None,
            )  # fmt: skip
            report = version_leakage(published, units)
            assert report.verdict is not None
            assert report.rows is not None
            rows.append(
                {
                    "trial": t,
                    "generation_seeds": seeds,
                    "level": report.verdict.level,
                    "found": report.verdict.found,
                    "p_values": [row.p_value for row in report.rows],
                    "found_each": [bool(row.found) for row in report.rows],
                    "run_levels": levels,
                    "rule_before": any(level in DETECTED for level in levels),
                    "missing": missing,
                    "unread": unread,
                    "extra": extra,
                }
            )
    return out


def _summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    smallest = [min(trial["p_values"]) for trial in trials]
    levels = [trial["level"] for trial in trials]
    return {
        "trials": len(trials),
        "leaks": levels.count("leaks"),
        "borderline": levels.count("borderline"),
        "no_leak": levels.count("no_leak_detected"),
        "found": sum(trial["found"] for trial in trials),
        "all_found": sum(1 for trial in trials if trial["found"] == len(trial["p_values"])),
        "rule_before": sum(1 for trial in trials if trial["rule_before"]),
        "with_missing": sum(1 for trial in trials if trial["missing"]),
        "with_unread": sum(1 for trial in trials if trial["unread"]),
        "smallest_p": min(smallest) if smallest else None,
        "median_smallest_p": statistics.median(smallest) if smallest else None,
        "median_p": statistics.median(p for trial in trials for p in trial["p_values"])
        if trials
        else None,
    }


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value >= 0.001 or value == 0 else f"{value:.1e}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, nargs="+")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--first", type=int, default=FIRST)
    parser.add_argument("--trials", type=int, default=TRIALS)
    args = parser.parse_args()
    runs: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for sweep in args.sweep:
        if not sweep.is_dir():
            print(f"shared_judgement: {sweep}: not a folder", file=sys.stderr)
            return 2
        for key, found in read_runs(sweep).items():
            runs[key].extend(found)
    targets = shared_trials(runs, first=args.first, trials=args.trials)
    if not targets:
        print("shared_judgement: no runs in " + ", ".join(map(str, args.sweep)), file=sys.stderr)
        return 2
    summaries = {target: _summary(trials) for target, trials in targets.items()}
    contributors = CONTRIBUTORS
    print(f"| target | trials | model-level calls (leaks) | borderline | no leak | contributors "
          f"found (of {contributors} × trials) | trials with all {contributors} found | trials "
          "called by the rule before | trials with a missing run | smallest p over trials "
          "(min / median) | median p (all contributors) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for target, s in summaries.items():
        print(
            f"| {target} | {s['trials']} | **{s['leaks']}** | {s['borderline']} | "
            f"{s['no_leak']} | {s['found']} | {s['all_found']} | {s['rule_before']} | "
            f"{s['with_missing']} | {_p(s['smallest_p'])} / {_p(s['median_smallest_p'])} | "
            f"{_p(s['median_p'])} |"
        )
    for target, trials in targets.items():
        print(f"\n{target}: trial | generation seeds | p (c0, c1, c2) | found | level | "
              "runs' own levels | rule before | missing")  # fmt: skip
        for trial in trials:
            ps = ", ".join(_p(p) for p in trial["p_values"])
            found = "".join("+" if hit else "." for hit in trial["found_each"])
            notes = []
            if trial["missing"]:
                notes.append(f"MISSING {trial['missing']}")
            if trial["unread"]:
                notes.append(f"unreadable {trial['unread']}")
            if trial["extra"]:
                notes.append(f"more than one run {trial['extra']} (first used)")
            print(
                f"  {trial['trial']:2d} | {trial['generation_seeds']} | {ps} | {found} | "
                f"{trial['level']} | {', '.join(str(v) for v in trial['run_levels'])} | "
                f"{'called' if trial['rule_before'] else '-'} | {'; '.join(notes) or '-'}"
            )
    control = summaries.get(CONTROL)
    print()
    if control is None:
        print(f"No pass line: no run of the control {CONTROL} in these folders")
        verdict = True
    else:
        verdict = control["leaks"] <= MAX_CALLS and control["trials"] == args.trials
        print(
            f"{'PASS' if verdict else 'FAIL'}: control {CONTROL} model-level calls "
            f"{control['leaks']} of {control['trials']} (pass: at most {MAX_CALLS}); "
            f"the rule before calls {control['rule_before']} of {control['trials']}; "
            f"trials with a missing run: {control['with_missing']}"
        )
    if args.json:
        args.json.write_text(json.dumps({"summary": summaries, "trials": targets}, indent=2))
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
