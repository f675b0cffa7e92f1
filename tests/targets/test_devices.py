"""The device policy of forward passes outside training (``panoramia/devices.py``): the
settings pick the device, the adapters put their model and batches there, losses stay float32
from the logits. The CUDA comparisons are marked ``gpu`` (skipped without CUDA)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from panoramia.devices import inference_device
from panoramia.errors import InputError
from panoramia.targets import load_target

CUDA = torch.cuda.is_available()


def test_the_settings_pick_the_device() -> None:
    assert inference_device("cpu", "auto") == torch.device("cpu")
    assert inference_device("auto").type == ("cuda" if CUDA else "cpu")
    with pytest.raises(InputError, match="accelerator 'tpu': expected auto, cpu, gpu or cuda"):
        inference_device("tpu")
    if not CUDA:
        with pytest.raises(InputError, match="accelerator 'gpu': no CUDA device"):
            inference_device("gpu")


def test_an_adapter_runs_where_it_is_told_with_the_same_losses(
    mlp_dir: Path, rows: pd.DataFrame
) -> None:
    plain = load_target(mlp_dir)  # the CPU by default
    told = load_target(mlp_dir, device=torch.device("cpu"))
    assert {p.device.type for p in told.model.parameters()} == {"cpu"}
    losses = told.per_example_loss(rows)
    with torch.no_grad():
        logits = plain.model(torch.from_numpy(plain.encoder.features(rows)))
        expected = torch.nn.functional.cross_entropy(
            logits, torch.from_numpy(plain.encoder.labels(rows)), reduction="none"
        )
    np.testing.assert_allclose(losses, expected.double().numpy(), rtol=1e-6)
    assert not told.model.training


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_cuda_losses_match_the_cpu_within_bf16_rounding(mlp_dir: Path, rows: pd.DataFrame) -> None:
    on_cpu = load_target(mlp_dir, device=torch.device("cpu")).per_example_loss(rows)
    on_gpu = load_target(mlp_dir, device=inference_device("gpu")).per_example_loss(rows)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=2e-2, atol=2e-2)  # bf16: 8 bits of mantissa


@pytest.mark.parametrize(
    ("devices", "index"), [("auto", 0), ("2", 0), ("[1]", 1), ("1,", 1), ("1,2", 1), ([3], 3)]
)
def test_the_gpu_is_the_first_listed_id_and_a_bare_number_is_a_count(
    devices: object, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert inference_device("gpu", devices) == torch.device("cuda", index)
