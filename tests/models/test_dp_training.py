"""DP-SGD demo targets (Opacus under Lightning): the guarantee reached, and the audit's claim
filled from the training that happened."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from panoramia.accounting.claims import DpSgdClaim
from panoramia.accounting.summary import summarize_claim
from panoramia.modalities.tabular.mlp import TabularMLP
from panoramia.models.dp_training import DpSgdSettings, fit_classifier_dpsgd
from panoramia.models.training import TrainingConfig
from tests.cli_support import run_audit
from tests.conftest import TINY_AUDIT, shared_store


def _data(n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(n, 8)).astype(np.float32)
    return features, (features[:, 0] + 0.5 * features[:, 1] > 0).astype(np.int64)


def test_dpsgd_reaches_its_epsilon_and_the_projects_accountant_agrees() -> None:
    train = _data()
    config = TrainingConfig(epochs=3, batch_size=100, learning_rate=1e-2, accelerator="cpu")
    model, _, run = fit_classifier_dpsgd(TabularMLP(8, 2, [16]), train, config,
                                         DpSgdSettings(1.0, 1e-5))  # fmt: skip
    assert (run.sample_rate, run.steps, run.dataset_size) == (0.05, 60, 2000)
    assert run.noise_multiplier > 0.5
    assert run.epsilon == pytest.approx(1.0, abs=0.02)  # Opacus' PRV accountant
    claim = DpSgdClaim.single_phase(run.noise_multiplier, sample_rate=run.sample_rate,
                                    steps=run.steps)  # fmt: skip
    ours = summarize_claim(claim).to_dict()["epsilons"]["1e-05"]  # dp_accounting's PLD
    assert ours == pytest.approx(run.epsilon, rel=0.05)
    accuracy = (model(torch.from_numpy(train[0])).argmax(1).numpy() == train[1]).mean()
    assert accuracy > 0.8
    assert not any(hasattr(p, "grad_sample") and p.grad_sample is not None
                   for p in model.parameters())  # fmt: skip


def test_infinite_epsilon_is_the_recipe_without_noise() -> None:
    config = TrainingConfig(epochs=1, batch_size=100, accelerator="cpu")
    _, _, run = fit_classifier_dpsgd(TabularMLP(8, 2, [16]), _data(), config,
                                     DpSgdSettings(math.inf))  # fmt: skip
    assert (run.noise_multiplier, run.epsilon) == (0.0, math.inf)


TINY_DP = [*TINY_AUDIT, "threads=1", "target=mlp_dpsgd", "target.epochs=2"]


def test_a_dpsgd_targets_report_carries_the_claim_of_its_training(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The tiny tabular audits' store: everything but the target and its losses is reused.
    artifacts = shared_store(tmp_path_factory, "tabular-artifacts")
    done = run_audit(TINY_DP, artifacts=artifacts, run_dir=tmp_path / "run")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    facts = report["target"]["dp_sgd"]
    claim = report["claim"]
    assert claim["source"] == "training"
    phase = claim["summary"]["claim"]["phases"][0]
    assert phase == {"noise_multiplier": facts["noise_multiplier"],
                     "sample_rate": facts["sample_rate"], "steps": facts["steps"]}  # fmt: skip
    assert claim["summary"]["epsilons"]["1e-05"] == pytest.approx(1.0, rel=0.05)
    assert claim["consistency"]["rmrn"]["consistent"] is True
    no_noise = run_audit(TINY_DP, "target.dp_epsilon=inf", artifacts=artifacts,
                         run_dir=tmp_path / "inf")  # fmt: skip
    assert no_noise.returncode == 0, no_noise.stderr[-3000:]
    report = json.loads((tmp_path / "inf" / "report.json").read_text())
    assert report["target"]["dp_sgd"]["noise_multiplier"] == 0
    assert report["target"]["dp_sgd"]["epsilon"] is None
    assert report["claim"]["source"] == "none"


@pytest.mark.parametrize(
    ("override", "message"),
    [("target=xgboost", "target.dp_epsilon: DP-SGD trains mlp targets"),
     ("target.dp_delta=2", "target.dp_delta: 2.0 is not in (0, 1)")],
)  # fmt: skip
def test_bad_dp_settings_exit_2(tmp_path: Path, override: str, message: str) -> None:
    extra = ["target.dp_epsilon=1"] if override == "target=xgboost" else []
    done = run_audit(TINY_DP, override, *extra, artifacts=tmp_path, run_dir=tmp_path / "run")
    assert done.returncode == 2
    assert message in done.stderr.strip().splitlines()[-1]
