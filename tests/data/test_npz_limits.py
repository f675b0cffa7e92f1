"""An image ``.npz`` is judged by its array headers before anything is read: a small
compressed file that expands past the limit, or declares more than it holds, is refused with
one line (issue 34: a 2.9 MB file took an audit to 3.2 GB before anything was validated)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.modalities.image.images import read_npz


def test_a_compressed_npz_past_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, images=np.zeros((2000, 28, 28, 1), np.uint8),
                        labels=np.zeros(2000, np.int64))  # fmt: skip
    assert path.stat().st_size < 20_000  # ~1.6 MB once read
    with pytest.raises(InputError, match="hold 1584000 bytes once read; at most 1000000"):
        read_npz(path, max_bytes=1_000_000)
    assert len(read_npz(path)) == 2000  # under the default limit it reads


def test_an_array_declaring_more_than_it_holds_is_refused(tmp_path: Path) -> None:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (10**9, 28, 28, 1)}
    )
    path = tmp_path / "lie.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("images.npy", header.getvalue() + b"\x00" * 100)
        archive.writestr("labels.npy", header.getvalue())
    with pytest.raises(InputError, match="declares 784000000000 bytes but holds"):
        read_npz(path)


def _zeros_npz(path: Path, shape: tuple[int, ...]) -> None:
    """An .npz whose ``images`` are zeros of ``shape`` (uint8), written in chunks: small on
    disk, large once read (issue 41: 1.5 MB declaring 20,000 × 3 × 160 × 160)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": shape}
    )
    labels = io.BytesIO()
    np.save(labels, np.zeros(shape[0], np.int64))
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("images.npy", "w", force_zip64=True) as stream:
            stream.write(header.getvalue())
            left = int(np.prod(shape))
            while left > 0:
                stream.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
        archive.writestr("labels.npy", labels.getvalue())


def test_an_npz_whose_shape_is_no_image_set_is_refused_from_its_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "channels_first.npz"
    _zeros_npz(path, (2000, 3, 160, 160))  # 154 MB once read, channels first
    assert path.stat().st_size < 1_000_000
    import panoramia.modalities.image.images as images

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("np.load called before the headers were checked")

    monkeypatch.setattr(images.np, "load", never)
    with pytest.raises(InputError, match=r"N×H×W×C with C in \(1, 3\), got \(2000, 3, 160, 160\)"):
        read_npz(path)
