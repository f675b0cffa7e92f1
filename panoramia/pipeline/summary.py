"""Hydra callback: at the end of a multirun, aggregate the runs' reports per target.

When the sweep holds a negative control (a target trained on a pool disjoint from the audited
members, ``target.members=disjoint``), the summary also says whether the number follows the
leak (``validity.json``): for every other target, the difference ε̃(target) − ε̃(control)
paired by (seed, generation seed, setting); the share of control runs with ε̃ > 0; ε̃ / O(1);
and the runs whose ε̃ exceeds the ε their DP training claims (δ = 1e-5) or whose claim section
reports a violation. Runs whose baseline bound collapsed to 0 (ε̃ is then the attack's raw
bound, not a gap over the generator) are counted as unreliable everywhere. Each of these is
given for the paper's one-sided game and for the two-sided game (docs/SPEC.md §2.6).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf
from rich.console import Console
from rich.table import Table

from panoramia.measure import aggregate
from panoramia.report.reading import Report, parse_report

QUANTITIES = ("quoted", "eps_tilde", "c_lb", "c_plus_eps_lb", "o1", "rmrn", "rmia",
              "rmia_tpr_1pct", "eps_tilde_two_sided", "rmrn_two_sided", "mu_tilde",
              "rmrn_mu")  # fmt: skip
"""Per run: the verdict's quoted ε̃ (its game fixed before the run, docs/SPEC.md §3.1), the
paper's (one-sided) figures, the reference audits (O(1), RM;RN, and the reference-model
attack RMIA: its ε lower bound and the share of members it catches at 1 % false positives,
docs/SPEC.md §2.4), and the two-sided game's ε̃ and RM;RN bound (docs/SPEC.md §2.6)."""
HEADERS = {"quoted": "ε̃ quoted", "eps_tilde": "ε̃ one-sided", "c_lb": "c_lb one-sided",
           "c_plus_eps_lb": "{c+ε}_lb one-sided", "o1": "O(1)",
           "rmrn": "RM;RN", "rmia": "RMIA ε_lb", "rmia_tpr_1pct": "RMIA TPR@1%",
           "eps_tilde_two_sided": "ε̃ two-sided",
           "rmrn_two_sided": "RM;RN two-sided", "mu_tilde": "μ̃", "rmrn_mu": "RM;RN μ"}  # fmt: skip
"""Column headers of the printed summary table."""
GAMES = {"quoted": ("quoted", "unreliable_quoted"), "one-sided": ("eps_tilde", "unreliable"),
         "two-sided": ("eps_tilde_two_sided", "unreliable_two_sided")}  # fmt: skip
"""Each game's ε̃ quantity and unreliable flag, as the validity check reads them (``quoted``:
the verdict's figure, whichever game it comes from)."""
CLAIM_DELTA = "1e-05"
"""δ at which a run's ε̃ is compared with its claimed ε."""
REPEATS = ("seed", "generation_seed", "target", "target.path", "target.name", "control")
"""Overrides that repeat or name an audit; runs that differ in any other are summarised apart
(one's own model and one's own control differ by ``target.path`` and pair up)."""


def _quantities(report: Report) -> dict[str, float | None]:
    """The run's figures of :data:`QUANTITIES`."""
    reference = report.reference_audits
    rmia = reference.rmia
    mu = report.gdp.rmrn or {}
    return {
        "quoted": report.verdict.quote.value,
        "eps_tilde": report.eps_tilde,
        "c_lb": report.c_lb,
        "c_plus_eps_lb": report.c_plus_eps_lb,
        "o1": reference.o1.eps_lb if reference.o1 else None,
        "rmrn": reference.rmrn.eps_lb if reference.rmrn else None,
        "rmia": rmia.eps_lb if rmia else None,
        "rmia_tpr_1pct": rmia.tpr_at_fpr.get("0.01") if rmia else None,
        "eps_tilde_two_sided": report.two_sided.eps_tilde,
        "rmrn_two_sided": report.two_sided.rmrn.eps_lb if report.two_sided.rmrn else None,
        "mu_tilde": report.gdp.mu_tilde,
        "rmrn_mu": mu.get("mu_lb"),
    }


