"""The release gate as the job and the ``panoramia gate`` command apply it (docs/AUDIT.md, "The
release gate"): a policy (:mod:`panoramia.pipeline.gate_policies`) on one run's
``report.json`` or on a multirun's pooled verdicts, its lines printed, ``gate.xml`` (JUnit)
written, the GitHub step summary appended to where ``$GITHUB_STEP_SUMMARY`` names, and the exit
status: :data:`~panoramia.report.gate.PASSED` (0), :data:`~panoramia.report.gate.FAILED` (1);
bad input (a bad policy, a path that holds no report) is one line and 2.

The job's ``gate`` setting is read by the Hydra callback :class:`ReleaseGate`, listed first in
``conf/run/default.yaml`` so that Hydra, which ends callbacks in reverse order, ends it last: a
single run's gate is applied once the run has ended (the MLflow callback has ended its run), a
multirun's once ``summary.md`` is written and the MLflow parent run is ended, and only then does
the process exit 1. A policy is checked when the run or the sweep starts: a bad one costs no
audit. A gate that cannot be applied (an unreadable report) never passes: one line and 1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from panoramia.errors import InputError
from panoramia.measure.jsonable import JSONDict
from panoramia.pipeline.gate_policies import NamedPolicy, load_policy
from panoramia.report.gate import FAILED, PASSED, GateOutcome, evaluate
from panoramia.report.gate_figures import checked_report, pooled_figures, run_figures
from panoramia.report.gate_output import gate_lines, junit_xml, step_summary

GATE_FILE = "gate.xml"
"""The JUnit XML document, beside ``report.json`` (a run) or ``summary.md`` (a multirun)."""
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
"""GitHub Actions' file for a step's summary (Markdown appended), where set."""
MAX_REPORT_BYTES = 64 * 1024 * 1024
"""The largest ``report.json`` the gate reads."""


@dataclass(frozen=True)
class GateResult:
    """A policy applied to one or more audits."""

    policy: NamedPolicy
    outcomes: tuple[GateOutcome, ...]

    @property
    def passed(self) -> bool:
        return all(outcome.passed for outcome in self.outcomes)

    @property
    def status(self) -> int:
        """The exit status: :data:`PASSED` or :data:`FAILED`."""
        return PASSED if self.passed else FAILED

    def lines(self) -> list[str]:
        return gate_lines(self.policy.name, self.outcomes)


def read_report(path: Path) -> JSONDict:
    """The report document in ``path``, checked (:func:`~panoramia.report.gate_figures.
    checked_report`); :class:`InputError` naming the file."""
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            raise InputError(f"{path}: larger than {MAX_REPORT_BYTES >> 20} MiB; not a report")
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    return checked_report(document, source=str(path))


def report_subject(document: JSONDict) -> str:
    """What one run audited, as the gate's lines name it: ``mlp-e100 seed 0``."""
    target = document.get("target")
    name = target.get("name") if isinstance(target, dict) else None
    return f"{name or 'target'} seed {document.get('seed')}"


def run_outcome(named: NamedPolicy, document: JSONDict, *, source: str) -> GateOutcome:
    """The policy on one checked report."""
    subject = report_subject(document)
    return evaluate(named.policy, run_figures(document, subject=subject, source=source))


