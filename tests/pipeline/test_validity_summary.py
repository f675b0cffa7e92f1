"""The multirun summary's validity check: paired differences against the control, the
control's share of positive ε̃, claims and unreliable runs (on hand-written reports)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from panoramia.pipeline.summary import summarise, validity, validity_lines


def _report(directory: Path, *, name: str, members: str, seed: int, eps: float, c_lb: float = 1.0,
            claimed: float | None = None, violation: bool = False) -> None:  # fmt: skip
    run = directory / f"{len(list(directory.iterdir()))}-{name}-seed{seed}"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(f"- seed={seed}\n- target={name}\n")
    claim = {"violation": violation}
    if claimed is not None:
        claim["summary"] = {"epsilons": {"1e-05": claimed}}
    report = {
        "target": {"name": name}, "seed": seed, "eps_tilde": eps, "c_lb": c_lb,
        "c_plus_eps_lb": c_lb + eps, "reference_audits": {"o1": {"eps_lb": 2.0}},
        "config": {"generation_seed": 0, "target": {"members": members}}, "claim": claim,
        **({"unreliable": ["c_lb 0"]} if c_lb == 0 else {}),
    }  # fmt: skip
    (run / "report.json").write_text(json.dumps(report))


def test_paired_differences_against_the_control(tmp_path: Path) -> None:
    leaks = [0.6, 0.7, 0.5, 0.8, 0.6]
    control = [0.0, 0.1, 0.0, 0.0, 0.05]
    for seed in range(5):
        _report(tmp_path, name="leaky", members="same", seed=seed, eps=leaks[seed])
        _report(tmp_path, name="control", members="disjoint", seed=seed, eps=control[seed])
        _report(tmp_path, name="dp", members="same", seed=seed, eps=0.2 if seed else 1.5,
                claimed=1.0, violation=seed == 3, c_lb=0.0 if seed == 4 else 1.0)  # fmt: skip
    checked = validity(tmp_path)
    assert checked is not None
    paired = checked["targets"]["leaky"]["paired_difference"]["control"]
    assert paired["mean"] == pytest.approx(sum(leaks) / 5 - sum(control) / 5)
    assert paired["n"] == 5
    assert paired["ci_low"] > 0
    assert checked["controls"]["control"]["share_eps_tilde_positive"] == pytest.approx(0.4)
    assert checked["targets"]["leaky"]["eps_tilde_over_o1"] == pytest.approx(0.64 / 2)
    claim = checked["targets"]["dp"]["claim"]
    assert claim["eps_tilde_above_claim"] == ["2-dp-seed0"]
    assert claim["violations"] == ["11-dp-seed3"]
    assert checked["targets"]["dp"]["unreliable_runs"] == 1
    assert summarise(tmp_path)["dp"]["unreliable_runs"] == 1
    text = "\n".join(validity_lines(checked))
    assert "leaky − control (paired): 0.610" in text
    assert "claimed ε 1; ε̃ above it in 1 run(s), claim violations in 1" in text


def test_no_control_no_validity(tmp_path: Path) -> None:
    _report(tmp_path, name="leaky", members="same", seed=0, eps=0.6)
    assert validity(tmp_path) is None
