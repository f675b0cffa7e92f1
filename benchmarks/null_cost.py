"""What the in-audit null (docs/SPEC.md §3.1) adds to an audit's wall time.

Runs the default tabular audit (the demo's over-fitted MLP on Adult, every setting at its
default) from an empty artifact store, once with the null's default B = 999 draws and once
with the fewest its false-alarm rate allows (``audit.null.draws=19``), reads each run's wall
time off its console line, and times ``null_test`` alone on the run's stored scores. Prints the
seconds and the share of the audit's time the null takes.

    .venv/bin/python benchmarks/null_cost.py [--target mlp_overfit] [--draws 999]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from panoramia.measure.null import null_test


def audit(home: Path, target: str, draws: int, name: str) -> tuple[float, Path]:
    """(seconds of the whole command, run directory) of one audit in ``home``'s store."""
    run_dir = home / name
    command = [
        sys.executable, "-m", "panoramia.pipeline.app", f"target={target}",
        f"audit.null.draws={draws}", f"artifacts_dir={home / 'artifacts'}",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started, run_dir


def scores(stage: Path) -> np.ndarray:
    files = sorted(stage.glob("scores_*.npz")) or [stage / "scores.npz"]
    return np.stack([np.load(path)["scores"] for path in files])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="mlp_overfit")
    parser.add_argument("--draws", type=int, default=999)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        fresh, run_dir = audit(home, args.target, args.draws, "fresh")
        print(f"fresh audit, {args.draws} null draws: {fresh:.1f} s (all stages trained)")
        again, _ = audit(home, args.target, 19, "reused")
        print(f"the same audit again, stages reused, 19 null draws: {again:.1f} s")
        report = json.loads((run_dir / "report.json").read_text())
        artifacts = home / "artifacts"
        attack = scores(artifacts / "attack" / report["timings"]["attack"]["key"])
        baseline = scores(artifacts / "baseline" / report["timings"]["baseline"]["key"])
        membership = np.load(artifacts / "attack" / report["timings"]["attack"]["key"] /
                             "scores_0.npz")["membership"]  # fmt: skip
        game = report["null"]["game"]
        started = time.perf_counter()
        null_test(membership, attack, baseline, game=game, draws=args.draws, seed=0)
        alone = time.perf_counter() - started
        stages = sum(stage["seconds"] for stage in report["timings"].values())
        print(f"null_test alone ({game}, {args.draws} draws, m = {membership.size}): {alone:.2f} s")
        print(f"stages of the fresh audit: {stages:.1f} s; the null adds "
              f"{100 * alone / (fresh - alone):.1f} % to the fresh audit's wall time")  # fmt: skip
        found = report["verdict"]
        print(f"verdict: {found['headline']}, p = {found['null']['p_value']:.3f}")


if __name__ == "__main__":
    main()