def sweep_outcomes(named: NamedPolicy, sweep_dir: Path) -> tuple[GateOutcome, ...]:
    """The policy on each group of a multirun (the summary's: a target and the settings not
    every run shares), on the group's pooled verdict; negative controls (groups whose every run
    is one) are not gated. :class:`InputError` where the sweep holds no report, a job without
    one (it failed, or still runs), or only controls."""
    from panoramia.pipeline.summary import report_paths, sweep_runs

    paths = report_paths(sweep_dir)
    if not paths:
        raise InputError(f"{sweep_dir}: no run's report.json under it (*/report.json)")
    unfinished = sorted(
        job.name
        for job in sweep_dir.iterdir()
        if (job / ".hydra").is_dir() and not (job / "report.json").is_file()
    )
    if unfinished:  # a job that failed or still runs: the sweep cannot be gated as a whole
        raise InputError(
            f"{sweep_dir}: run {unfinished[0]} has no report.json ({len(unfinished)} "
            "unfinished); gate a sweep whose every job ended"
        )
    runs = sweep_runs({path.parent: read_report(path) for path in paths})
    groups: dict[str, list[Any]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    gated = {name: rows for name, rows in groups.items() if not all(r.control for r in rows)}
    if not gated:
        raise InputError(f"{sweep_dir}: every run is a negative control; nothing to gate")
    return tuple(
        evaluate(
            named.policy,
            pooled_figures(
                [(run.directory.name, run.report) for run in rows],
                subject=name,
                source=str(sweep_dir),
            ),
        )
        for name, rows in gated.items()
    )


def path_outcomes(named: NamedPolicy, path: Path) -> tuple[tuple[GateOutcome, ...], Path]:
    """The policy on what ``path`` names — a ``report.json``, a run directory holding one, a
    multirun's ``summary.json`` or its sweep directory — and the folder ``gate.xml`` belongs
    in. :class:`InputError` for a path that is none of these."""
    if path.is_dir():
        if (path / "report.json").is_file():
            path = path / "report.json"
        elif (path / "summary.json").is_file() or any(path.glob("*/report.json")):
            return sweep_outcomes(named, path), path
        else:
            raise InputError(f"{path}: holds no report.json, summary.json or runs' reports")
    elif not path.is_file():
        raise InputError(f"{path}: no such file or directory")
    if path.name == "summary.json":
        return sweep_outcomes(named, path.parent), path.parent
    if path.suffix.lower() != ".json":
        raise InputError(f"{path}: a report.json, a run directory or a multirun's summary.json")
    return (run_outcome(named, read_report(path), source=str(path)),), path.parent


def write_outputs(result: GateResult, junit: Path | None) -> None:
    """``junit`` (if given) as the JUnit XML document, and the step summary appended to
    ``$GITHUB_STEP_SUMMARY`` where it is set."""
    if junit is not None:
        try:
            junit.write_text(junit_xml(result.policy.name, result.outcomes), encoding="utf-8")
        except OSError as error:
            raise InputError(f"{junit}: cannot be written ({error.strerror or error})") from None
    summary = os.environ.get(STEP_SUMMARY_ENV)
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(step_summary(result.policy.name, result.outcomes))
        except OSError as error:
            raise InputError(
                f"${STEP_SUMMARY_ENV}: {summary}: cannot be written ({error.strerror or error})"
            ) from None


def announce(result: GateResult, junit: Path | None) -> int:
    """Print the result's lines (stdout), write its files (:func:`write_outputs`); the exit
    status."""
    for line in result.lines():
        print(line, flush=True)
    write_outputs(result, junit)
    return result.status


# -- the job's ``gate`` setting ------------------------------------------------------------


def gate_setting(config: DictConfig) -> NamedPolicy | None:
    """The policy the job's ``gate`` names, as written (an interpolation is refused, not
    resolved); None where it is unset. :class:`InputError` for a bad one."""
    if "gate" not in config:
        return None
    section = OmegaConf.to_container(OmegaConf.masked_copy(config, ["gate"]), resolve=False)
    raw = section.get("gate") if isinstance(section, dict) else None
    return None if raw is None else load_policy(raw)


CALLBACK = f"{__name__}.ReleaseGate"
"""The callback's ``_target_`` in ``hydra.callbacks``."""


def check_gate_applied(job_gate: object, hydra_config: Any) -> None:
    """:class:`InputError` where the job sets ``gate`` but Hydra's callbacks (in
    ``hydra_config``, ``HydraConfig.get()``: the config's ``hydra`` section) hold no
    :class:`ReleaseGate` (a removed ``hydra.callbacks.gate``): nothing would apply the gate,
    and the run would exit 0 whatever the audit found."""
    if job_gate is None:
        return
    callbacks = OmegaConf.select(hydra_config, "callbacks") or {}
    if not any(str(entry.get("_target_")) == CALLBACK for entry in callbacks.values()):
        raise InputError(
            f"gate: set, but hydra.callbacks holds no {CALLBACK} (conf/run/default.yaml's "
            "hydra.callbacks.gate); nothing would apply the gate"
        )


def _swept(config: DictConfig) -> bool:
    """Whether the command line sweeps ``gate`` (``gate=strict,lenient``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = [str(item) for item in OmegaConf.select(config, "hydra.overrides.task") or []]
    try:
        parsed = OverridesParser.create().parse_overrides(given)
    except Exception:  # Hydra has already parsed them; nothing to add here
        return False
    return any(o.get_key_element().lstrip("+~") == "gate" and o.is_sweep_override() for o in parsed)


def _refuse(error: InputError) -> NoReturn:
    print(f"panoramia-audit: error: {error}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _not_applied(error: Exception) -> NoReturn:
    """A gate that could not be applied fails (never a pass by default)."""
    text = " ".join(str(error).split()) or type(error).__name__
    print(f"panoramia-audit: error: gate: not applied ({text}); the gate fails", file=sys.stderr,
          flush=True)  # fmt: skip
    raise SystemExit(FAILED)


class ReleaseGate(Callback):
    """The Hydra callback that applies the job's ``gate`` (see the module's docstring)."""

    def __init__(self) -> None:
        self._policy: NamedPolicy | None = None

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            self._policy = gate_setting(config)
        except InputError as error:
            _refuse(error)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            if _swept(config):
                raise InputError("gate: one policy per multirun; it is not swept")
            self._policy = gate_setting(config)
        except InputError as error:
            _refuse(error)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        named, job_return = self._policy, kwargs.get("job_return")
        if named is None or not isinstance(job_return, JobReturn):
            return
        if job_return.status != JobStatus.COMPLETED:
            return  # a failed job ends with its own error and status
        hydra_config = job_return.hydra_cfg or config
        run_dir = Path(str(OmegaConf.select(hydra_config, "hydra.runtime.output_dir")))
        try:
            report = run_dir / "report.json"
            result = GateResult(named, (run_outcome(named, read_report(report),
                                                    source=str(report)),))  # fmt: skip
            status = announce(result, run_dir / GATE_FILE)
        except Exception as error:  # Hydra would make any error a warning and exit 0
            _not_applied(error)
        if status != PASSED:
            raise SystemExit(status)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        named = self._policy
        if named is None:
            return
        sweep_dir = Path(str(config.hydra.sweep.dir))
        try:
            result = GateResult(named, sweep_outcomes(named, sweep_dir))
            status = announce(result, sweep_dir / GATE_FILE)
        except Exception as error:  # Hydra would make any error a warning and exit 0
            _not_applied(error)
        if status != PASSED:
            raise SystemExit(status)


def gate_documents(
    named: NamedPolicy,
    documents: Sequence[tuple[str, JSONDict | None]],
    *,
    subject: str,
    source: str,
) -> GateResult:
    """The policy on documents fetched from the service (``panoramia audits submit --gate``):
    one ``(name, document)`` is one run; several are the repeats of one audit, pooled (a
    document None: a run that left no report). Each document is checked first."""
    checked = [
        (name, None if document is None else checked_report(document, source=f"{source}: {name}"))
        for name, document in documents
    ]
    if len(checked) == 1 and checked[0][1] is not None:
        figures = run_figures(checked[0][1], subject=subject, source=source)
    else:
        figures = pooled_figures(checked, subject=subject, source=source)
    return GateResult(named, (evaluate(named.policy, figures),))
