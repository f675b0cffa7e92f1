"""Threshold strategies of docs/SPEC.md §2.2 and vectorised counts (r, v) for every threshold.

| spec      | thresholds                                        | rule            | tests K |
|-----------|---------------------------------------------------|-----------------|---------|
| `grid:K`  | ``linspace(0, 1, K)`` on probabilities             | score >  τ      | K       |
| `all`     | every distinct score                              | score >= τ      | m       |
| `split:f` | τ chosen on a seeded fraction f, tested on the rest| score >= τ      | 1       |
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from panoramia.errors import InputError

StrategyKind = Literal["grid", "all", "split"]
MAX_GRID = 100_000
"""Largest K of ``grid:K``. Every grid threshold costs memory (the threshold, its counts
(r, v) and bounds: tens of bytes, a few MB at this K, where ``grid:2000000000`` asked
``linspace`` alone for 16 GB) and a Bonferroni share α/K of the confidence. K = 10⁵ is a step
of 10⁻⁵ on probabilities in [0, 1]; an audit set of m examples has at most m distinct scores,
and ``all`` tests exactly those."""


@dataclass(frozen=True)
class ThresholdStrategy:
    """How thresholds are chosen and how many tests the Bonferroni correction counts."""

    kind: StrategyKind
    count: int | None = None
    """K for ``grid``."""
    fraction: float | None = None
    """Fraction of the audit set used to choose τ for ``split``."""

    def __post_init__(self) -> None:
        if self.kind == "grid" and not (self.count is not None and 2 <= self.count <= MAX_GRID):
            raise InputError(
                f"thresholds: grid:K takes at most K = {MAX_GRID} thresholds (and at least 2), "
                f"got {self.count} (use 'all' for every distinct score)"
            )

    @classmethod
    def parse(cls, spec: str | ThresholdStrategy) -> ThresholdStrategy:
        """Parse ``"grid:K"`` (2 ≤ K ≤ :data:`MAX_GRID`), ``"all"`` or ``"split:F"``
        (0 < F < 1); InputError, starting ``thresholds:``, when malformed or out of range."""
        if isinstance(spec, ThresholdStrategy):
            return spec
        name, _, arg = str(spec).strip().partition(":")
        try:
            if name == "grid" and arg and int(arg) >= 2:
                return cls("grid", count=int(arg))
            if name == "all" and not arg:
                return cls("all")
            if name == "split" and arg and 0.0 < float(arg) < 1.0:
                return cls("split", fraction=float(arg))
        except InputError:
            raise
        except ValueError:
            pass
        shown = repr(spec) if len(str(spec)) <= 40 else f"{str(spec)[:40]!r}…"
        raise InputError(
            f"thresholds: {shown} is not one of grid:K (2 <= K <= {MAX_GRID}), all, "
            "split:F (0 < F < 1)"
        )

    def __str__(self) -> str:
        if self.kind == "grid":
            return f"grid:{self.count}"
        if self.kind == "split":
            return f"split:{self.fraction:g}"
        return "all"

    def n_tests(self, m: int) -> int:
        """Number of thresholds the union bound counts for an audit set of size ``m``."""
        if self.kind == "grid":
            assert self.count is not None
            return self.count
        return m if self.kind == "all" else 1

    @property
    def inclusive(self) -> bool:
        """True when a guess is ``score >= τ`` (data-derived thresholds), False for ``>``."""
        return self.kind != "grid"


@dataclass(frozen=True)
class SortedScores:
    """Scores sorted once (ascending) with prefix sums of membership, for O(log m) counts."""

    scores: np.ndarray
    """Ascending scores, shape (m,)."""
    positives_before: np.ndarray
    """``positives_before[i]`` = members among the i lowest scores, shape (m + 1,)."""

    @classmethod
    def build(cls, scores: np.ndarray, membership: np.ndarray) -> SortedScores:
        order = np.argsort(scores)  # tie order is irrelevant: counts use group boundaries
        prefix = np.concatenate(([0], np.cumsum(membership[order], dtype=np.int64)))
        return cls(scores=scores[order], positives_before=prefix)

    @property
    def m(self) -> int:
        return int(self.scores.size)

    @property
    def n_positive(self) -> int:
        return int(self.positives_before[-1])

    def counts_from_index(self, first_guessed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(r, v) when the scores at sorted positions >= ``first_guessed`` are guessed members."""
        r = self.m - first_guessed
        v = self.n_positive - self.positives_before[first_guessed]
        return r.astype(np.int64), v.astype(np.int64)

    def counts(self, taus: np.ndarray, *, inclusive: bool) -> tuple[np.ndarray, np.ndarray]:
        """(r, v) for each threshold: guess member iff score > τ (or >= τ when inclusive)."""
        side: Literal["left", "right"] = "left" if inclusive else "right"
        return self.counts_from_index(np.searchsorted(self.scores, taus, side=side))

    @cached_property
    def distinct(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every distinct score as a threshold (ascending) with its (r, v) under ``>=``."""
        first = np.flatnonzero(np.concatenate(([True], self.scores[1:] != self.scores[:-1])))
        r, v = self.counts_from_index(first)
        return self.scores[first], r, v


def grid_thresholds(count: int) -> np.ndarray:
    """The published protocol's thresholds: ``linspace(0, 1, count)`` on probabilities."""
    return np.linspace(0.0, 1.0, count)


def split_indices(m: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded partition of range(m) into (choose-τ part of size round(f·m), test part)."""
    n_choose = round(fraction * m)
    if not 0 < n_choose < m:
        raise InputError(f"thresholds: split:{fraction:g} leaves an empty part of {m} rows")
    perm = np.random.default_rng(seed).permutation(m)
    return np.sort(perm[:n_choose]), np.sort(perm[n_choose:])
