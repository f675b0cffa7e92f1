"""What the reference attack (docs/SPEC.md §2.4, issue 71) adds to a tabular audit's time.

Runs the default tabular audit of ``target`` (mlp_overfit unless ``--target``) in a fresh
store, then reads its stage timings: the ``reference_rows`` stage (f's and the stand-ins'
forward passes on the scored rows), and the time the report spends reading every attack
(RMIA, LiRA and the plain loss attack: scores, exact rates, bootstrap intervals, the pair
game), measured here again on the stage's own rows; beside the audit's whole time (every
stage as built, plus its report). The stand-ins are trained anyway (the baseline's), so
they are not counted; a tree target's reference models of its own recipe are. Prints one
line a figure and the ratio that issue 71 bounds at 20 %.

    .venv/bin/python benchmarks/reference_attack_cost.py [--target mlp_overfit] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from panoramia.measure.reference_attack import ATTACKS, reference_attack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="mlp_overfit")
    parser.add_argument("--keep", type=Path, default=None, help="the store and run (else a tmp)")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="reference-attack-cost-"))
    run_dir = home / "run"
    env = os.environ | {"PANORAMIA_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    subprocess.run(
        [str(Path(sys.executable).parent / "panoramia-audit"), f"target={args.target}",
         f"hydra.run.dir={run_dir}"],
        check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.perf_counter() - started
    report = json.loads((run_dir / "report.json").read_text())
    stages = {name: float(t["seconds"]) for name, t in report["timings"].items()}
    rows_stage = stages.get("reference_rows", 0.0)
    key = report["timings"]["reference_rows"]["key"]
    rows = np.load(home / "artifacts" / "reference_rows" / key / "reference_rows.npz")
    started = time.perf_counter()
    for name in ATTACKS:
        reference_attack(name, rows["target"], rows["stand_ins"], rows["member"], draws=999)
    reading = time.perf_counter() - started
    # a tree target's reference models of its own recipe train for the attack alone
    models = sum(t for name, t in stages.items() if name.startswith("reference_model_"))
    added = rows_stage + reading + models
    print(f"audit of {args.target} from an empty store: {wall:.1f} s wall")
    print(f"stages as built: {sum(stages.values()):.1f} s")
    print(f"reference_rows stage: {rows_stage:.2f} s "
          f"({int(rows['member'].sum())} members, {int((rows['member'] == 0).sum())} held-out "
          f"rows, {rows['stand_ins'].shape[0]} reference models)")  # fmt: skip
    print(f"reading RMIA, LiRA and the loss attack (999 bootstrap draws each): {reading:.2f} s")
    if models:
        print(f"reference models of the target's recipe, trained: {models:.2f} s")
    print(f"added: {added:.2f} s = {100 * added / wall:.1f} % of the audit (bound: 20 %)")


if __name__ == "__main__":
    main()
