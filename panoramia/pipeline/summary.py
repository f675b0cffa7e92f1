"""Hydra callback: at the end of a multirun, aggregate the runs' reports per target."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.table import Table

from panoramia.measure import aggregate

QUANTITIES = ("eps_tilde", "c_lb", "c_plus_eps_lb", "o1", "rmrn")
REPEATS = ("seed", "generation_seed", "target")
"""Overrides that repeat or name an audit; runs that differ in any other are summarised apart."""


def _quantities(report: dict) -> dict[str, float | None]:
    reference = report.get("reference_audits") or {}
    return {
        "eps_tilde": report["eps_tilde"],
        "c_lb": report["c_lb"],
        "c_plus_eps_lb": report["c_plus_eps_lb"],
        "o1": (reference.get("o1") or {}).get("eps_lb"),
        "rmrn": (reference.get("rmrn") or {}).get("eps_lb"),
    }


def _generation_seed(report: dict) -> int:
    """The seed of D_G, the generator, the synthetic pool and h in this run."""
    configured = report["config"].get("generation_seed")
    return report["seed"] if configured is None else configured


def _setting(run_dir: Path) -> set[str]:
    """The run's command-line overrides other than :data:`REPEATS`."""
    overrides_file = run_dir / ".hydra" / "overrides.yaml"
    overrides = OmegaConf.load(overrides_file) if overrides_file.exists() else []
    return {item for item in overrides if item.split("=")[0].lstrip("+~") not in REPEATS}


def summarise(sweep_dir: Path, *, confidence: float = 0.95) -> dict[str, dict]:
    """Mean and t-interval of each quantity per target and setting over the reports under
    ``sweep_dir``, with the generation seeds the runs used (one: the interval leaves out the
    generator's randomness, as in the paper's App. C). A setting is the overrides, other than
    :data:`REPEATS`, that not every run shares: ``mlp-e10 [audit.attack_side=target]``."""
    reports = {
        path.parent: json.loads(path.read_text())
        for path in sorted(sweep_dir.glob("*/report.json"))
    }
    settings = {run: _setting(run) for run in reports}
    shared = set.intersection(*settings.values()) if settings else set()
    runs: dict[str, list[dict]] = defaultdict(list)
    generation_seeds: dict[str, set[int]] = defaultdict(set)
    for run, report in reports.items():
        varied = " ".join(sorted(settings[run] - shared))
        group = report["target"]["name"] + (f" [{varied}]" if varied else "")
        runs[group].append(_quantities(report))
        generation_seeds[group].add(_generation_seed(report))
    summary = {}
    for target, values in runs.items():
        summary[target] = {
            "runs": len(values),
            "generation_seeds": sorted(generation_seeds[target]),
        }
        for name in QUANTITIES:
            column = [v[name] for v in values if v[name] is not None]
            if column:
                summary[target][name] = aggregate(column, confidence=confidence).to_dict()
    return summary


class MultirunSummary(Callback):
    """Prints and writes ``summary.json``: mean ± CI of ε̃, c_lb, O(1), RM;RN per target."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        summary = summarise(sweep_dir)
        if not summary:
            return
        (sweep_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        table = Table(title=f"multirun summary (mean [95 % CI]) — {sweep_dir}")
        for header in ("target", "runs", *QUANTITIES):
            table.add_column(header, justify="left" if header == "target" else "right")
        for target, row in summary.items():
            cells = [target, str(row["runs"])]
            for name in QUANTITIES:
                stats = row.get(name)
                if stats is None:
                    cells.append("—")
                elif stats["ci_low"] is None:
                    cells.append(f"{stats['mean']:.3f}")
                else:
                    cells.append(
                        f"{stats['mean']:.3f} [{stats['ci_low']:.3f}, {stats['ci_high']:.3f}]"
                    )
            table.add_row(*cells)
        Console().print(table)
