"""Image networks, training with Lightning into target directories, and the image adapters."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from panoramia.errors import InputError
from panoramia.modalities.image.datasets import load_digits
from panoramia.modalities.image.images import ImageSet
from panoramia.modalities.image.nets import ResNet, SmallCNN
from panoramia.modalities.image.training import ImageModelConfig, train_image_directory
from panoramia.targets import load_target


@pytest.fixture(scope="module")
def digits() -> ImageSet:
    return load_digits()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, digits: ImageSet) -> Path:
    directory = tmp_path_factory.mktemp("target") / "cnn"
    config = ImageModelConfig(width=8, epochs=2, batch_size=64, augment="crop")
    metrics = train_image_directory(
        digits.take(np.arange(400)), config, directory, seed=0, n_classes=10,
        holdout=digits.take(np.arange(400, 600)),
    )  # fmt: skip
    assert 0.0 <= metrics["holdout_accuracy"] <= 1.0
    assert metrics["train_accuracy"] > 0.2  # two epochs learn something on 8×8 digits
    return directory


@pytest.mark.parametrize(
    ("network", "shape", "classes"),
    [
        (SmallCNN(1, 10, width=8), (2, 1, 8, 8), 10),
        (SmallCNN(1, 10), (2, 1, 28, 28), 10),
        (ResNet(3, 10, blocks=1, width=8), (2, 3, 32, 32), 10),
        (ResNet(1, 7, blocks=1, width=8), (2, 1, 28, 28), 7),
    ],
)
def test_networks_map_images_to_logits(
    network: torch.nn.Module, shape: tuple, classes: int
) -> None:
    assert network.eval()(torch.zeros(shape)).shape == (2, classes)


def test_wrn_28_10_has_the_papers_size() -> None:
    wrn = ResNet(3, 10, blocks=4, width=16, widen=10, dropout=0.3)
    parameters = sum(p.numel() for p in wrn.parameters())
    assert 36.4e6 < parameters < 36.6e6  # WRN-28-10: 36.5 M
    convolutions = sum(
        isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3) for m in wrn.modules()
    )
    assert convolutions == 6 * 4 + 1  # depth 28 = 6n + 4 with n = 4 blocks per stage


def test_trained_directory_gives_cross_entropy_losses(trained: Path, digits: ImageSet) -> None:
    manifest = json.loads((trained / "target.json").read_text())
    assert manifest["modality"] == "image"
    assert manifest["format"] == "torch-safetensors"
    target = load_target(trained)
    sample = digits.take(np.arange(50))
    losses = target.per_example_loss(sample)
    assert losses.shape == (50,)
    assert losses.dtype == np.float64
    # Independent oracle: rebuild the network and normalise by hand.
    from safetensors.torch import load_file

    network = SmallCNN(**manifest["kwargs"])
    network.load_state_dict(load_file(trained / "model.safetensors"))
    mean = torch.tensor(manifest["normalization"]["mean"]).view(1, -1, 1, 1)
    std = torch.tensor(manifest["normalization"]["std"]).view(1, -1, 1, 1)
    x = (torch.from_numpy(sample.images).permute(0, 3, 1, 2).float() / 255 - mean) / std
    with torch.no_grad():
        expected = torch.nn.functional.cross_entropy(
            network.eval()(x), torch.from_numpy(sample.labels), reduction="none"
        )
    np.testing.assert_allclose(losses, expected.double().numpy(), rtol=1e-5, atol=1e-6)
    assert target.identity()["format"] == "torch-safetensors"


def test_torchscript_adapter_matches(trained: Path, digits: ImageSet, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    manifest = json.loads((trained / "target.json").read_text())
    network = SmallCNN(**manifest["kwargs"])
    network.load_state_dict(load_file(trained / "model.safetensors"))
    torch.jit.script(network.eval()).save(str(tmp_path / "model.pt"))
    scripted = {"format": "torchscript", "modality": "image", "file": "model.pt",
                "normalization": manifest["normalization"]}  # fmt: skip
    (tmp_path / "target.json").write_text(json.dumps(scripted))
    sample = digits.take(np.arange(30))
    np.testing.assert_allclose(
        load_target(tmp_path).per_example_loss(sample),
        load_target(trained).per_example_loss(sample),
        rtol=1e-5,
    )


def test_hugging_face_image_classifier_directory(digits: ImageSet, tmp_path: Path) -> None:
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    config = ViTConfig(
        image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=32, num_labels=10,
    )  # fmt: skip
    torch.manual_seed(0)
    ViTForImageClassification(config).save_pretrained(tmp_path / "hf")
    processor = ViTImageProcessor(size={"height": 8, "width": 8}, do_resize=True)
    processor.save_pretrained(tmp_path / "hf")
    manifest = {"format": "hf-image-classification", "modality": "image", "directory": "hf"}
    (tmp_path / "target.json").write_text(json.dumps(manifest))
    target = load_target(tmp_path)
    losses = target.per_example_loss(digits.take(np.arange(20)))
    assert losses.shape == (20,)
    assert np.all(np.isfinite(losses))
    assert np.all(losses > 0)
    assert set(target.identity()["sha256"]) >= {"config.json", "preprocessor_config.json"}


def test_bad_image_targets_are_one_line_errors(
    trained: Path, digits: ImageSet, tmp_path: Path
) -> None:
    corrupt = tmp_path / "corrupt"
    shutil.copytree(trained, corrupt)
    (corrupt / "model.safetensors").write_bytes(b"\x80\x04 pickled tensors")
    with pytest.raises(InputError, match="not a safetensors file"):
        load_target(corrupt)
    manifest = json.loads((trained / "target.json").read_text())
    del manifest["normalization"]
    (corrupt / "target.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="normalization"):
        load_target(corrupt)
    too_many = ImageSet(digits.images[:3], np.array([0, 1, 12]))
    with pytest.raises(InputError, match="label 12"):
        load_target(trained).per_example_loss(too_many)


def test_image_manifest_naming_a_command_is_refused(trained: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil"
    shutil.copytree(trained, evil)
    manifest = json.loads((trained / "target.json").read_text())
    manifest |= {"module": "subprocess:Popen", "kwargs": {"args": f"id > {marker}", "shell": True}}
    (evil / "target.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="module 'subprocess' is not trusted") as caught:
        load_target(evil)
    assert "target.trusted_modules" in str(caught.value)
    assert "\n" not in str(caught.value)
    # torch's own layers load only when trusted explicitly (the demo's SmallCNN by default)
    manifest |= {"module": "torch.nn:Identity", "kwargs": {}}
    (evil / "target.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"module 'torch\.nn' is not trusted"):
        load_target(evil)
    with pytest.raises(InputError, match="do not fit the model"):
        load_target(evil, trusted_modules=["torch.nn"])  # imported and built, weights refused
    time.sleep(0.5)  # a started shell would have written the marker by now
    assert not marker.exists()
