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
from collections.abc import Mapping
from dataclasses import dataclass

from panoramia.audit_settings import bounds_of, leaves, setting_key
from panoramia.errors import InputError
from panoramia.setting_bounds import Bound, Limit


@dataclass(frozen=True)
class AuditLimits:
    """The most a contributor's audit may ask for (environment variable in brackets)."""

    max_epochs: int = 500
    """Settings that declare ``Limit.EPOCHS`` beside their field (``PANORAMIA_MAX_EPOCHS``)."""
    max_thresholds: int = 1000
    """K of ``grid:K`` thresholds, for the tests and for model selection
    (``PANORAMIA_MAX_THRESHOLDS``)."""
    max_grid: int = 16
    """Entries of a distinguisher's hyper-parameter grid (``PANORAMIA_MAX_GRID``)."""
    max_estimators: int = 5000
    """Settings that declare ``Limit.ESTIMATORS`` (xgboost trees), a grid's ``n_estimators``
    (``PANORAMIA_MAX_ESTIMATORS``)."""
    max_n_jobs: int = 1
    """Settings that declare ``Limit.THREADS`` (``threads``, ``n_jobs``, ``num_workers``), a
    grid's ``n_jobs`` (``PANORAMIA_MAX_N_JOBS``); the service sets each audit's threads itself
    (``PANORAMIA_AUDIT_THREADS``)."""
    max_count: int = 1_000_000
    """Any other integer setting: counts of examples or steps (``n_rows``, ``n_images``,
    ``pool_size``, ``diffusion_steps``, batch sizes, …) (``PANORAMIA_MAX_COUNT``)."""
    max_width: int = 4096
    """Settings that declare ``Limit.WIDTH``: layer widths (``hidden`` entries, ``width``,
    ``n_embd``, ``d_model``) (``PANORAMIA_MAX_WIDTH``)."""
    max_layers: int = 64
    """Settings that declare ``Limit.LAYERS`` (``n_layer``, ``n_head``, ``target.max_depth``)
    and an xgboost grid's ``max_depth`` (``PANORAMIA_MAX_LAYERS``)."""
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


GRID_LIMITS = {"max_depth": Limit.LAYERS, "n_estimators": Limit.ESTIMATORS, "n_jobs": Limit.THREADS}
"""The limit of each xgboost parameter of a distinguisher grid entry that has one (the
schema's settings declare theirs beside their fields, :mod:`panoramia.setting_bounds`)."""
GRID_KEYS = {
    "max_depth", "n_estimators", "learning_rate", "min_child_weight", "subsample",
    "colsample_bytree", "colsample_bylevel", "reg_lambda", "reg_alpha", "gamma", "max_bin",
    "n_jobs",
}  # fmt: skip
"""xgboost parameters a distinguisher grid entry may set (others, e.g. ``num_parallel_tree``
or ``device``, are the operator's)."""
MAX_BIN = 1024


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
    configs (a contributor's text never holds one) and point at keys checked themselves. The
    limit a setting falls under is the one its schema declares (:func:`limit_of`)."""
    bounds = bounds_of(config.get("modality"))
    for key, value in leaves(config):
        if key.startswith("claim."):
            continue  # the declared guarantee describes the model's training, not this audit
        _check_leaf(key, value, limits, limit_of(key, bounds))
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


def limit_of(key: str, bounds: Mapping[str, tuple[Bound, ...]]) -> Limit | str | None:
    """The service's limit on the setting ``key`` (``target.hidden[0]``): the one its
    schema declares in ``bounds`` (:func:`panoramia.audit_settings.bounds_of`), or, for a
    distinguisher grid entry's xgboost parameter, :data:`GRID_LIMITS` (``"max_bin"`` for
    its own bound); None: none but the count's, for an integer."""
    if ".grid[" in key:
        name = key.rsplit(".", 1)[-1]
        return "max_bin" if name == "max_bin" else GRID_LIMITS.get(name)
    declared = [bound.limit for bound in bounds.get(setting_key(key), ()) if bound.limit]
    return declared[0] if declared else None


def _check_leaf(key: str, value: object, limits: AuditLimits, limit: Limit | str | None) -> None:
    number = _number(value)
    if limit == Limit.THRESHOLDS and isinstance(value, str) and not value.startswith("${"):
        kind, _, count = value.strip().partition(":")
        if kind == "grid" and count.strip().isdigit() and int(count) > limits.max_thresholds:
            _over(key, value, limits.max_thresholds, "PANORAMIA_MAX_THRESHOLDS")
        return  # the strategy itself is panoramia.audit_settings' to parse, checked first
    if number is None:
        return
    if isinstance(number, float) and not math.isfinite(number):
        raise InputError(f"{key}: {str(value)[:40]!r} is not a finite number")
    if limit == Limit.SEED:
        if not -(2**63) <= number < 2**63:
            _over(key, value, 2**63 - 1, "a 64-bit seed")
        return
    bounded = (
        {
            Limit.EPOCHS: (limits.max_epochs, "PANORAMIA_MAX_EPOCHS"),
            Limit.THREADS: (limits.max_n_jobs, "PANORAMIA_MAX_N_JOBS"),
            Limit.ESTIMATORS: (limits.max_estimators, "PANORAMIA_MAX_ESTIMATORS"),
            Limit.WIDTH: (limits.max_width, "PANORAMIA_MAX_WIDTH"),
            Limit.LAYERS: (limits.max_layers, "PANORAMIA_MAX_LAYERS"),
            Limit.ENSEMBLE: (limits.max_ensemble, "PANORAMIA_MAX_ENSEMBLE"),
            "max_bin": (MAX_BIN, "xgboost max_bin"),
        }.get(limit)
        if limit is not None
        else None
    )
    if bounded is not None:
        most, setting = bounded
        if number > most or number < 0:
            _over(key, value, most, setting)
        return
    if isinstance(number, int) and abs(number) > limits.max_count:
        _over(key, value, limits.max_count, "PANORAMIA_MAX_COUNT")


def _over(key: str, value: object, limit: float, setting: str) -> None:
    shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:37]}..."
    raise InputError(f"{key}: {shown} is over the service's limit {limit:g} ({setting})")
