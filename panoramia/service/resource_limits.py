"""Resource limits on a contributor's audit, checked on the composed config before it is queued.

A contributor may tune an audit (epochs, grids, thresholds), but not so far that one request
ties up the service: every limit is a setting (:class:`AuditLimits`, read from the
environment with documented defaults) and a request past one is answered 422 naming the key
and the limit. The per-audit wall-clock limit and the per-contributor cap on concurrent audits
are enforced by the worker and the store (:mod:`panoramia.service.worker.run`,
:meth:`panoramia.store.ReportStore.create_audit`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from panoramia.errors import InputError


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
    """Any other integer setting: counts of examples or steps (``n_rows``, ``n_images``,
    ``pool_size``, ``diffusion_steps``, batch sizes, …) (``PANORAMIA_MAX_COUNT``)."""
    max_width: int = 4096
    """Any layer width (``hidden`` entries, ``width``, ``n_embd``, ``d_model``)
    (``PANORAMIA_MAX_WIDTH``)."""
    max_layers: int = 64
    """``n_layer``, ``n_head``, ``depth`` and an xgboost grid's ``max_depth``
    (``PANORAMIA_MAX_LAYERS``)."""
    max_ensemble: int = 8
    """``audit.ensemble``: distinguishers (and stand-ins) per side (``PANORAMIA_MAX_ENSEMBLE``)."""
    audit_timeout_s: float = 6 * 3600
    """Wall-clock seconds an audit may run before it is stopped and failed
    (``PANORAMIA_AUDIT_TIMEOUT_S``)."""
    max_active_audits: int = 4
    """Queued or running audits per contributor (``PANORAMIA_MAX_ACTIVE_AUDITS``); one more
    is answered 429."""
    max_audit_cost: float = 5e14
    """Multiply-adds (:mod:`panoramia.service.submission.cost`) one contributor's queued and running
    audits may be estimated at together (``PANORAMIA_MAX_AUDIT_COST``): an audit estimated past
    it by itself is answered 422, one that would take her queued work past it 429. The
    default admits every recipe of the project's own short of paper-scale CIFAR-10 (about
    a few hours of one CPU core at most) and refuses eight 4096-wide layers for 500 epochs."""


THREAD_KEYS = {"n_jobs", "nthread", "num_workers", "threads"}
THRESHOLD_KEYS = {"thresholds", "selection_thresholds"}
WIDTH_KEYS = {"hidden", "width", "n_embd", "d_model", "hidden_size", "channels"}
LAYER_KEYS = {"n_layer", "n_head", "depth", "num_layers"}
GRID_KEYS = {
    "max_depth", "n_estimators", "learning_rate", "min_child_weight", "subsample",
    "colsample_bytree", "colsample_bylevel", "reg_lambda", "reg_alpha", "gamma", "max_bin",
    "n_jobs",
}  # fmt: skip
"""xgboost parameters a distinguisher grid entry may set (others, e.g. ``num_parallel_tree``
or ``device``, are the operator's)."""
MAX_BIN = 1024


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


def _number(value: object) -> int | float | None:
    """An int or float setting (numbers written as strings count: ``'99999999'``); None for
    anything else, an interpolation of the project's own configs included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str) and not value.startswith("${"):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def check_limits(config: dict, limits: AuditLimits) -> None:
    """Raise :class:`InputError` ``"<key>: <value> is over the service's limit <n>
    (<SETTING>)"`` for the first setting of the composed ``config`` past a limit.

    ``config`` is the unresolved container: interpolations come only from the project's own
    configs (a contributor's text never holds one) and point at keys checked themselves."""
    for key, value in _leaves(config):
        if key.startswith("claim."):
            continue  # the declared guarantee describes the model's training, not this audit
        _check_leaf(key, value, limits)
    grid = (config.get("distinguisher") or {}).get("grid")
    if isinstance(grid, list):
        if len(grid) > limits.max_grid:
            _over("distinguisher.grid", f"{len(grid)} entries", limits.max_grid,
                  "PANORAMIA_MAX_GRID")  # fmt: skip
        for position, entry in enumerate(grid):
            for name in entry if isinstance(entry, dict) else ():
                if name not in GRID_KEYS:
                    raise InputError(
                        f"distinguisher.grid[{position}].{name}: not a grid setting a "
                        f"contributor may choose (one of {', '.join(sorted(GRID_KEYS))})"
                    )
                value = entry[name]
                if not (isinstance(value, str) and value.startswith("${")) and (
                    _number(value) is None
                ):
                    raise InputError(
                        f"distinguisher.grid[{position}].{name}: expected a number, got "
                        f"{str(value)[:40]!r}"
                    )


def _check_leaf(key: str, value: object, limits: AuditLimits) -> None:
    name = _leaf_name(key)
    number = _number(value)
    if name in THRESHOLD_KEYS and isinstance(value, str) and not value.startswith("${"):
        kind, _, count = value.strip().partition(":")
        if kind == "grid" and count.strip().isdigit() and int(count) > limits.max_thresholds:
            _over(key, value, limits.max_thresholds, "PANORAMIA_MAX_THRESHOLDS")
        return  # the strategy itself is panoramia.audit_settings' to parse, checked first
    if number is None:
        return
    if isinstance(number, float) and not math.isfinite(number):
        raise InputError(f"{key}: {str(value)[:40]!r} is not a finite number")
    if name.endswith("seed"):
        if not -(2**63) <= number < 2**63:
            _over(key, value, 2**63 - 1, "a 64-bit seed")
        return
    rules = (
        (name == "epochs" or name.endswith("_epochs"), limits.max_epochs, "PANORAMIA_MAX_EPOCHS"),
        (name in THREAD_KEYS, limits.max_n_jobs, "PANORAMIA_MAX_N_JOBS"),
        (name == "n_estimators", limits.max_estimators, "PANORAMIA_MAX_ESTIMATORS"),
        (name in WIDTH_KEYS, limits.max_width, "PANORAMIA_MAX_WIDTH"),
        (name in LAYER_KEYS or name == "max_depth", limits.max_layers, "PANORAMIA_MAX_LAYERS"),
        (name == "max_bin", MAX_BIN, "xgboost max_bin"),
        (name == "ensemble", limits.max_ensemble, "PANORAMIA_MAX_ENSEMBLE"),
    )
    for applies, limit, setting in rules:
        if applies:
            if number > limit or number < 0:
                _over(key, value, limit, setting)
            return
    if isinstance(number, int) and abs(number) > limits.max_count:
        _over(key, value, limits.max_count, "PANORAMIA_MAX_COUNT")


def _over(key: str, value: object, limit: float, setting: str) -> None:
    shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:37]}..."
    raise InputError(f"{key}: {shown} is over the service's limit {limit:g} ({setting})")
