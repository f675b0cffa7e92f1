"""The image audit end to end (``--config-name image``) on sklearn's 8×8 digits, tiny settings."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.cli_support import run_audit, run_command
from tests.conftest import SMALL_NULL, shared_store, stage

TINY = ["--config-name", "image", "+experiment=digits_tiny", "threads=1", SMALL_NULL]
HEADLINE = ("c_lb", "c_plus_eps_lb", "eps_tilde")


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's image artifact store, shared by every test and worker."""
    return shared_store(tmp_path_factory, "image-artifacts")


def audit(*args: str, artifacts: Path, run_dir: Path | None = None) -> subprocess.CompletedProcess:
    return run_audit(TINY, *args, artifacts=artifacts, run_dir=run_dir)


def test_image_audit_writes_a_full_report_and_reruns_from_cache(
    artifacts: Path, tmp_path: Path
) -> None:
    done = audit(artifacts=artifacts, run_dir=tmp_path / "first")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "first" / "report.json").read_text())
    assert report["modality"] == "image"
    assert report["eps_tilde"] == pytest.approx(max(0.0, report["c_plus_eps_lb"] - report["c_lb"]))
    assert report["m"] == report["data"]["split"]["members"]["audit"] == 150
    assert report["data"]["image_shape"] == [8, 8, 1]
    assert report["data"]["n_classes"] == 10
    assert report["reference_audits"]["o1"]["n"] == 150
    assert report["reference_audits"]["rmrn"]["eps_lb"] >= 0
    assert report["target"]["identity"]["format"] == "torch-safetensors"
    assert "holdout_accuracy" in report["target"]
    assert "helper h (cnn, real images): done" in done.stderr  # the reference h learnt D_G
    assert report["data"]["synthetic"]["helper"] == 0  # so no synthetic images are drawn for it
    assert report["config"]["audit"]["attack_side"] == "target+helper"
    # images read their classes by rank (judged on generation seed 303, docs/RESULTS.md §19)
    assert report["config"]["audit"]["group_statistic"] == "rank"
    assert report["exposure"]["statistic"] == "rank"
    assert all(set(g["tests"]) == {"share", "rank"} for g in report["exposure"]["groups"]
               if g["p"] is not None)  # fmt: skip
    chosen = report["attack"]["distinguisher"]["chosen"]
    assert chosen["params"]["epoch"] in (1, 2)
    assert len(report["attack"]["distinguisher"]["selection"]) == 2
    page = (tmp_path / "first" / "report.html").read_text()
    charts = page.count('<img src="data:image/png;base64,')  # one chart an image
    assert charts >= 8  # null, precision, θ_lb, ROC, a loss chart per model, two image grids
    assert page.count('" alt="') == charts  # each says what it shows
    assert "label = " in page  # the exposed groups: the label's classes
    scores = np.load(stage(artifacts, report, "attack") / "scores.npz")["scores"]
    assert np.unique(scores).size > 100  # continuous scores

    again = audit(artifacts=artifacts, run_dir=tmp_path / "second")
    assert again.returncode == 0
    assert again.stderr.count(": reused (") == 21
    second = json.loads((tmp_path / "second" / "report.json").read_text())
    assert [report[k] for k in HEADLINE] == [second[k] for k in HEADLINE]


def test_own_images_and_own_target_directory(artifacts: Path, tmp_path: Path) -> None:
    from panoramia.modalities.image.datasets import load_digits
    from panoramia.modalities.image.training import ImageModelConfig, train_image_directory

    digits = load_digits()
    members, nonmembers = digits.take(np.arange(500)), digits.take(np.arange(500, 800))
    members.save(tmp_path / "members.npz")
    nonmembers.save(tmp_path / "nonmembers.npz")
    train_image_directory(
        members, ImageModelConfig(width=8, epochs=1), tmp_path / "model", seed=0, n_classes=10
    )
    done = audit(
        "data=images", f"data.members_path={tmp_path / 'members.npz'}",
        f"data.nonmembers_path={tmp_path / 'nonmembers.npz'}", "target=image_path",
        f"target.path={tmp_path / 'model'}", "target.width=8", "helper=same_arch",
        "audit.attack_side=target", "generator.loss_matching.enabled=true",
        "generator.loss_matching.epochs=1", artifacts=artifacts, run_dir=tmp_path / "run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "helper h (cnn, synthetic images): done" in done.stderr  # PANORAMIA's own h
    run = json.loads((tmp_path / "run" / "report.json").read_text())
    record = json.loads((stage(artifacts, run, "synthetic") / "_done.json").read_text())
    matching = record["info"]["loss_matching"]
    assert 0.5 <= matching["kept_fraction"] <= 1.0  # loss_matching.max_drop 0.5
    assert 0.0 <= matching["ks_kept"] <= 1.0  # 1-epoch classifiers: no closer match promised
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["target"]["kind"] == "path"
    assert report["data"]["members"] == 500
    assert report["m"] == 125
    assert report["data"]["synthetic"]["helper"] == 200


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("target=mlp_overfit", "Key 'hidden' not in 'ImageTargetConfig'"),
        ("data=images", "data.members_path: required"),
        ("data.members_path=/nonexistent.npz", "does not exist"),
        ("target.augment=rotate", "target.augment: 'rotate' is not one of"),
        ("target=image_path", "target.path"),
        ("generator.model=vae", "generator.model: 'vae' is not dcgan or ddpm"),
        ("helper.training_data=public", "helper.training_data: 'public' is not synthetic or real"),
        (
            "generator.loss_matching.max_drop=1",
            "generator.loss_matching.max_drop: 1.0 is not in [0, 0.99]",
        ),
        (
            "generator.labeler_batch_size=0",
            "generator.labeler_batch_size: 0 is not an integer in [1,",
        ),
        ("generator.filter.max_drop=1.5", "generator.filter.max_drop: 1.5 is not in [0, 0.99]"),
        # choices and rules of panoramia/audit_settings.py, as the service's door checks them
        ("target.arch=foo", "target.arch: 'foo' is not cnn or resnet"),
        ("target.members=disjoint+generator_data", "is not same or disjoint"),
    ],
)
def test_bad_image_config_exits_2_with_one_line(
    override: str, message: str, tmp_path: Path
) -> None:
    extra = ["data=images"] if override.startswith("data.members_path") else []
    done = audit(*extra, override, artifacts=tmp_path / "a", run_dir=tmp_path / "run")
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr


def test_paper_scale_cifar_experiment_composes() -> None:
    done = run_command(
        ["--config-name", "image", "+experiment=cifar10",
         "data.members_path=/data/cifar-10-batches-py", "--cfg", "job", "--resolve"]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for expected in ("name: wrn-28-10", "widen: 10", "blocks: 4", "layout: cifar"):
        assert expected in done.stdout
    assert "arch: resnet" in done.stdout.split("helper:")[1]  # h follows the target's network
