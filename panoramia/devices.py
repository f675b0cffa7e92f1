"""The device policy of forward passes outside training (losses, labels, filters, samples).

A stage's model settings decide where its forward passes run, as they decide where it trains:
``accelerator`` ``cpu`` runs on the CPU; ``gpu``/``cuda`` on CUDA (one line, exit 2, where
there is none); ``auto`` on CUDA where present, else the CPU. ``devices`` picks the GPU
(``[1,2]`` or ``1``: the first listed). Forward passes run under ``torch.inference_mode``,
batches are copied from pinned memory without blocking, and on CUDA under bf16 autocast
where the GPU has it; losses are always computed in float32 from the logits, so results
differ between devices by bf16 rounding at most. Imports torch lazily.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from panoramia.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import torch


def inference_device(accelerator: str = "auto", devices: Any = "auto") -> torch.device:
    """The device forward passes run on for these settings (see the module docstring)."""
    import torch

    if accelerator == "cpu":
        return torch.device("cpu")
    if accelerator not in ("auto", "gpu", "cuda"):
        raise InputError(f"accelerator {accelerator!r}: expected auto, cpu, gpu or cuda")
    if not torch.cuda.is_available():
        if accelerator == "auto":
            return torch.device("cpu")
        raise InputError(f"accelerator {accelerator!r}: no CUDA device on this machine")
    ids = listed_devices(devices)  # "2" is a count (from GPU 0), "[2]" / "2," an id
    return torch.device("cuda", ids[0] if ids else 0)


def listed_devices(devices: Any) -> list[int] | None:
    """The device ids a Lightning ``devices`` setting lists (``[0, 1]``, ``"[1]"``, ``"1,2"``,
    ``"1,"``); None when it is a count or ``auto``. InputError for a list of non-ids."""
    if isinstance(devices, list | tuple):
        parts = [str(device) for device in devices]
    else:
        text = str(devices).strip()
        if not (text.startswith("[") or "," in text):
            return None
        parts = [part.strip() for part in text.strip("[]").split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        raise InputError(f"devices: {devices!r} is not a list of device ids")
    return [int(part) for part in parts]


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` as a tensor on ``device`` (from pinned memory, without blocking, on CUDA)."""
    import numpy as np
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if device.type != "cuda":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


@contextlib.contextmanager
def forward_passes(device: torch.device) -> Iterator[None]:
    """``torch.inference_mode``, and bf16 autocast on a CUDA device that has bf16."""
    import torch

    with torch.inference_mode():
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                yield
        else:
            yield


def prepare(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``model`` in eval mode on ``device`` (channels-last memory on CUDA, for convolutions)."""
    import torch

    model = model.eval().to(device)
    if device.type == "cuda":
        # torch's Module.to stub lacks memory_format
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    return model
