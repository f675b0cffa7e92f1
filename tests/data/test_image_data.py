"""Image data: the readers (npz, folder, CIFAR batches), the embedded sets, torch preparation."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.modalities.image.datasets import load_digits, load_mnist_subset
from panoramia.modalities.image.images import ImageSet, read_images


def some_images(n: int = 12, side: int = 8, channels: int = 1, seed: int = 0) -> ImageSet:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, side, side, channels), dtype=np.uint8)
    return ImageSet(images, rng.integers(0, 3, n).astype(np.int64))


def test_npz_round_trip_and_gray_images_without_a_channel_axis(tmp_path: Path) -> None:
    images = some_images()
    images.save(tmp_path / "a.npz")
    back = read_images(tmp_path / "a.npz")
    np.testing.assert_array_equal(back.images, images.images)
    np.testing.assert_array_equal(back.labels, images.labels)
    np.savez(tmp_path / "b.npz", images=images.images[..., 0], labels=images.labels)
    assert read_images(tmp_path / "b.npz").shape == (8, 8, 1)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"images": np.zeros((3, 8, 8, 1), np.uint8)}, "missing array"),
        ({"images": np.zeros((3, 8, 8, 1), np.uint8), "labels": np.zeros(4)}, "4 labels"),
        ({"images": np.full((2, 8, 8, 1), np.nan), "labels": np.zeros(2)}, "finite"),
        ({"images": np.full((2, 8, 8, 1), 300.0), "labels": np.zeros(2)}, "outside 0–255"),
        ({"images": np.zeros((2, 8, 8, 5), np.uint8), "labels": np.zeros(2)}, r"C in \(1, 3\)"),
        ({"images": np.zeros((2, 8, 8, 1), np.uint8), "labels": np.array([0.5, 1])}, "integer"),
        ({"images": np.zeros((2, 8, 8, 1), np.uint8), "labels": np.array([-1, 1])}, "negative"),
    ],
)
def test_bad_npz_is_one_clear_error(tmp_path: Path, arrays: dict, message: str) -> None:
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(InputError, match=message) as error:
        read_images(tmp_path / "bad.npz")
    assert "bad.npz" in str(error.value)
    assert "\n" not in str(error.value)


def test_corrupt_npz_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "broken.npz").write_bytes(b"not a zip file")
    with pytest.raises(InputError, match="not a readable"):
        read_images(tmp_path / "broken.npz")
    with pytest.raises(InputError, match="does not exist"):
        read_images(tmp_path / "absent.npz")


def test_image_folder_numbers_classes_in_sorted_order(tmp_path: Path) -> None:
    from PIL import Image

    images = some_images(6, channels=3)
    for index, (image, name) in enumerate(zip(images.images, "bbaacc", strict=True)):
        (tmp_path / name).mkdir(exist_ok=True)
        Image.fromarray(image).save(tmp_path / name / f"{index}.png")
    read = read_images(tmp_path)
    assert read.shape == (8, 8, 3)
    assert sorted(read.labels.tolist()) == [0, 0, 1, 1, 2, 2]
    first_a = read.images[read.labels == 0][0]
    np.testing.assert_array_equal(first_a, images.images[2])  # "a" sorts first
    Image.fromarray(np.zeros((9, 9, 3), np.uint8)).save(tmp_path / "a" / "odd.png")
    with pytest.raises(InputError, match="different sizes"):
        read_images(tmp_path)


def cifar_records(images: ImageSet) -> np.ndarray:
    """CIFAR-10 layout: N × 3072 channel-major bytes."""
    return images.images.transpose(0, 3, 1, 2).reshape(len(images), -1)


def test_cifar_binary_and_python_batches(tmp_path: Path) -> None:
    images = some_images(5, side=32, channels=3)
    binary = tmp_path / "binary"
    binary.mkdir()
    rows = np.column_stack([images.labels.astype(np.uint8), cifar_records(images)])
    rows.tofile(binary / "data_batch_1.bin")
    read = read_images(binary)
    np.testing.assert_array_equal(read.images, images.images)
    np.testing.assert_array_equal(read.labels, images.labels)

    python = tmp_path / "python"
    python.mkdir()
    for index, part in enumerate((slice(0, 3), slice(3, 5)), start=1):
        batch = {b"data": cifar_records(images)[part], b"labels": images.labels[part].tolist()}
        (python / f"data_batch_{index}").write_bytes(pickle.dumps(batch))
    read = read_images(python)
    np.testing.assert_array_equal(read.images, images.images)
    np.testing.assert_array_equal(read.labels, images.labels)
    (python / "test_batch").write_bytes((python / "data_batch_1").read_bytes())
    assert len(read_images(python / "test_batch", layout="cifar")) == 3


class Exploit:
    """Unpickling this would create a file: the reader must refuse before that happens."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def test_unsafe_cifar_pickle_is_refused_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({b"data": Exploit(marker)}))
    with pytest.raises(InputError, match="unsafe or corrupt pickle"):
        read_images(tmp_path)
    assert not marker.exists()


def test_embedded_sets() -> None:
    mnist = load_mnist_subset()
    assert (len(mnist), mnist.shape) == (5000, (28, 28, 1))
    assert np.bincount(mnist.labels).tolist() == [500] * 10
    digits = load_digits()
    assert (len(digits), digits.shape) == (1797, (8, 8, 1))
    assert digits.images.max() == 255


def test_normalization_and_augmentation() -> None:
    import torch

    from panoramia.modalities.image.image_module import Normalization, augment_batch

    images = some_images(16, channels=3)
    normalization = Normalization.of(images.images)
    x = normalization.tensor(images.images)
    assert x.shape == (16, 3, 8, 8)
    assert x.dtype == torch.float32
    np.testing.assert_allclose(x.mean(dim=(0, 2, 3)).numpy(), 0.0, atol=1e-5)
    np.testing.assert_allclose(x.std(dim=(0, 2, 3), unbiased=False).numpy(), 1.0, atol=1e-3)

    assert augment_batch(x, "none", torch.Generator()) is x
    a = augment_batch(x, "crop", torch.Generator().manual_seed(1))
    b = augment_batch(x, "crop", torch.Generator().manual_seed(1))
    torch.testing.assert_close(a, b)
    # Each crop is a shift by at most 2 pixels: some shift of the zero-padded original matches.
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    for index in range(16):
        windows = [padded[index, :, r : r + 8, c : c + 8] for r in range(5) for c in range(5)]
        assert any(torch.equal(a[index], w) for w in windows)
    flipped = augment_batch(x, "crop_flip", torch.Generator().manual_seed(3))
    assert flipped.shape == x.shape
    with pytest.raises(ValueError, match="augmentation"):
        augment_batch(x, "rotate", torch.Generator())