def _setting(run_dir: Path) -> set[str]:
    """The run's command-line overrides other than :data:`REPEATS`."""
    overrides_file = run_dir / ".hydra" / "overrides.yaml"
    # Hydra writes the overrides as a list of strings
    overrides: ListConfig | list[str] = (
        cast(ListConfig, OmegaConf.load(overrides_file)) if overrides_file.exists() else []
    )
    return {item for item in overrides if item.split("=")[0].lstrip("+~") not in REPEATS}


def _is_control(report: Report) -> bool:
    """A demo target trained on a disjoint pool, or the target the job names as its own
    control (``control=<target.name>``)."""
    named = report.config.get("control")
    return (report.config.get("target") or {}).get("members", "same") != "same" or (
        named is not None and named == report.target["name"]
    )


def _run_record(run: Path, report: Report, group: str, varied: str) -> dict:
    claimed = ((report.claim.summary or {}).get("epsilons") or {}).get(CLAIM_DELTA)
    found = report.verdict
    quoted_game = found.quote.game
    unreliable = {"one_sided": bool(report.unreliable), "two_sided": report.two_sided.unreliable}
    return {
        "run": run.name,
        "group": group,
        "pair": (report.seed, report.generation_seed, varied),
        "control": _is_control(report),
        "level": found.level,
        "detected": found.detected,
        "quoted_game": quoted_game,
        "unreliable_quoted": unreliable.get(quoted_game or "", False),
        "unreliable": unreliable["one_sided"],
        "unreliable_two_sided": unreliable["two_sided"],
        "claimed_epsilon": claimed,
        "claimed_mu": report.gdp.claimed_mu,
        "violation": report.claim.violation,
        **_quantities(report),
    }


def summarise(sweep_dir: Path, *, confidence: float = 0.95) -> dict[str, dict]:
    """Mean and t-interval of each quantity per target and setting over the reports under
    ``sweep_dir``, with the generation seeds the runs used (several: the interval pools over
    generators; one: it leaves out the generator's randomness, as in the paper's App. C) and
    the number of unreliable runs. A setting is the overrides, other than :data:`REPEATS`,
    that not every run shares: ``mlp-e10 [audit.attack_side=target]``."""
    records = _records(sweep_dir)
    summary: dict[str, dict] = {}
    for group, rows in _by_group(records).items():
        summary[group] = {
            "runs": len(rows),
            "detected_runs": sum(row["detected"] for row in rows),
            "levels": {
                level: sum(r["level"] == level for r in rows)
                for level in dict.fromkeys(r["level"] for r in rows)
            },
            "quoted_games": sorted({row["quoted_game"] for row in rows if row["quoted_game"]}),
            "generation_seeds": sorted({row["pair"][1] for row in rows}),
            "unreliable_runs": sum(row["unreliable"] for row in rows),
            "unreliable_runs_two_sided": sum(row["unreliable_two_sided"] for row in rows),
        }
        for name in QUANTITIES:
            column = [row[name] for row in rows if row[name] is not None]
            if column:
                summary[group][name] = aggregate(column, confidence=confidence).to_dict()
    return summary


def _job_order(path: Path) -> tuple[int, str]:
    """Hydra's job number (``<num>-<target>-seed<n>``), so rows follow the sweep: job 10
    after job 9, not after job 1."""
    number = path.parent.name.split("-", 1)[0]
    return (int(number) if number.isdigit() else 10**9, path.parent.name)


