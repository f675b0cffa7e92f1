"""The toy's data stage: two Gaussian classes drawn once by ``pool_seed`` into the target's
pool (the known members), the control's pool and real non-members."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from panoramia.pipeline.stages.example_sets import save_known
from tests.toy_modality.config import ToyDataConfig
from tests.toy_modality.points import PointSet

MEMBERS = "members.npz"
CONTROL_POOL = "control_pool.npz"
NONMEMBERS = "nonmembers.npz"


def data_identity(config: ToyDataConfig) -> dict:
    identity = asdict(config)
    identity.pop("split")
    return identity


def build_data(config: ToyDataConfig, directory: Path) -> dict:
    rng = np.random.default_rng(config.pool_seed)
    n = 3 * config.pool_size
    y = rng.integers(0, 2, n)
    centres = np.stack([np.zeros(config.dims), np.full(config.dims, 0.6)])
    everything = PointSet(centres[y] + rng.normal(size=(n, config.dims)), y.astype(np.int64))
    pool = config.pool_size
    control = everything.take(np.arange(pool, 2 * pool))
    control.save(directory / CONTROL_POOL)
    members = save_known(
        directory, everything.take(np.arange(pool)), everything.take(np.arange(2 * pool, n)),
        max_members=config.max_members, files=(MEMBERS, NONMEMBERS),
    )  # fmt: skip
    return {"members": len(members), "nonmembers": pool, "control_pool": pool}
