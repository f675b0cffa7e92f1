"""Seeding libraries that draw from global random state (sdv draws from numpy and torch)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch  # imported where used: sdv's tables need no torch at start-up


@contextmanager
def global_seed(seed: int) -> Iterator[None]:
    """Seed python, numpy and torch global generators inside the block, then restore them."""
    import torch

    # sdv samples from the legacy global generators, so they are the ones to seed.
    python_state, numpy_state = random.getstate(), np.random.get_state()  # noqa: NPY002
    torch_state = torch.random.get_rng_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002
    torch.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)  # noqa: NPY002
        torch.random.set_rng_state(torch_state)


NOISE_CHUNK = 256
"""Samples whose starting noise an image generator draws in one call: the draws' order fixes
the images, so a seed gives the same images whatever number a device samples at once (any
multiple of this)."""


def chunked_noise(n: int, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """float32 (n, *shape) standard normal noise from the CPU ``generator``, drawn
    ``NOISE_CHUNK`` rows at a time (the same rows for any split of n into multiples of it)."""
    import torch

    sizes = [min(NOISE_CHUNK, n - start) for start in range(0, n, NOISE_CHUNK)]
    parts = [torch.randn((size, *shape), generator=generator) for size in sizes]
    return torch.cat(parts) if parts else torch.zeros((0, *shape))
