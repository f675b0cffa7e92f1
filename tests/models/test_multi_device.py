"""Several devices: a training runs as ``ddp_spawn`` (its ranks exist only inside ``fit``), the
epoch is chosen on the validation loss synced over the ranks, and the chosen weights come
back to the calling process; every other stage runs once. On CPU: two processes over gloo.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from panoramia.errors import InputError
from panoramia.modalities.tabular.mlp import TabularMLP
from panoramia.models.training import (
    TrainingConfig,
    device_count,
    fit_classifier,
    parallel_strategy,
)


@pytest.mark.parametrize(
    ("accelerator", "devices", "count"),
    [("cpu", "2", 2), ("cpu", "auto", 1), ("cpu", 1, 1), ("gpu", "[0,1]", 2), ("cpu", [0, 1], 2)],
)
def test_device_count(accelerator: str, devices: object, count: int) -> None:
    assert device_count(accelerator, devices) == count  # type: ignore[arg-type]


def test_several_devices_always_train_in_spawned_ranks() -> None:
    two = TrainingConfig(accelerator="cpu", devices="2")
    assert parallel_strategy(two) == "ddp_spawn"
    assert parallel_strategy(TrainingConfig(accelerator="cpu", devices="2", strategy="ddp")) == (
        "ddp_spawn"
    )
    assert parallel_strategy(TrainingConfig(accelerator="cpu", devices="1", strategy="ddp")) == (
        "auto"
    )
    with pytest.raises(InputError, match="strategy 'fsdp': with several devices"):
        parallel_strategy(TrainingConfig(accelerator="cpu", devices="2", strategy="fsdp"))


def _validation_loss(model: torch.nn.Module, data: tuple[np.ndarray, np.ndarray]) -> float:
    with torch.no_grad():
        logits = model(torch.from_numpy(data[0]))
        return float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(data[1])))


def test_two_cpu_processes_return_the_best_epochs_weights_and_its_synced_loss() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(500, 6)).astype(np.float32)
    labels = (features[:, 0] + 0.5 * rng.normal(size=500) > 0).astype(np.int64)
    train, validation = (features[:400], labels[:400]), (features[400:], labels[400:])
    config = TrainingConfig(
        epochs=6, batch_size=32, learning_rate=0.05, accelerator="cpu", devices="2",
        select_best_on_validation=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model, metrics = fit_classifier(TabularMLP(6, 2, hidden=(8,)), train, config, validation)
    # 100 validation rows split 50/50 over the ranks (no padding): the synced mean is the
    # whole split's mean, and the model that came back is the epoch that reached it
    assert metrics["best_val_loss"] == pytest.approx(_validation_loss(model, validation), abs=1e-5)
    assert metrics["best_val_loss"] < 0.6


class _FailsOnRankOne(torch.nn.Module):
    """A network whose second rank dies in its first forward pass (a rank lost mid-fit)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(6, 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if torch.distributed.is_initialized() and torch.distributed.get_rank() == 1:
            raise RuntimeError("rank 1 lost")
        return self.layer(features)


def test_a_rank_lost_mid_training_leaves_no_stage_behind(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    from panoramia.pipeline.stages import StageRunner
    from panoramia.pipeline.stages.stage_key import StageKey
    from panoramia.pipeline.store import ArtifactStore

    rng = np.random.default_rng(0)
    data = (rng.normal(size=(64, 6)).astype(np.float32), rng.integers(0, 2, 64))
    config = TrainingConfig(epochs=1, batch_size=16, accelerator="cpu", devices="2")

    def build(directory) -> dict:  # type: ignore[no-untyped-def]
        fit_classifier(_FailsOnRankOne(), data, config)
        (directory / "weights").write_text("never")
        return {}

    runner = StageRunner(ArtifactStore(tmp_path), console=Console(quiet=True))
    with pytest.raises(Exception, match=r"process 1 terminated|rank 1 lost"):
        runner.run(StageKey("target"), build, config={"x": 1}, inputs=[])
    assert not any(tmp_path.rglob("_done.json"))
    assert not any(path.name.startswith(".partial") for path in tmp_path.rglob("*"))


def test_a_dcgan_on_several_devices_is_one_line() -> None:
    """The DCGAN's two optimisers step by hand, which DDP does not support: refused before
    any process starts (the DDPM trains on several devices)."""
    from panoramia.modalities.image.generator import ImageGenerator, ImageGeneratorConfig
    from panoramia.modalities.image.images import ImageSet

    rng = np.random.default_rng(0)
    images = ImageSet(rng.integers(0, 255, (32, 16, 16, 1), dtype=np.uint8),
                      rng.integers(0, 2, 32).astype(np.int64))  # fmt: skip
    config = ImageGeneratorConfig(model="dcgan", epochs=1, batch_size=8, width=8,
                                  accelerator="cpu", devices="2")  # fmt: skip
    with pytest.raises(InputError, match="the DCGAN trains on one device"):
        ImageGenerator(config).fit(images, seed=0)


@pytest.mark.parametrize("devices", ["two", "0", "-3"])
def test_a_device_count_that_is_not_one_is_one_line(devices: str) -> None:
    with pytest.raises(InputError, match=f"devices: '{devices}' is not a count"):
        device_count("cpu", devices)


def test_spawned_ranks_train_with_this_processs_thread_count() -> None:
    from panoramia.models.training import SpawnedRanks

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        ranks = SpawnedRanks()
        torch.set_num_threads(2)
        ranks.setup(None, None, "fit")  # type: ignore[arg-type]
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
