"""A fourth modality from the files docs/ARCHITECTURE.md's "Add a modality" lists, and nothing
else (``tests/toy_modality/``, not shipped): registered, it runs through the stage graph and
the report as the three shipped ones do, and every part of the program that depends on the
kind of data (the target loader, the cost estimate, the settings' choices) asks its plug-in."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from panoramia import plugins
from panoramia.errors import InputError
from tests.cli_support import run_command
from tests.toy_modality.plugin import PLUGIN

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "toy_modality"


@pytest.fixture
def toy_registered() -> Iterator[plugins.Modality]:
    plugins.register(PLUGIN)
    try:
        yield PLUGIN
    finally:
        plugins.unregister(PLUGIN.name)


def test_the_toy_modality_runs_through_the_stage_graph_and_the_report(tmp_path: Path) -> None:
    # Its configs stay in its folder (tests/toy_modality/conf/): registered, it is searched.
    env = {**os.environ, "PANORAMIA_HOME": str(tmp_path / "home")}
    sweep = tmp_path / "multirun"
    # panoramia-audit's own entry point, with the toy registered first (as tests/toy_modality/
    # run.py does), in a child of the suite's fork server
    done = run_command(
        ["--config-name", "toy", "-m", "target=toy_overfit,toy_disjoint",
         f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, env=env, plugins=["tests.toy_modality.plugin:PLUGIN"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    reports = {
        json.loads(path.read_text())["target"]["name"]: json.loads(path.read_text())
        for path in sweep.glob("*/report.json")
    }
    assert set(reports) == {"toy-overfit", "toy-overfit-disjoint"}
    for document in reports.values():
        assert document["modality"] == "toy"
        assert document["stand_ins"]  # the stand-in stage ran with the toy's recipe
        attack = document["attacker"]["attack"]
        assert attack["fpr_negatives"] >= 200  # the synthetic stage drew the attacker's pool
        assert 0.0 <= attack["auc"] <= 1.0
    # The toy's target over-fits its members; its control never saw them.
    assert reports["toy-overfit"]["verdict"]["level"] != "no_leak_detected"
    assert reports["toy-overfit-disjoint"]["verdict"]["level"] == "no_leak_detected"
    summary = json.loads((sweep / "summary.json").read_text())
    assert set(summary) >= {"toy-overfit", "toy-overfit-disjoint"}


def test_the_registry_asks_the_toy_plug_in(
    toy_registered: plugins.Modality, tmp_path: Path
) -> None:
    from panoramia.audit_settings import check_settings, choices_of, ranges_markdown
    from panoramia.service.resource_limits import AuditLimits, check_limits
    from panoramia.service.submission.cost import estimate_cost
    from panoramia.targets import load_target
    from tests.toy_modality.points import PointSet
    from tests.toy_modality.targets import LinearTarget, train_linear_directory

    assert plugins.modality("toy") is toy_registered
    assert choices_of("data.source", "toy") == ("blobs",)
    # Its own choice and rule, declared in its folder alone (settings.py, plugin.py).
    assert choices_of("generator.covariance", "toy") == ("full", "diagonal")
    assert choices_of("generator.covariance", "tabular") is None
    toy_config = {"modality": "toy", "data": {"dims": 6}, "target": {"features": 2},
                  "generator": {"covariance": "diagonal"}}  # fmt: skip
    with pytest.raises(InputError, match=r"^target.features: 2 random features of 6-dim"):
        check_settings(toy_config)
    check_settings(toy_config | {"target": {"features": 0}})
    with pytest.raises(InputError, match=r"^generator.covariance: 'banded' is not full or diag"):
        check_settings(toy_config | {"generator": {"covariance": "banded"}})
    assert "toy: `target.features` is 0 or at least `data.dims`" in ranges_markdown()
    # Its own setting's range and the service's limit on it, declared beside the field alone.
    with pytest.raises(InputError, match=r"^data.dims: 65 is not an integer in \[1, 64\]$"):
        check_settings(toy_config | {"data": {"dims": 65}})
    assert "| `data.dims` | an integer in [1, 64] | toy |  |" in ranges_markdown()
    with pytest.raises(InputError, match=r"^target.features: 5000 is over .*MAX_WIDTH"):
        check_limits({"modality": "toy", "target": {"features": 5000}}, AuditLimits())
    assert plugins.data_sources()["toy_blobs"] == "toy"
    points = PointSet(
        __import__("numpy").random.default_rng(0).normal(size=(40, 3)),
        __import__("numpy").arange(40) % 2,
    )
    train_linear_directory(points, tmp_path / "model", inverse_penalty=1.0, features=0, seed=0)
    opened = load_target(tmp_path / "model")
    assert isinstance(opened, LinearTarget)
    assert opened.per_example_loss(points).shape == (40,)
    config = {"modality": "toy", "data": {"pool_size": 400}, "target": {"kind": "train"},
              "audit": {"baseline_side": "helper"}}  # fmt: skip
    estimate = estimate_cost(config)
    assert [stage.name for stage in estimate.stages] == ["target", "helper", "distinguishers"]
    assert estimate.total > 0
    with pytest.raises(ValueError, match="already registered"):
        plugins.register(PLUGIN)


def test_a_modality_is_known_only_once_registered() -> None:
    assert "toy" not in plugins.MODALITIES
    with pytest.raises(InputError, match="modality: 'toy' is not one of tabular, image, text"):
        plugins.modality("toy")
    with pytest.raises(ValueError, match="ships with the package"):
        plugins.unregister("text")