def report_paths(sweep_dir: Path) -> list[Path]:
    """The runs' ``report.json`` files under ``sweep_dir``, in the sweep's job order."""
    return sorted(sweep_dir.glob("*/report.json"), key=_job_order)


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: its directory, its report, the summary's group it falls in (the
    target's name, and the settings not every run shares), those settings, and whether it is
    a negative control (:func:`_is_control`); ``reading``: the report read once
    (:func:`~panoramia.report.reading.parse_report`)."""

    directory: Path
    report: dict
    group: str
    varied: str
    control: bool
    reading: Report


def sweep_runs(reports: dict[Path, dict]) -> list[SweepRun]:
    """The runs of ``reports`` (run directory → its report, in job order) with their groups."""
    settings = {run: _setting(run) for run in reports}
    shared = set.intersection(*settings.values()) if settings else set()
    runs = []
    for run, report in reports.items():
        varied = " ".join(sorted(settings[run] - shared))
        group = report["target"]["name"] + (f" [{varied}]" if varied else "")
        reading = parse_report(report)
        runs.append(SweepRun(run, report, group, varied, _is_control(reading), reading))
    return runs


def _records(sweep_dir: Path) -> list[dict]:
    reports = {path.parent: json.loads(path.read_text()) for path in report_paths(sweep_dir)}
    return [
        _run_record(run.directory, run.reading, run.group, run.varied)
        for run in sweep_runs(reports)
    ]


def _by_group(records: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[record["group"]].append(record)
    return groups


def validity(sweep_dir: Path, *, confidence: float = 0.95) -> dict | None:
    """Whether ε̃ follows the leak in this sweep (see the module docstring); None when the
    sweep holds no control. Pairs are (seed, generation seed, setting): a target is compared
    with the control run that shares all three."""
    records = _records(sweep_dir)
    groups = _by_group(records)
    controls = {g: rows for g, rows in groups.items() if all(r["control"] for r in rows)}
    if not controls:
        return None
    result: dict[str, Any] = {"controls": {}, "targets": {}}  # and "generation_seeds": a list
    for name, rows in controls.items():
        result["controls"][name] = {"runs": len(rows)} | {
            game: _control_entry(rows, key, confidence)
            for game, (key, _) in GAMES.items()
            if all(r[key] is not None for r in rows)
        }
    for name, rows in groups.items():
        if name in controls:
            continue
        entry: dict[str, object] = {"runs": len(rows)}
        for game, (key, unreliable) in GAMES.items():
            if all(r[key] is not None for r in rows):
                entry[game] = _target_entry(rows, controls, key, confidence) | {
                    "unreliable_runs": sum(r[unreliable] for r in rows)
                }
        result["targets"][name] = entry
    result["generation_seeds"] = sorted({r["pair"][1] for r in records})
    return result


def _control_entry(rows: list[dict], key: str, confidence: float) -> dict[str, object]:
    entry: dict[str, object] = {}
    if key == "quoted":  # the verdict's false alarms: a control read as leaking
        entry["detected_runs"] = sum(r["detected"] for r in rows)
        entry["detected_run_names"] = [r["run"] for r in rows if r["detected"]]
    return entry | {
        "share_eps_tilde_positive": sum(r[key] > 0 for r in rows) / len(rows),
        "eps_tilde": aggregate([r[key] for r in rows], confidence=confidence).to_dict(),
    }


def _target_entry(
    rows: list[dict], controls: dict[str, list[dict]], key: str, confidence: float
) -> dict[str, object]:
    """One game's validity figures for one target: ε̃, ε̃ / O(1), the paired difference with
    each control (its runs without this game's figure left out), and ε̃ against a DP
    training's claim."""
    entry: dict[str, object] = {
        "eps_tilde": aggregate([r[key] for r in rows], confidence=confidence).to_dict(),
    }
    if key == "quoted":
        entry["detected_runs"] = sum(r["detected"] for r in rows)
    o1 = [r["o1"] for r in rows if r["o1"] is not None]
    if o1 and sum(o1) > 0:
        entry["eps_tilde_over_o1"] = sum(r[key] for r in rows) / sum(o1)
    paired = {}
    for control, control_rows in controls.items():
        by_pair = {r["pair"]: r[key] for r in control_rows if r[key] is not None}
        differences = [r[key] - by_pair[r["pair"]] for r in rows if r["pair"] in by_pair]
        if differences:
            paired[control] = aggregate(differences, confidence=confidence).to_dict()
    entry["paired_difference"] = paired
    claimed = [r for r in rows if r["claimed_epsilon"] is not None]
    if claimed:
        entry["claim"] = {
            "runs": len(claimed),
            "claimed_epsilon": max(r["claimed_epsilon"] for r in claimed),
            "eps_tilde_above_claim": [r["run"] for r in claimed
                                      if r[key] > r["claimed_epsilon"]],
            "violations": [r["run"] for r in claimed if r["violation"]],
        }  # fmt: skip
    with_mu = [r for r in rows if r["claimed_mu"] is not None]
    if with_mu and key == "eps_tilde":  # μ̃ is measured in the paper's game only
        entry["claim_mu"] = {
            "runs": len(with_mu),
            "claimed_mu": max(r["claimed_mu"] for r in with_mu),
            "mu_tilde_above_claim": [r["run"] for r in with_mu
                                     if (r["mu_tilde"] or 0) > r["claimed_mu"]],
            "rmrn_mu_above_claim": [r["run"] for r in with_mu
                                    if (r["rmrn_mu"] or 0) > r["claimed_mu"]],
        }  # fmt: skip
    return entry


class MultirunSummary(Callback):
    """Prints and writes ``summary.json``: mean ± CI of ε̃, c_lb, O(1), RM;RN per target."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        summary = summarise(sweep_dir)
        if not summary:
            return
        (sweep_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        seeds = sorted({s for row in summary.values() for s in row["generation_seeds"]})
        pooled = f"; pooled over generation seeds {seeds}" if len(seeds) > 1 else ""
        title = f"multirun summary (mean [95 % CI]{pooled})"
        headers = ["target", "runs", "leak called", *(HEADERS[name] for name in QUANTITIES)]
        rows = [[target, str(row["runs"]), f"{row['detected_runs']}/{row['runs']}",
                 *(_cell(row, name) for name in QUANTITIES)]
                for target, row in summary.items()]  # fmt: skip
        (sweep_dir / "summary.md").write_text(_markdown(title, headers, rows))
        _write_csv(sweep_dir / "summary.csv", summary)
        table = Table(title=f"{title} — {sweep_dir}")
        longest = max(len(row[0]) for row in rows)
        for header in headers:  # names never cut; a long interval wraps at its spaces
            if header == "target":
                table.add_column(header, no_wrap=True, min_width=max(longest, 6))
            else:
                table.add_column(header, justify="right", overflow="fold")
        for cells in rows:
            table.add_row(*cells)
        # a pipe, a file or CI: the table at its natural width rather than 80 columns
        console = Console() if Console().is_terminal else Console(width=4000)
        console.print(table)
        checked = validity(sweep_dir)
        if checked is not None:
            (sweep_dir / "validity.json").write_text(json.dumps(checked, indent=1))
            for line in validity_lines(checked):
                console.print(line, markup=False)  # "[one-sided]" is text, not a style


UNRELIABLE_COUNTS = {"eps_tilde": "unreliable_runs",
                     "eps_tilde_two_sided": "unreliable_runs_two_sided"}  # fmt: skip
"""(The quoted figure has its own null: a baseline bound of 0 does not make it unreliable.)"""
"""The summary's count of runs whose baseline bound is 0, per ε̃ quantity."""


def _cell(row: dict, name: str) -> str:
    """A summary table cell. An ε̃ whose runs all have a baseline bound of 0 shows no number
    (it would be the attack's raw bound, not a gap over the generator); one with some such
    runs says how many (docs/SPEC.md §2.2)."""
    stats = row.get(name)
    if stats is None:
        return "—"
    if name == "quoted":
        games = "/".join(g.replace("_", "-") for g in row.get("quoted_games", []))
        return _interval(stats) + (f" ({games})" if games else "")
    unreliable = row.get(UNRELIABLE_COUNTS.get(name, ""), 0)
    if unreliable and unreliable == row["runs"]:
        return f"unreliable ({unreliable}/{row['runs']} runs: baseline c_lb 0)"
    note = f" ({unreliable}/{row['runs']} unreliable)" if unreliable else ""
    return _interval(stats) + note


def validity_lines(checked: dict) -> list[str]:
    """The validity check in a few plain lines (printed after the summary table), the paper's
    one-sided game first, then the two-sided game."""
    lines = []
    for game in GAMES:
        for name, row in checked["controls"].items():
            if game in row:
                called = row[game].get("detected_runs")
                lines.append(
                    f"[{game}] control {name}: ε̃ {_interval(row[game]['eps_tilde'])}, "
                    f"{row[game]['share_eps_tilde_positive']:.0%} of runs > 0"
                    + (f", leak called in {called} of {row['runs']}" if called is not None else "")
                )
        for name, row in checked["targets"].items():
            figures = row.get(game)
            if figures is None:
                continue
            if "detected_runs" in figures:
                lines.append(
                    f"[{game}] {name}: leak called in {figures['detected_runs']} of {row['runs']}"
                )
            for control, difference in figures["paired_difference"].items():
                lines.append(f"[{game}] {name} − {control} (paired): {_interval(difference)}")
            if "claim" in figures:
                claim = figures["claim"]
                lines.append(
                    f"[{game}] {name}: claimed ε {claim['claimed_epsilon']:.3g}; ε̃ above it in "
                    f"{len(claim['eps_tilde_above_claim'])} run(s), claim violations in "
                    f"{len(claim['violations'])}"
                )
            if "claim_mu" in figures:
                claim = figures["claim_mu"]
                lines.append(
                    f"[{game}] {name}: claimed μ {claim['claimed_mu']:.3g}; μ̃ above it in "
                    f"{len(claim['mu_tilde_above_claim'])} run(s), RM;RN μ above it in "
                    f"{len(claim['rmrn_mu_above_claim'])}"
                )
            if figures["unreliable_runs"] and game != "quoted":
                lines.append(
                    f"[{game}] {name}: {figures['unreliable_runs']} unreliable run(s) "
                    "(baseline c_lb 0)"
                )
    return lines


def _markdown(title: str, headers: list[str], rows: list[list[str]]) -> str:
    """The summary as a Markdown table (``summary.md``): every cell whole."""
    lines = [f"**{title}**", "", "| " + " | ".join(headers) + " |",
             "|" + "---|" * len(headers)]  # fmt: skip
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, summary: dict[str, dict]) -> None:
    """The summary as CSV (``summary.csv``): per target and quantity, mean and interval."""
    import csv

    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["target", "runs", "leak_called", "quantity", "game", "mean", "ci_low",
                      "ci_high", "unreliable"])  # fmt: skip
        for target, row in summary.items():
            for name in QUANTITIES:
                stats = row.get(name)
                if stats is None:
                    continue
                unreliable = row.get(UNRELIABLE_COUNTS.get(name, ""), 0)
                game = (
                    "/".join(row.get("quoted_games", []))
                    if name == "quoted"
                    else "two_sided"
                    if name.endswith("two_sided")
                    else "one_sided"
                )
                out.writerow([target, row["runs"], row["detected_runs"], name, game,
                              stats["mean"], stats["ci_low"], stats["ci_high"],
                              unreliable])  # fmt: skip


def _interval(stats: dict) -> str:
    if stats["ci_low"] is None or stats["ci_low"] != stats["ci_low"]:
        return f"{stats['mean']:.3f}"
    return f"{stats['mean']:.3f} [{stats['ci_low']:.3f}, {stats['ci_high']:.3f}]"
