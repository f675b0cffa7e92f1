"""``panoramia-audit``: the Hydra job (single run or ``-m`` multirun).

At this stage the job measures a scores file (the embedded official PANORAMIA Adult scores by
default) and writes ``measurement.json`` in the run's output directory; the staged pipeline
(generator, helper, baseline, attack, game) feeds it in later versions.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from panoramia.errors import InputError
from panoramia.pipeline.config import JobConfig, config_dir, register_schemas

log = logging.getLogger("panoramia.audit")


def _write_json_atomic(path: Path, document: object) -> None:
    """Write JSON so that a reader never sees a half-written file (rename is atomic)."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    os.replace(partial, path)


def run_job(cfg: DictConfig) -> dict[str, float]:
    """Measure every attack column; return ``{attack column: ε̃}`` (the multirun summary)."""
    from panoramia.datasets import OFFICIAL_ADULT_SCORES, path_of
    from panoramia.measure import measure
    from panoramia.scores_file import read_columns

    job: JobConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    output_dir = Path(HydraConfig.get().runtime.output_dir)
    scores_path = Path(job.scores.path) if job.scores.path else path_of(OFFICIAL_ADULT_SCORES)
    started = time.perf_counter()
    columns = read_columns(
        scores_path, [job.scores.member_col, job.scores.baseline_col, *job.scores.mia_cols]
    )
    log.info(
        "read %s (%d rows) in %.2f s",
        scores_path,
        columns[job.scores.member_col].size,
        time.perf_counter() - started,
    )
    documents = []
    summary: dict[str, float] = {}
    for attack_col in job.scores.mia_cols:
        started = time.perf_counter()
        result = measure(
            columns[job.scores.member_col],
            baseline_scores=columns[job.scores.baseline_col],
            attack_scores=columns[attack_col],
            thresholds=job.audit.thresholds,
            confidence=job.audit.confidence,
            gamma=job.audit.gamma,
            delta=job.audit.delta,
            seed=job.seed,
        )
        elapsed = time.perf_counter() - started
        log.info(
            "%s: c_lb = %.3f, {c+ε}_lb = %.3f, ε̃ = %.3f (%s, %.2f s)",
            attack_col,
            result.c_lb,
            result.c_plus_eps_lb,
            result.eps_tilde,
            result.strategy,
            elapsed,
        )
        documents.append(
            {
                "attack_column": attack_col,
                "baseline_column": job.scores.baseline_col,
                "scores_file": str(scores_path),
                "seconds": elapsed,
            }
            | result.to_dict(include_table=result.strategy.kind == "grid")
        )
        summary[attack_col] = result.eps_tilde
    _write_json_atomic(output_dir / "measurement.json", documents)
    log.info("wrote %s", output_dir / "measurement.json")
    return summary


def _task(cfg: DictConfig) -> dict[str, float]:
    try:
        return run_job(cfg)
    except InputError as error:
        print(f"panoramia-audit: error: {error}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Console-script entry point: Hydra parses the command line (overrides, ``-m``)."""
    register_schemas()
    hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(_task)()
