"""One classifier's precision sweep (docs/SPEC.md §2.2): counts per threshold, the maximal bound.

``sweep`` sorts the scores once, takes (r, v) for every threshold from prefix sums and finds the
threshold with the largest θ_lb exactly. The full per-threshold θ_lb column is one vectorised
Beta-quantile call, computed when first read (``ThresholdTable.theta_lb``); the maximiser itself
needs the quantile only at the thresholds that can win (see :func:`argmax_theta_lb`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
from scipy.special import expit, logit, ndtri

from panoramia.measure.bounds import rejects, saturation_ceiling, theta_lb
from panoramia.measure.jsonable import number, numbers
from panoramia.measure.relaxed import relaxed_theta_lb
from panoramia.measure.roc import RocSummary, roc_from_sorted
from panoramia.measure.thresholds import (
    SortedScores,
    ThresholdStrategy,
    grid_thresholds,
    split_indices,
)

_CANDIDATES = 256
"""Thresholds whose exact bound is computed before the verification pass."""
_TIE_MARGIN = 1e-9
"""Thresholds within this margin (nats) of the best are computed exactly, so ties break alike."""


@dataclass(frozen=True)
class OperatingPoint:
    """One tested threshold: guess member iff score passes ``threshold``."""

    threshold: float
    r: int
    """Guesses (predicted members)."""
    v: int
    """Correct guesses (true members among them)."""
    n_positive: int
    """Members in the tested set (recall's denominator)."""
    theta_lb: float
    """Lower bound on θ (c for the baseline, c + ε for the attack), nats."""
    ceiling: float
    """Saturation ceiling for r guesses: no bound from r guesses exceeds it."""

    @property
    def precision(self) -> float:
        return self.v / self.r if self.r else float("nan")

    @property
    def recall(self) -> float:
        return self.v / self.n_positive

    @property
    def saturated(self) -> bool:
        """Precision 1: the bound counts error-free guesses rather than a precision gap."""
        return self.r > 0 and self.v == self.r

    def to_dict(self) -> dict[str, object]:
        return {
            "theta_lb": number(self.theta_lb),
            "threshold": number(self.threshold),
            "r": self.r,
            "v": self.v,
            "precision": number(self.precision),
            "recall": number(self.recall),
            "ceiling": number(self.ceiling),
            "saturated": self.saturated,
        }


@dataclass(frozen=True)
class ThresholdTable:
    """Counts for every threshold tried, ascending τ. Arrays of shape (K,)."""

    tau: np.ndarray
    r: np.ndarray
    v: np.ndarray
    n_positive: int
    alpha: float
    """Level of each test (β / (tests · K)); θ_lb and the ceiling are at this level."""

    @property
    def precision(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.r > 0, self.v / np.maximum(self.r, 1), np.nan)

    @property
    def recall(self) -> np.ndarray:
        return self.v / self.n_positive

    @cached_property
    def theta_lb(self) -> np.ndarray:
        """Exact θ_lb (γ = δ = 0) at every threshold: one vectorised Beta-quantile call."""
        return theta_lb(self.r, self.v, self.alpha)

    @property
    def ceiling(self) -> np.ndarray:
        return saturation_ceiling(self.r, self.alpha)

    def to_dict(self) -> dict[str, list[float | int | bool | None]]:
        return {
            "tau": numbers(self.tau),
            "r": numbers(self.r),
            "v": numbers(self.v),
            "precision": numbers(self.precision),
            "recall": numbers(self.recall),
            "theta_lb": numbers(self.theta_lb),
            "ceiling": numbers(self.ceiling),
        }


@dataclass(frozen=True)
class SweepResult:
    """The sweep of one classifier (baseline or attack)."""

    strategy: ThresholdStrategy
    alpha: float
    slack: float
    """γ (baseline) or γ + δ − γδ (attack); 0 for the exact test."""
    table: ThresholdTable
    """Thresholds tried to choose τ (for ``split``: on the choose part only)."""
    best: OperatingPoint
    """The maximiser, counted on the tested set (for ``split``: the test part)."""
    roc: RocSummary
    """ROC of the scores on the tested set."""

    def to_dict(self, *, include_table: bool = False) -> dict[str, object]:
        out: dict[str, object] = self.best.to_dict() | {"roc": self.roc.to_dict()}
        if include_table:
            out["table"] = self.table.to_dict()
        return out


def _wilson_logit(r: np.ndarray, v: np.ndarray, alpha: float) -> npt.NDArray[np.float64]:
    """Cheap normal-approximation stand-in for θ_lb, used only to rank candidates."""
    z = ndtri(1.0 - alpha)
    n = r.astype(np.float64)
    p = v / n
    centre = p + z * z / (2 * n)
    spread = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = np.clip((centre - spread) / (1 + z * z / n), 1e-300, 1 - 1e-16)
    logits: npt.NDArray[np.float64] = logit(low)  # scipy.special is untyped
    return logits


def argmax_theta_lb(r: np.ndarray, v: np.ndarray, alpha: float) -> tuple[int, float]:
    """Index and value of max θ_lb(r, v, alpha) over thresholds; ties go to the smallest index.

    Exact without evaluating every quantile: the bound is computed at the most promising
    thresholds, then one vectorised tail evaluation proves that no other threshold beats the
    best found (:func:`bounds.rejects`); any that might are computed exactly, and the check
    repeats. Gives the same index and value as ``argmax(theta_lb(r, v, alpha))``.
    """
    r = np.asarray(r, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    # θ_lb <= logit(v / r) (a Clopper–Pearson lower bound never exceeds the estimate), so only
    # thresholds with precision above 1/2 can give θ_lb > 0.
    open_ = 2 * v > r
    if not open_.any():
        return 0, 0.0
    exact = np.full(r.shape, -np.inf)
    open_idx = np.flatnonzero(open_)
    proxy = _wilson_logit(r[open_idx], v[open_idx], alpha)
    n_first = min(_CANDIDATES, open_idx.size)
    first = open_idx[np.argpartition(-proxy, n_first - 1)[:n_first]]
    exact[first] = theta_lb(r[first], v[first], alpha)
    open_[first] = False
    while True:
        best = max(0.0, float(exact.max()))
        bar = best - _TIE_MARGIN if best > 0.0 else 0.0
        pending = np.flatnonzero(open_)
        # θ_lb > bar needs precision v / r > sigmoid(bar): a free filter before the exact test.
        pending = pending[v[pending] > r[pending] * expit(bar)]
        contenders = pending[rejects(r[pending], v[pending], theta=bar, alpha=alpha)]
        if contenders.size == 0:
            if best == 0.0:
                return 0, 0.0  # every bound is 0; ties go to the first threshold
            index = int(np.argmax(exact))
            return index, float(exact[index])
        exact[contenders] = theta_lb(r[contenders], v[contenders], alpha)
        open_[contenders] = False


def _relaxed_argmax(table: ThresholdTable, *, m: int, slack: float) -> tuple[int, float]:
    """Maximiser of the relaxed bound (branch and bound over the exact bounds, which cap it)."""
    exact = table.theta_lb
    best_index, best = 0, 0.0
    for index in np.argsort(-exact, kind="stable"):
        if exact[index] <= best:
            break
        value = relaxed_theta_lb(
            int(table.r[index]), int(table.v[index]), table.alpha, m=m, slack=slack
        )
        if value > best or (value == best and index < best_index):
            best_index, best = int(index), value
    return best_index, best


def _table(
    sorted_scores: SortedScores, strategy: ThresholdStrategy, alpha: float
) -> ThresholdTable:
    if strategy.kind == "grid":
        assert strategy.count is not None
        tau = grid_thresholds(strategy.count)
        r, v = sorted_scores.counts(tau, inclusive=False)
    else:
        tau, r, v = sorted_scores.distinct
    return ThresholdTable(tau=tau, r=r, v=v, n_positive=sorted_scores.n_positive, alpha=alpha)


def _bound(r: int, v: int, alpha: float, *, m: int, slack: float) -> float:
    if slack > 0:
        return relaxed_theta_lb(r, v, alpha, m=m, slack=slack)
    return float(theta_lb(r, v, alpha))


def sweep(
    scores: np.ndarray,
    membership: np.ndarray,
    *,
    strategy: ThresholdStrategy,
    alpha: float,
    slack: float = 0.0,
    seed: int = 0,
) -> SweepResult:
    """Sweep thresholds over validated ``scores`` (higher = member) against 0/1 ``membership``.

    ``alpha`` is the level of each single test, already divided by the number of tests and
    thresholds. ``slack`` > 0 uses the relaxed p-value of docs/SPEC.md §2.3 with m = the tested
    set's size. For ``split:f``, τ is chosen on a seeded fraction f of the rows (by the exact
    bound at ``alpha``) and tested once on the other rows; the test rows never influence the
    choice.
    """
    if strategy.kind == "split":
        assert strategy.fraction is not None
        choose, test = split_indices(scores.size, strategy.fraction, seed)
        table = _table(SortedScores.build(scores[choose], membership[choose]), strategy, alpha)
        index, _ = argmax_theta_lb(table.r, table.v, alpha)
        tau = float(table.tau[index])
        scores, membership = scores[test], membership[test]
        tested = SortedScores.build(scores, membership)
        r_arr, v_arr = tested.counts(np.array([tau]), inclusive=True)
        r, v = int(r_arr[0]), int(v_arr[0])
        value = _bound(r, v, alpha, m=scores.size, slack=slack)
    else:
        tested = SortedScores.build(scores, membership)
        table = _table(tested, strategy, alpha)
        if slack > 0:
            index, value = _relaxed_argmax(table, m=scores.size, slack=slack)
        else:
            index, value = argmax_theta_lb(table.r, table.v, alpha)
        tau, r, v = float(table.tau[index]), int(table.r[index]), int(table.v[index])
    best = OperatingPoint(
        threshold=tau,
        r=r,
        v=v,
        n_positive=tested.n_positive,
        theta_lb=value,
        ceiling=float(saturation_ceiling(r, alpha)),
    )
    return SweepResult(
        strategy=strategy,
        alpha=alpha,
        slack=slack,
        table=table,
        best=best,
        roc=roc_from_sorted(tested),
    )
