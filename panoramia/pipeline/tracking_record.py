"""What an audit logs to a tracker (``+logger=mlflow``): a run's params, metrics and tags,
read from its composed config and its ``report.json``, and a multirun parent's, read from
the sweep's reports. Pure functions; no tracker is imported here.

Params are the audit's settings as written (interpolations left as text, never resolved),
flattened to dotted keys; metrics are figures in nats or shares (None and non-finite values
left out); names and values are kept within MLflow's limits (:data:`MAX_KEY`,
:data:`MAX_PARAM`, :data:`MAX_TAG`). The metric names are listed in docs/AUDIT.md ("Logging
to MLflow").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from panoramia.pipeline.tracking_settings import NOT_AUDIT_SETTINGS

MAX_KEY = 250
"""The longest param, metric or tag name MLflow stores (``MAX_ENTITY_KEY_LENGTH``)."""
MAX_PARAM = 6000
"""The longest param value (``MAX_PARAM_VAL_LENGTH``)."""
MAX_TAG = 8000
"""The longest tag value (``MAX_TAG_VAL_LENGTH``)."""
NOT_A_NAME = re.compile(r"[^/\w.\- :]")
"""Characters MLflow refuses in a name (it takes letters, digits, ``_ . - / :`` and spaces)."""
LOW_FPRS = ("0.001", "0.01")
"""The false-positive rates of the attacker's TPR (``report.json``'s ``attacker`` keys)."""
SIDES = ("attack", "baseline")
SUMMARY_METRICS = {
    "eps_tilde": "eps_tilde", "c_lb": "c_lb", "c_plus_eps_lb": "c_plus_eps_lb",
    "o1": "o1.eps_lb", "rmrn": "rmrn.eps_lb", "eps_tilde_two_sided": "two_sided.eps_tilde",
    "rmrn_two_sided": "two_sided.rmrn.eps_lb", "mu_tilde": "gdp.mu_tilde",
    "rmrn_mu": "gdp.rmrn.mu_lb",
}  # fmt: skip
"""The multirun summary's quantities (:data:`panoramia.pipeline.summary.QUANTITIES` but the
quoted one, which the pooled verdict gives) under the names a run's metrics use."""


def name(text: str) -> str:
    """``text`` as an MLflow name: refused characters replaced by ``_``, at most
    :data:`MAX_KEY` characters."""
    return NOT_A_NAME.sub("_", text)[:MAX_KEY]


