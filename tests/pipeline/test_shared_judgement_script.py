"""benchmarks/shared_judgement.py reads a multirun's runs into trials of three contributors
(docs/SPEC.md §3.3): Holm over their decision p, a missing run at p = 1 and listed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from tests.service_support import report_document_for_test


def _script() -> ModuleType:
    path = Path(__file__).parents[2] / "benchmarks" / "shared_judgement.py"
    spec = importlib.util.spec_from_file_location("shared_judgement", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _document(exceed: int, observed: float) -> dict:
    """A real report document whose two-sided game's null has ``exceed`` of 999 draws above."""
    document = report_document_for_test()
    document["two_sided"] = {
        "c_lb": 0.1, "c_plus_eps_lb": 0.1 + observed, "eps_tilde": observed,
        "saturated": False, "unreliable": False,
    }  # fmt: skip
    p = (1 + exceed) / 1000
    document["null"] = {
        "game": "two_sided", "observed": observed, "draws": 999, "exceed": exceed,
        "p_value": p, "false_alarm_rate": 0.05, "threshold": 0.2,
        "interval": [max(0.0, observed - 0.2), observed + 0.3], "detected": p <= 0.05,
        "ensemble": 3, "seed": 0,
    }  # fmt: skip
    return document


def _run(sweep: Path, name: str, generation_seed: int, document: dict | None) -> None:
    run = sweep / name
    (run / ".hydra").mkdir(parents=True)
    overrides = ["target=mlp_disjoint", f"generation_seed={generation_seed}", "seed=0"]
    (run / ".hydra" / "overrides.yaml").write_text("\n".join(f"- {o}" for o in overrides))
    if document is not None:
        (run / "report.json").write_text(json.dumps(document))


def test_a_trial_is_holm_over_its_three_runs_and_a_missing_run_is_listed(tmp_path: Path) -> None:
    script = _script()
    _run(tmp_path, "0-a", 600, _document(0, 0.9))  # p 0.001: under 0.05 / 3
    _run(tmp_path, "1-b", 601, _document(449, 0.05))  # p 0.45: quiet
    _run(tmp_path, "2-c", 602, None)  # no report: a failed run
    trials = script.shared_trials(script.read_runs(tmp_path), first=600, trials=1)
    (trial,) = trials["mlp_disjoint"]
    assert trial["generation_seeds"] == [600, 601, 602]
    assert trial["p_values"] == [0.001, 0.45, 1.0]
    assert trial["found_each"] == [True, False, False]
    assert (trial["level"], trial["found"]) == ("leaks", 1)
    assert trial["missing"] == [602]
    assert trial["rule_before"]
