"""Labelled image sets and the readers of the user's image data (numpy only, no torch).

An :class:`ImageSet` holds ``images`` as uint8 of shape (N, H, W, C) (channels last, 0–255)
and ``labels`` as int64 of shape (N,) with classes 0…K−1. Three on-disk forms are read:

* ``.npz`` with arrays ``images`` (uint8 N×H×W×C, or N×H×W for one channel) and ``labels``;
* an image folder: one sub-directory per class (sorted names → classes 0…K−1) holding
  PNG/JPEG files of one size;
* a CIFAR-10 style batch directory: the binary version (``data_batch_*.bin``: per record one
  label byte then 3×32×32 channel-major bytes) or the python version (``data_batch_*``
  pickles, read with an unpickler that accepts only numpy arrays, lists, dicts and bytes).
"""

from __future__ import annotations

import io
import math
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from panoramia.audit_settings import values
from panoramia.data.files import IMAGE_SUFFIXES, check_npz_arrays
from panoramia.errors import InputError
from panoramia.modalities.image.settings import Augmentation

if TYPE_CHECKING:
    from collections.abc import Callable

CIFAR_SIDE = 32
AUGMENTATIONS = values(Augmentation)
"""Training-time augmentations (see :mod:`panoramia.modalities.image.image_module`)."""


@dataclass(frozen=True)
class ImageSet:
    """uint8 images (N, H, W, C) and int64 labels (N,)."""

    images: np.ndarray
    labels: np.ndarray

    def __post_init__(self) -> None:
        if self.images.ndim != 4 or self.images.dtype != np.uint8:
            raise InputError(
                f"images: expected uint8 N×H×W×C, got {self.images.dtype} {self.images.shape}"
            )
        if self.labels.shape != (self.images.shape[0],):
            raise InputError(
                f"labels: shape {self.labels.shape} does not match {self.images.shape[0]} images"
            )

    def __len__(self) -> int:
        return int(self.labels.size)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, W, C) of every image."""
        return tuple(int(s) for s in self.images.shape[1:])  # type: ignore[return-value]

    def take(self, index: np.ndarray) -> ImageSet:
        return ImageSet(self.images[index], self.labels[index])

    def save(self, path: Path) -> None:
        np.savez(path, images=self.images, labels=self.labels)


def concat(sets: list[ImageSet]) -> ImageSet:
    return ImageSet(
        np.concatenate([s.images for s in sets]), np.concatenate([s.labels for s in sets])
    )


def checked(images: np.ndarray, labels: np.ndarray, source: str) -> ImageSet:
    """Validate and normalise arrays read from ``source`` into an ImageSet."""
    images = np.asarray(images)
    labels = np.asarray(labels)
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4 or images.shape[-1] not in (1, 3):
        raise InputError(f"{source}: images must be N×H×W×C with C in (1, 3), got {images.shape}")
    if images.dtype != np.uint8:
        if not np.issubdtype(images.dtype, np.number) or not np.all(np.isfinite(images)):
            raise InputError(f"{source}: images must be finite numbers (uint8 0–255)")
        if images.min() < 0 or images.max() > 255:
            raise InputError(f"{source}: image values outside 0–255")
        images = np.rint(images).astype(np.uint8)
    if labels.ndim != 1 or labels.size != images.shape[0]:
        raise InputError(
            f"{source}: {labels.size} labels (shape {labels.shape}) for {images.shape[0]} images"
        )
    if not np.issubdtype(labels.dtype, np.integer):
        if not np.issubdtype(labels.dtype, np.number) or not np.all(np.isfinite(labels)):
            raise InputError(f"{source}: labels must be integer classes")
        if np.any(labels != np.round(labels)):
            raise InputError(f"{source}: labels must be integer classes")
    labels = labels.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise InputError(f"{source}: negative class label {int(labels.min())}")
    if images.shape[0] == 0:
        raise InputError(f"{source}: no images")
    return ImageSet(np.ascontiguousarray(images), labels)


MAX_NPZ_BYTES = 4 * 2**30
"""The most an image ``.npz``'s arrays may hold once read (CIFAR-10's training set: 150 MB)."""


def _check_headers(headers: dict[str, tuple[tuple[int, ...], np.dtype]], where: str) -> None:
    """The shapes and dtypes :func:`checked` requires, read off the arrays' headers, so that
    a file whose arrays could never make an image set is refused before a byte is loaded."""
    missing = {"images", "labels"} - set(headers)
    if missing:
        raise InputError(f"{where}: missing array(s) {sorted(missing)}")
    (shape, dtype), (label_shape, label_dtype) = headers["images"], headers["labels"]
    if len(shape) not in (3, 4) or (len(shape) == 4 and shape[-1] not in (1, 3)):
        raise InputError(f"{where}: images must be N×H×W×C with C in (1, 3), got {shape}")
    if dtype.kind not in "uif" or label_dtype.kind not in "uif":
        raise InputError(f"{where}: images and labels must be numbers, got {dtype}, {label_dtype}")
    if len(label_shape) != 1 or label_shape[0] != shape[0]:
        count = math.prod(label_shape)
        raise InputError(f"{where}: {count} labels (shape {label_shape}) for {shape[0]} images")


def read_npz(path: str | Path, *, max_bytes: int = MAX_NPZ_BYTES) -> ImageSet:
    """``images`` (N, H, W, C) and ``labels`` (N,) of an ``.npz``, its array headers checked
    before anything is read (:func:`panoramia.data.files.check_npz_arrays`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"images {str(path)!r}: file does not exist")
    where = f"images {str(path)!r}"
    _check_headers(check_npz_arrays(path, max_bytes=max_bytes, where=where), where)
    try:
        with np.load(path, allow_pickle=False) as arrays:
            missing = {"images", "labels"} - set(arrays.files)
            if missing:
                raise InputError(f"images {str(path)!r}: missing array(s) {sorted(missing)}")
            images, labels = arrays["images"], arrays["labels"]
    except (ValueError, OSError, EOFError) as error:
        raise InputError(f"images {str(path)!r}: not a readable .npz ({error})") from None
    return checked(images, labels, f"images {str(path)!r}")


