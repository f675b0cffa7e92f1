"""``panoramia-audit``: the Hydra job (single run or ``-m`` multirun).

One run = one audit of one target with one seed: the stages of the pipeline that the job's
modality names in :mod:`panoramia.pipeline.registry` (tabular:
``panoramia/modalities/tabular/conf/config.yaml``; image:
``--config-name image``; text: ``--config-name text``), then ``report.json`` and
``report.html`` in the run directory. A multirun ends with a summary per
target (see :mod:`panoramia.pipeline.summary`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console
from rich.markup import escape

from panoramia.errors import InputError
from panoramia.pipeline.registry import (
    config_folders,
    modality_of_command_line,
    register_schemas,
)
from panoramia.plugins import modality
from panoramia.report.html import quote_text
from panoramia.report.reading import parse_report

if TYPE_CHECKING:
    from panoramia.pipeline.graph import AuditPipeline

log = logging.getLogger("panoramia.audit")
UNRELIABLE_NOTE = (
    "  [yellow]unreliable: the baseline's c_lb is 0, so ε̃ is the attack's raw bound[/]"
)
"""Appended to a game's console line when its baseline bound is 0 (docs/SPEC.md §2.2)."""


def _pin_threads(threads: int | None) -> None:
    if threads is None:
        return
    import torch

    torch.set_num_threads(threads)


def compute_environment() -> dict[str, int]:
    """What results depend on besides settings (docs/SPEC.md §3): torch's intra-op thread
    count, which orders float sums in training and inference (``threads=1`` and unset train
    different weights), so the two never share a stage."""
    import torch

    return {"torch_threads": torch.get_num_threads()}


def run_job(cfg: DictConfig) -> dict[str, object]:
    """Run the audit described by ``cfg``; returns the headline numbers."""
    from panoramia.audit_settings import check_settings
    from panoramia.pipeline.preflight import one_line
    from panoramia.pipeline.reporting import build_report
    from panoramia.pipeline.stages import StageRunner
    from panoramia.pipeline.store import ArtifactStore

    try:
        # The modality's job schema (a JobConfigBase subclass), known only at run time.
        job: Any = OmegaConf.to_object(cfg)
        settings = cast("dict[str, Any]", OmegaConf.to_container(cfg, resolve=True))
    except OmegaConfBaseException as error:  # an interpolation the preflight could not check
        raise InputError(f"config: {one_line(error)}") from None
    # Every setting's range and choice, and the rules across them (the claim, the threshold
    # strategies, the sides): a wrong one fails here, before any stage runs.
    check_settings(settings)
    from panoramia.pipeline.release_gate import check_gate_applied

    check_gate_applied(job.gate, HydraConfig.get())  # a gate no callback applies: refused
    Pipeline: type[AuditPipeline] = modality(job.modality).pipeline_class()
    if job.threads is not None:
        Pipeline.distinguisher_threads(job, job.threads)
    _pin_threads(job.threads)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    console = Console(stderr=True)  # progress: the stages as they run
    results = Console()  # the answer, on stdout (soft-wrapped: a pipe keeps lines whole)
    started = time.perf_counter()
    progress = os.environ.get("PANORAMIA_PROGRESS_FILE")
    runner = StageRunner(
        ArtifactStore(job.artifacts_dir),
        console=console,
        progress_file=Path(progress) if progress else None,
        environment=compute_environment(),
    )
    pipeline = Pipeline(job, runner)
    stages = pipeline.run()
    document = build_report(job, stages, runner, run_dir, pipeline.report_inputs(stages))
    elapsed = time.perf_counter() - started
    report = parse_report(document)
    reference = report.reference_audits
    found = report.verdict
    headline = {
        "target": job.target.name,
        "seed": job.seed,
        "c_lb": report.c_lb,
        "c_plus_eps_lb": report.c_plus_eps_lb,
        "eps_tilde": report.eps_tilde,
        "o1_eps_lb": reference.o1.eps_lb if reference.o1 else None,
        "rmrn_eps_lb": reference.rmrn.eps_lb if reference.rmrn else None,
        "eps_tilde_two_sided": report.two_sided.eps_tilde,
        "verdict": found.level,
        "p_value": found.null.p_value if found.null else None,
    }
    log.info("audit done in %.1f s: %s", elapsed, headline)
    results.print(  # the answer first, then the figures
        f"[bold]{job.target.name}[/] seed {job.seed}: [bold]{found.headline}[/] — "
        f"{escape(quote_text(document['verdict']))}  ({elapsed:.0f} s)\n  "
        f"{escape(found.sentence)}",
        soft_wrap=True,  # a pipe or a log keeps each line whole
        markup=True,
    )
    for caveat in found.caveats:  # what this audit's size could not show
        if caveat.startswith("At this size"):
            results.print(f"  {caveat}", soft_wrap=True, markup=False)
    results.print(
        f"  paper's game: c_lb = {report.c_lb:.3f}, "
        f"{{c+ε}}_lb = {report.c_plus_eps_lb:.3f}, [bold]ε̃ = {report.eps_tilde:.3f}"
        "[/]" + (UNRELIABLE_NOTE if report.unreliable else ""),
        soft_wrap=True,
    )
    two_sided = report.two_sided
    if two_sided.eps_tilde is not None:
        results.print(
            f"  two-sided game (docs/SPEC.md §2.6): c_lb = "
            f"{two_sided.c_lb or 0.0:.3f}, {{c+ε}}_lb = {two_sided.c_plus_eps_lb or 0.0:.3f}, "
            f"ε̃ = {two_sided.eps_tilde:.3f}" + (UNRELIABLE_NOTE if two_sided.unreliable else ""),
            soft_wrap=True,
        )
    # A path is never wrapped: it must stay one line to copy (or to grep in a log).
    results.print(f"report: {run_dir / 'report.html'}", soft_wrap=True, markup=False)
    return headline


def _task(cfg: DictConfig) -> dict[str, object]:
    try:
        return run_job(cfg)
    except InputError as error:
        print(f"panoramia-audit: error: {error}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Console-script entry point: Hydra parses the command line (overrides, ``-m``)."""
    from panoramia.lifeline import die_with_parent
    from panoramia.pipeline.preflight import check_command_line

    die_with_parent()
    chosen = modality_of_command_line(sys.argv[1:])  # None: an unknown primary config
    register_schemas(None if chosen is None else [chosen.name])
    folders = config_folders()
    if not any(flag in sys.argv[1:] for flag in ("--help", "-h", "--hydra-help", "--info")):
        try:
            check_command_line(folders, sys.argv[1:])
        except InputError as error:
            print(f"panoramia-audit: error: {error}", file=sys.stderr)
            sys.exit(2)
    # the plug-ins' own config folders join through Hydra's search-path plug-in
    # (hydra_plugins/panoramia_configs)
    hydra.main(version_base="1.3", config_path=str(folders[0]), config_name="config")(_task)()


if __name__ == "__main__":
    main()
