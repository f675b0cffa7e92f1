"""Synthetic examples that a classifier of the real data rates like real ones: resampling on the
classifier's loss.

Why: a target f trained on real data is often less sure of synthetic examples than of real
ones, whether or not it saw the audited members (a generator's samples sit a little off the
data's manifold). The attack reads f's loss, so that gap alone lets it tell members from
synthetic examples on a model that never saw the members: a false ε̃ > 0 on a negative control,
unless the baseline's h shows the same gap, which a helper trained on fewer (or synthetic)
examples does not. Making the synthetic sets' loss distribution, under a classifier trained on
real known members (D_G only, never the audit set or f), match that of unseen real examples
removes most of the gap at its source.

:func:`loss_matching_keep` is the resampling rule: bins with equal shares of the held-out real
losses (quantiles), the candidates' counts capped per bin (water-filling) so that the kept
candidates spread over the bins as the real losses do, dropping at most ``max_drop`` of them;
within a bin the candidates with the highest ``priority`` stay.
"""

from __future__ import annotations

import math

import numpy as np


def _capacity(counts: np.ndarray, keep_at_least: int) -> int:
    """The smallest per-bin cap t with Σ min(counts, t) ≥ keep_at_least (counts sorted or not)."""
    ordered = np.sort(counts)
    below = np.concatenate([[0], np.cumsum(ordered)[:-1]])  # Σ of the bins smaller than each
    kept_if_cap = below + ordered * np.arange(len(ordered), 0, -1)  # cap at each bin's count
    first = int(np.searchsorted(kept_if_cap, keep_at_least))
    if first == len(ordered):
        return int(ordered[-1])
    # With the cap between the previous bin's count and this one's: solve for it exactly.
    previous_total = below[first]
    return max(0, math.ceil((keep_at_least - previous_total) / (len(ordered) - first)))


def loss_matching_keep(
    reference: np.ndarray,
    candidate: np.ndarray,
    *,
    priority: np.ndarray,
    bins: int,
    max_drop: float,
) -> np.ndarray:
    """Which candidates to keep (bool, shape (n_candidates,)) so that their losses follow
    ``reference`` (losses of real examples the classifier never saw), as closely as dropping at
    most ``max_drop`` of them allows.

    ``bins`` bins hold equal shares of ``reference`` (its quantiles; candidates beyond its range
    fall in the outer bins); every bin keeps min(its candidates, t) of them, t the largest cap
    such that all bins hold ~the same count (full matching) or, when that would drop more than
    ``max_drop``, the smallest cap that keeps ``1 − max_drop`` (the over-filled bins are cut
    down first). Within a bin the candidates with the highest ``priority`` stay (ties: lowest
    index).
    """
    reference = np.asarray(reference, np.float64)
    candidate = np.asarray(candidate, np.float64)
    priority = np.asarray(priority, np.float64)
    if reference.ndim != 1 or reference.size == 0:
        raise ValueError("reference: a non-empty 1-D array of losses is required")
    if candidate.shape != priority.shape or candidate.ndim != 1:
        raise ValueError("candidate and priority: 1-D arrays of the same length are required")
    if not np.all(np.isfinite(reference)) or not np.all(np.isfinite(candidate)):
        raise ValueError("losses must be finite")
    if bins < 1:
        raise ValueError(f"bins: {bins} is not ≥ 1")
    if not 0.0 <= max_drop < 1.0:
        raise ValueError(f"max_drop: {max_drop} is not in [0, 1)")
    n = candidate.size
    if n == 0:
        return np.zeros(0, bool)
    inner_edges = np.quantile(reference, np.arange(1, bins) / bins)
    which = np.searchsorted(inner_edges, candidate, side="right")  # bin of each candidate
    counts = np.bincount(which, minlength=bins)
    cap = max(int(counts.min()), _capacity(counts, math.ceil((1.0 - max_drop) * n)))
    # Rank within the bin by priority (descending), ties by index: one stable sort.
    order = np.lexsort((np.arange(n), -priority, which))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, counts)
    return rank < cap


def matching_summary(reference: np.ndarray, candidate: np.ndarray, kept: np.ndarray) -> dict:
    """Medians and two-sample Kolmogorov–Smirnov distances to ``reference`` of the candidates'
    losses before and after resampling (for the stage record and the report)."""
    from scipy.stats import ks_2samp

    return {
        "median_loss_real": round(float(np.median(reference)), 5),
        "median_loss_candidates": round(float(np.median(candidate)), 5),
        "median_loss_kept": round(float(np.median(kept)), 5),
        "ks_candidates": round(float(ks_2samp(reference, candidate).statistic), 4),
        "ks_kept": round(float(ks_2samp(reference, kept).statistic), 4),
        "kept_fraction": round(kept.size / max(candidate.size, 1), 4),
    }
