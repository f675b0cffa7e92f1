"""Named child seeds from one root seed (numpy ``SeedSequence``), one per stage and purpose."""

from __future__ import annotations

import zlib

import numpy as np


def child_seed(root: int, name: str) -> int:
    """A 32-bit seed for ``name`` derived from ``root``; stable across runs and platforms."""
    sequence = np.random.SeedSequence([root, zlib.crc32(name.encode())])
    return int(sequence.generate_state(1)[0])


def child_rng(root: int, name: str) -> np.random.Generator:
    return np.random.default_rng(child_seed(root, name))