def read_image_folder(directory: str | Path) -> ImageSet:
    """``directory/<class name>/<image files>``; classes numbered in sorted-name order."""
    from PIL import Image, UnidentifiedImageError

    directory = Path(directory)
    classes = sorted(p for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else []
    if not classes:
        raise InputError(f"images {str(directory)!r}: no class sub-directories")
    images, labels = [], []
    for label, folder in enumerate(classes):
        for file in sorted(folder.iterdir()):
            if file.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            try:
                with Image.open(file) as image:
                    mode = "L" if image.mode in ("1", "L", "I;16", "I") else "RGB"
                    images.append(np.asarray(image.convert(mode)))
            except (UnidentifiedImageError, OSError) as error:
                raise InputError(f"image {str(file)!r}: not readable ({error})") from None
            labels.append(label)
    if not images:
        raise InputError(f"images {str(directory)!r}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    shapes = {a.shape for a in images}
    if len(shapes) > 1:
        raise InputError(f"images {str(directory)!r}: images of different sizes {sorted(shapes)}")
    return checked(np.stack(images), np.asarray(labels), f"images {str(directory)!r}")


class _ArraysOnly(pickle.Unpickler):
    """Unpickles numpy arrays and plain containers; refuses every other global."""

    ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")
        return super().find_class(module, name)


def _cifar_pickle(file: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        batch = _ArraysOnly(io.BytesIO(file.read_bytes()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
        raise InputError(f"CIFAR batch {str(file)!r}: unsafe or corrupt pickle ({error})") from None
    if not isinstance(batch, dict):
        raise InputError(f"CIFAR batch {str(file)!r}: expected a dict")
    data = batch.get(b"data", batch.get("data"))
    labels = batch.get(b"labels", batch.get("labels"))
    if data is None or labels is None:
        raise InputError(f"CIFAR batch {str(file)!r}: needs 'data' and 'labels'")
    data = np.asarray(data, np.uint8)
    if data.ndim != 2 or data.shape[1] != 3 * CIFAR_SIDE * CIFAR_SIDE:
        raise InputError(f"CIFAR batch {str(file)!r}: data of shape {data.shape}, not N×3072")
    images = data.reshape(-1, 3, CIFAR_SIDE, CIFAR_SIDE).transpose(0, 2, 3, 1)
    return images, np.asarray(labels)


def _cifar_binary(file: Path) -> tuple[np.ndarray, np.ndarray]:
    record = 1 + 3 * CIFAR_SIDE * CIFAR_SIDE
    raw = np.fromfile(file, np.uint8)
    if raw.size == 0 or raw.size % record:
        raise InputError(f"CIFAR batch {str(file)!r}: {raw.size} bytes is not N×{record}")
    rows = raw.reshape(-1, record)
    images = rows[:, 1:].reshape(-1, 3, CIFAR_SIDE, CIFAR_SIDE).transpose(0, 2, 3, 1)
    return images, rows[:, 0].astype(np.int64)


def read_cifar_batches(directory: str | Path, *, pattern: str = "data_batch_*") -> ImageSet:
    """All files matching ``pattern`` (sorted), binary ``.bin`` or python pickles; a file
    path reads that one batch (e.g. CIFAR-10's ``test_batch`` as real non-members)."""
    directory = Path(directory)
    if directory.is_file():
        files = [directory]
    elif directory.is_dir():
        files = sorted(f for f in directory.glob(pattern) if f.is_file())
    else:
        files = []
    if not files:
        raise InputError(f"images {str(directory)!r}: no CIFAR batch files {pattern!r}")
    parts = [_cifar_binary(f) if f.suffix == ".bin" else _cifar_pickle(f) for f in files]
    return checked(
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        f"images {str(directory)!r}",
    )


def read_images(path: str | Path, *, layout: str = "auto") -> ImageSet:
    """Read ``path`` as ``npz``, ``folder`` or ``cifar`` (``auto`` guesses from the path)."""
    path = Path(path)
    if layout == "auto":
        if path.suffix == ".npz":
            layout = "npz"
        elif (path.is_dir() and any(path.glob("data_batch_*"))) or "_batch" in path.name:
            layout = "cifar"
        else:
            layout = "folder"
    readers: dict[str, Callable[[Path], ImageSet]] = {
        "npz": read_npz, "folder": read_image_folder, "cifar": read_cifar_batches,
    }  # fmt: skip
    if layout not in readers:
        raise InputError(f"data.layout: {layout!r} is not auto, npz, folder or cifar")
    if not path.exists():
        raise InputError(f"images {str(path)!r}: does not exist")
    return readers[layout](path)
