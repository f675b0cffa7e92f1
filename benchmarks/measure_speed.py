"""Speed of the measurement engine against a straightforward per-threshold bisection.

Prints wall-clock seconds for ``panoramia.measure.measure`` (baseline + attack tests) at
m = 10^6 with ``all`` thresholds and at m = 1,000 with ``grid:100``, and the speed-up over a
per-threshold implementation: count (r, v) by comparing every score with τ, then bisect θ on
``binom.sf``. At m = 10^6 the naive time is extrapolated from a random sample of thresholds.
Goal (issue 2): m = 10^6 ``all`` in <= 1 s on a 2-core machine. Then the whole
``panoramia measure`` process on a Parquet file of 10^6 rows (start-up, imports, reading,
both tests, printing; issue 29's goal: <= 1 s), best of ``--repeats``.

    .venv/bin/python benchmarks/measure_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
from scipy.special import expit
from scipy.stats import binom

from panoramia.measure import measure


def naive_theta_lb(r: int, v: int, alpha: float, iterations: int = 60) -> float:
    """Bisection on θ for one threshold (what a straightforward implementation does)."""
    if v == 0 or binom.sf(v - 1, r, 0.5) > alpha:
        return 0.0
    low, high = 0.0, 30.0
    for _ in range(iterations):
        middle = (low + high) / 2
        if binom.sf(v - 1, r, expit(middle)) <= alpha:
            low = middle
        else:
            high = middle
    return low


def naive_seconds_per_threshold(
    scores: np.ndarray, membership: np.ndarray, taus: np.ndarray, alpha: float
) -> float:
    started = time.perf_counter()
    for tau in taus:
        guess = scores >= tau
        naive_theta_lb(int(guess.sum()), int((guess & (membership == 1)).sum()), alpha)
    return (time.perf_counter() - started) / taus.size


def audit_set(m: int, *, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Membership ~ Bernoulli(1/2); baseline and (leakier) attack probabilities."""
    rng = np.random.default_rng(seed)
    membership = rng.integers(0, 2, m)
    baseline = expit(rng.normal(size=m) + shift * membership)
    attack = expit(rng.normal(size=m) + 1.2 * shift * membership)
    return membership, baseline, attack


def best_of(repeats: int, function) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--naive-sample", type=int, default=200)
    args = parser.parse_args()
    print(f"{'case':<44} {'ours (s)':>9} {'naive (s)':>11} {'speed-up':>9}  result")
    for m, strategy, shift in ((10**6, "all", 1.0), (10**6, "all", 0.0), (1000, "grid:100", 1.0)):
        membership, baseline, attack = audit_set(m, shift=shift, seed=0)
        run = partial(
            measure,
            membership,
            baseline_scores=baseline,
            attack_scores=attack,
            thresholds=strategy,
        )
        ours, result = best_of(args.repeats, run)
        alpha = result.alpha_per_test
        if strategy == "all":
            taus = np.random.default_rng(1).choice(np.unique(attack), args.naive_sample)
            n_thresholds = 2 * np.unique(attack).size  # both tests
            naive = naive_seconds_per_threshold(attack, membership, taus, alpha) * n_thresholds
            label = f"m={m:,} all, {'leaky' if shift else 'null'} (naive extrapolated)"
        else:
            taus = np.linspace(0, 1, 100)
            naive = 2 * 100 * naive_seconds_per_threshold(attack, membership, taus, alpha)
            label = f"m={m:,} grid:100"
        print(
            f"{label:<44} {ours:>9.3f} {naive:>11.1f} {naive / ours:>8.0f}x  "
            f"c_lb={result.c_lb:.3f} eps_tilde={result.eps_tilde:.3f}"
        )
    print(f"{'panoramia measure process, m=10^6 all':<44} {cli_seconds(args.repeats):>9.3f}")


def cli_seconds(repeats: int) -> float:
    """Best wall-clock seconds of the whole ``panoramia measure`` process on 10^6 rows."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import pandas as pd

    membership, baseline, attack = audit_set(10**6, shift=1.0, seed=0)
    command = Path(sys.executable).with_name("panoramia")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scores.parquet"
        frame = {"member": membership, "baseline": baseline, "attack": attack}
        pd.DataFrame(frame).to_parquet(path)
        argv = [str(command), "measure", str(path), "--baseline-col", "baseline",
                "--mia-col", "attack", "--thresholds", "all"]  # fmt: skip
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times.append(time.perf_counter() - started)
    return min(times)


if __name__ == "__main__":
    main()
