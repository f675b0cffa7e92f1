"""Checks on membership labels and scores; every failure raises :class:`InputError`."""

from __future__ import annotations

import numpy as np

from panoramia.errors import InputError


def check_membership(membership: object, *, name: str = "membership") -> np.ndarray:
    """Return ``membership`` as an int8 vector of 0/1 (1 = member, the positive class).

    Raises InputError when it is empty, not one-dimensional, holds NaN or values other than
    0/1, or holds a single class (the audit needs members and non-members).
    """
    values = np.asarray(membership)
    if values.ndim != 1:
        raise InputError(f"{name}: expected a 1-D vector of 0/1 labels, got shape {values.shape}")
    if values.size == 0:
        raise InputError(f"{name}: no rows")
    if values.dtype == bool:
        labels = values.astype(np.int8)
    else:
        try:
            numeric = values.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{name}: labels must be 0/1, got non-numeric values") from None
        bad = ~np.isin(numeric, (0.0, 1.0))
        if bad.any():
            raise InputError(
                f"{name}: labels must be 0 (non-member) or 1 (member); "
                f"{int(bad.sum())} rows hold other values, e.g. {values[bad][0]!r}"
            )
        labels = numeric.astype(np.int8)
    n_members = int(labels.sum())
    if n_members in (0, labels.size):
        only = "members (all 1)" if n_members else "non-members (all 0)"
        raise InputError(f"{name}: holds only {only}; the audit needs both classes")
    return labels


def check_scores(scores: object, *, name: str, n: int) -> np.ndarray:
    """Return ``scores`` as a float64 vector of length ``n`` (higher = more member-like).

    Raises InputError on a wrong shape or length, non-numeric values, NaN or ±inf.
    """
    values = np.asarray(scores)
    if values.ndim != 1:
        raise InputError(f"{name}: expected a 1-D vector of scores, got shape {values.shape}")
    if values.size != n:
        raise InputError(f"{name}: {values.size} scores for {n} membership labels")
    try:
        values = values.astype(np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name}: scores must be numeric") from None
    finite = np.isfinite(values)
    if not finite.all():
        n_nan = int(np.isnan(values).sum())
        n_inf = int((~finite).sum()) - n_nan
        raise InputError(f"{name}: {n_nan} NaN and {n_inf} infinite scores; all must be finite")
    return values


def check_confidence(confidence: float) -> float:
    """Return the confidence level 1 − β, which must lie strictly between 0 and 1."""
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence: must lie strictly between 0 and 1, got {confidence}")
    return float(confidence)


def check_slack(value: float, *, name: str) -> float:
    """Return a relaxation parameter (γ or δ), which must lie in [0, 1)."""
    if not 0.0 <= value < 1.0:
        raise InputError(f"{name}: must lie in [0, 1), got {value}")
    return float(value)