def _clip(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _flat(node: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(node, Mapping) and node:
        for key, child in node.items():
            yield from _flat(child, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def run_params(config: Mapping[str, Any]) -> dict[str, str]:
    """The audit's settings of the composed, *unresolved* ``config`` (a plain container; its
    ``hydra`` section and :data:`~panoramia.pipeline.tracking_settings.NOT_AUDIT_SETTINGS`
    left out) as params: dotted keys, texts as written, other values as JSON (lists whole);
    a value longer than :data:`MAX_PARAM` is cut with ``…`` (``report.json``, logged beside
    them, holds every setting whole)."""
    settings = {k: v for k, v in config.items() if k != "hydra" and k not in NOT_AUDIT_SETTINGS}
    params = {}
    for key, value in _flat(settings):
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        params[name(key)] = _clip(text, MAX_PARAM)
    return params


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _section(document: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    node: object = document
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _with_interval(found: dict[str, float], key: str, value: object, interval: object) -> None:
    """``key`` and, where ``interval`` is a [low, high] pair, ``key_low`` and ``key_high``."""
    number = _number(value)
    if number is None:
        return
    found[key] = number
    if isinstance(interval, Sequence) and not isinstance(interval, str) and len(interval) == 2:
        low, high = _number(interval[0]), _number(interval[1])
        if low is not None and high is not None:
            found[f"{key}_low"], found[f"{key}_high"] = low, high


def run_metrics(report: Mapping[str, Any]) -> dict[str, float]:
    """A run's figures (``report.json``): the quoted ε̃ (``eps_tilde_quoted``, with this run's
    interval ``_low``/``_high``), the in-audit null's p-value (``p_value``) and the decision's
    (``decision_p_value``, with the held-out rows' tests where they join it); the paper's
    one-sided game (``c_lb``, ``c_plus_eps_lb``, ``eps_tilde``) and the two-sided game's
    (``two_sided.*``); O(1) and RM;RN (``o1.eps_lb``, ``rmrn.eps_lb``) where they ran; μ̃
    (``gdp.mu_tilde``); the attacker's terms per side (``attack.*``, ``baseline.*``: AUC, TPR
    at 0.1 % and 1 % FPR where the counts resolve it, each with its interval, the advantage
    and the top precision); and ``m``, the audit set's size."""
    verdict = _section(report, "verdict")
    quote = _section(verdict, "quote")
    found: dict[str, float] = {}
    _with_interval(found, "eps_tilde_quoted", quote.get("value"), quote.get("interval"))
    for key, value in (
        ("p_value", _section(verdict, "null").get("p_value")),
        ("decision_p_value", _section(verdict, "decision").get("p_value")),
        ("c_lb", report.get("c_lb")),
        ("c_plus_eps_lb", report.get("c_plus_eps_lb")),
        ("eps_tilde", report.get("eps_tilde")),
        ("m", report.get("m")),
        ("o1.eps_lb", _section(report, "reference_audits", "o1").get("eps_lb")),
        ("rmrn.eps_lb", _section(report, "reference_audits", "rmrn").get("eps_lb")),
        ("gdp.mu_tilde", _section(report, "gdp").get("mu_tilde")),
    ):
        number = _number(value)
        if number is not None:
            found[key] = number
    two_sided = _section(report, "two_sided")
    for key in ("c_lb", "c_plus_eps_lb", "eps_tilde"):
        number = _number(two_sided.get(key))
        if number is not None:
            found[f"two_sided.{key}"] = number
    for side in SIDES:
        terms = _section(report, "attacker", side)
        _with_interval(found, f"{side}.auc", terms.get("auc"), terms.get("auc_interval"))
        rates, intervals = _section(terms, "tpr_at_fpr"), _section(terms, "tpr_at_fpr_interval")
        for fpr in LOW_FPRS:
            _with_interval(found, f"{side}.tpr_at_fpr_{fpr}", rates.get(fpr), intervals.get(fpr))
        for key in ("advantage", "top_precision"):
            number = _number(terms.get(key))
            if number is not None:
                found[f"{side}.{key}"] = number
    return found


def run_tags(report: Mapping[str, Any]) -> dict[str, str]:
    """A run's tags: ``verdict`` (the level, e.g. ``leak_detected``), ``verdict.headline``,
    ``quoted_game``, ``target``, ``modality``, ``seed``, and the verdict's sentence as the
    run's description (``mlflow.note.content``)."""
    verdict = _section(report, "verdict")
    tags = {
        "verdict": verdict.get("level"),
        "verdict.headline": verdict.get("headline"),
        "quoted_game": _section(verdict, "quote").get("game"),
        "target": _section(report, "target").get("name"),
        "modality": report.get("modality"),
        "seed": report.get("seed"),
        "panoramia.report_schema": report.get("schema_version"),
        "mlflow.note.content": verdict.get("sentence"),
    }
    return {key: _clip(str(value), MAX_TAG) for key, value in tags.items() if value is not None}


def _read_verdict(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's verdict read anew from its figures (as the pooled verdict's callers must:
    :mod:`panoramia.report.pooled`); None where they give none."""
    from panoramia.report.verdict import verdict

    try:
        return verdict(dict(document))
    except (KeyError, TypeError, ValueError):
        return None


def _group_prefix(group: str, groups: int) -> str:
    return "" if groups == 1 else name(group).replace("/", "_")[: MAX_KEY - 40] + "/"


def sweep_record(sweep_dir: Path) -> tuple[dict[str, float], dict[str, str]]:
    """A multirun parent's (metrics, tags), from the reports under ``sweep_dir``, per group of
    the summary (a target, and apart each value of another swept setting): the pooled verdict
    (docs/SPEC.md §3.2; :func:`panoramia.report.pooled.pooled_verdict` of each run's verdict):
    ``verdict`` tag, ``p_value``, ``eps_tilde_quoted`` with the runs' t-interval; ``runs`` and
    ``leak_called_runs``; each summary quantity's mean with its 95 % t-interval (``c_lb``,
    ``eps_tilde``, ``o1.eps_lb``, …, with ``_low``/``_high``); the attacker's TPR and AUC
    averaged over the runs that resolve them. One group: plain names, as a child's; several:
    each name after its group's (``mlp-e10/eps_tilde_quoted``)."""
    from panoramia.pipeline.summary import report_paths, summarise, sweep_runs
    from panoramia.report.pooled import pooled_verdict, run_reading

    reports = {path.parent: json.loads(path.read_text()) for path in report_paths(sweep_dir)}
    runs = sweep_runs(reports)
    summary = summarise(sweep_dir)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run.report)
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {"panoramia.groups": _clip(", ".join(groups), MAX_TAG)}
    for group, documents in groups.items():
        prefix = _group_prefix(group, len(groups))
        pooled = pooled_verdict([run_reading(_read_verdict(d)) for d in documents])
        quote = pooled.get("quote") or {}
        _with_interval(metrics, f"{prefix}eps_tilde_quoted", quote.get("mean"),
                       quote.get("interval"))  # fmt: skip
        metrics[f"{prefix}p_value"] = float(pooled["p_value"])
        metrics[f"{prefix}runs"] = float(pooled["runs"])
        metrics[f"{prefix}leak_called_runs"] = float(pooled["called"])
        tags[f"{prefix}verdict"] = str(pooled["level"])
        tags[f"{prefix}verdict.headline"] = str(pooled["headline"])
        if len(groups) == 1:
            tags["mlflow.note.content"] = _clip(str(pooled["sentence"]), MAX_TAG)
        figures = summary.get(group, {})
        for quantity, metric in SUMMARY_METRICS.items():
            stats = figures.get(quantity)
            if isinstance(stats, Mapping):
                _with_interval(metrics, prefix + metric, stats.get("mean"),
                               [stats.get("ci_low"), stats.get("ci_high")])  # fmt: skip
        each = [run_metrics(document) for document in documents]
        for side in SIDES:
            for term in (*(f"tpr_at_fpr_{fpr}" for fpr in LOW_FPRS), "auc"):
                key = f"{side}.{term}"
                values = [found[key] for found in each if key in found]
                if values:
                    metrics[prefix + key] = sum(values) / len(values)
    return metrics, tags
