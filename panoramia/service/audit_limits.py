"""Resource limits on a contributor's audit, checked on the composed config before it is queued.

A contributor may tune an audit (epochs, grids, thresholds), but not so far that one request
ties up the service: every limit is a setting (:class:`AuditLimits`, read from the
environment with documented defaults) and a request past one is answered 422 naming the key
and the limit. The per-audit wall-clock limit and the per-contributor cap on concurrent audits
are enforced by the worker and the store (:mod:`panoramia.service.execution`,
:meth:`panoramia.store.ReportStore.create_audit`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from panoramia.errors import InputError
from panoramia.measure.thresholds import ThresholdStrategy


@dataclass(frozen=True)
class AuditLimits:
    """The most a contributor's audit may ask for (environment variable in brackets)."""

    max_epochs: int = 500
    """Any ``epochs`` or ``*_epochs`` setting (``PANORAMIA_MAX_EPOCHS``)."""
    max_thresholds: int = 1000
    """K of ``grid:K`` thresholds, for the tests and for model selection
    (``PANORAMIA_MAX_THRESHOLDS``)."""
    max_grid: int = 16
    """Entries of a distinguisher's hyper-parameter grid (``PANORAMIA_MAX_GRID``)."""
    max_estimators: int = 5000
    """Any ``n_estimators`` (xgboost trees) (``PANORAMIA_MAX_ESTIMATORS``)."""
    max_n_jobs: int = 1
    """Any ``n_jobs``/``nthread``/``num_workers`` (``PANORAMIA_MAX_N_JOBS``); the service sets
    each audit's threads itself (``PANORAMIA_AUDIT_THREADS``)."""
    max_count: int = 1_000_000
    """Any other count of examples or steps (``n_rows``, ``n_images``, ``pool_size``,
    ``diffusion_steps``, …) (``PANORAMIA_MAX_COUNT``)."""
    audit_timeout_s: float = 6 * 3600
    """Wall-clock seconds an audit may run before it is stopped and failed
    (``PANORAMIA_AUDIT_TIMEOUT_S``)."""
    max_active_audits: int = 4
    """Queued or running audits per contributor (``PANORAMIA_MAX_ACTIVE_AUDITS``); one more
    is answered 429."""


THREAD_KEYS = {"n_jobs", "nthread", "num_workers", "threads"}
COUNT_KEYS = {
    "n_rows", "n_images", "n_chunks", "pool_size", "max_members", "pool_chunks",
    "samples_per_prompt", "generation_batch", "batch_size", "diffusion_steps", "sampling_steps",
    "max_chunks_per_document", "rounds", "steps", "max_new_tokens",
}  # fmt: skip
THRESHOLD_KEYS = {"thresholds", "selection_thresholds"}


def _leaves(node: object, where: str = "") -> Iterator[tuple[str, object]]:
    """``(dotted.key, value)`` of every leaf; list items as ``key[i]``."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _leaves(child, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for position, child in enumerate(node):
            yield from _leaves(child, f"{where}[{position}]")
    else:
        yield where, node


def _leaf_name(key: str) -> str:
    return key.rsplit(".", 1)[-1].split("[", 1)[0]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def check_limits(config: dict, limits: AuditLimits) -> None:
    """Raise :class:`InputError` ``"<key>: <value> is over the limit <n> (<SETTING>)"`` for the
    first setting of the composed ``config`` (an unresolved container: interpolations, which
    only the project's own configs contain, point at keys checked themselves) past a limit."""
    for key, value in _leaves(config):
        if key.startswith("claim."):
            continue  # the declared guarantee describes the model's training, not this audit
        name = _leaf_name(key)
        number = _number(value)
        if name in THRESHOLD_KEYS and isinstance(value, str) and not value.startswith("${"):
            strategy = ThresholdStrategy.parse(value)
            if strategy.kind == "grid" and (strategy.count or 0) > limits.max_thresholds:
                _over(key, value, limits.max_thresholds, "PANORAMIA_MAX_THRESHOLDS")
        elif number is None:
            continue
        elif name == "epochs" or name.endswith("_epochs"):
            if number > limits.max_epochs:
                _over(key, value, limits.max_epochs, "PANORAMIA_MAX_EPOCHS")
        elif name in THREAD_KEYS:
            if number > limits.max_n_jobs or number < 0:
                _over(key, value, limits.max_n_jobs, "PANORAMIA_MAX_N_JOBS")
        elif name == "n_estimators":
            if number > limits.max_estimators:
                _over(key, value, limits.max_estimators, "PANORAMIA_MAX_ESTIMATORS")
        elif (name in COUNT_KEYS or name.startswith("n_")) and number > limits.max_count:
            _over(key, value, limits.max_count, "PANORAMIA_MAX_COUNT")
    for group in ("distinguisher",):
        grid = (config.get(group) or {}).get("grid")
        if isinstance(grid, list) and len(grid) > limits.max_grid:
            _over(f"{group}.grid", f"{len(grid)} entries", limits.max_grid, "PANORAMIA_MAX_GRID")


def _over(key: str, value: object, limit: float, setting: str) -> None:
    raise InputError(f"{key}: {value} is over the service's limit {limit:g} ({setting})")
