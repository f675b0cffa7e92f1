"""The data stage of the image audit: known members, the control's pool, real non-members.

Embedded data (``mnist``, ``digits``) is shuffled once with ``pool_seed`` into the target's
training pool (the known members), a disjoint pool of the same size (the negative control's
training set) and the rest (real non-members for the reference audits). User data comes from
``members_path`` and optionally ``nonmembers_path``. Every part is an ``.npz`` ImageSet.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.errors import InputError
from panoramia.hashing import settings_but
from panoramia.modalities.image.config import ImageDataConfig
from panoramia.modalities.image.images import ImageSet, read_images
from panoramia.pipeline.data_identity import input_paths_identity
from panoramia.pipeline.stages.example_sets import save_known

MEMBERS = "members.npz"
CONTROL_POOL = "control_pool.npz"
NONMEMBERS = "nonmembers.npz"


def image_data_identity(config: ImageDataConfig) -> dict:
    """What the data stage's key hashes: the config and the content of every input file."""
    identity = settings_but(config, ("split",))  # the split is the later stages' to key
    if config.source == "files":  # data.source's choices: panoramia.audit_settings
        identity.update(input_paths_identity(config))
    return identity


def build_image_data(config: ImageDataConfig, directory: Path) -> dict:
    """Write members, the control pool (embedded data only) and real non-members."""
    control = None
    nonmembers: ImageSet | None = None
    if config.source == "files":
        assert config.members_path is not None
        members = read_images(config.members_path, layout=config.layout)
        if config.nonmembers_path:
            nonmembers = read_images(config.nonmembers_path, layout=config.layout)
            if nonmembers.shape != members.shape:
                raise InputError(
                    f"data.nonmembers_path: images of shape {nonmembers.shape}, "
                    f"members have {members.shape}"
                )
    else:
        from panoramia.modalities.image.datasets import EMBEDDED

        everything = EMBEDDED[config.source]()
        if 2 * config.pool_size >= len(everything):
            raise InputError(
                f"data.pool_size: below {len(everything) // 2} for {config.source} "
                f"({len(everything)} images: two pools and real non-members)"
            )
        order = np.random.default_rng(config.pool_seed).permutation(len(everything))
        members = everything.take(order[: config.pool_size])
        control = everything.take(order[config.pool_size : 2 * config.pool_size])
        nonmembers = everything.take(order[2 * config.pool_size :])
        control.save(directory / CONTROL_POOL)
    members = save_known(
        directory, members, nonmembers, max_members=config.max_members,
        files=(MEMBERS, NONMEMBERS),
    )  # fmt: skip
    labelled = [s for s in (members, control, nonmembers) if s is not None]
    n_classes = int(max(s.labels.max() for s in labelled)) + 1
    height, width, channels = members.shape
    return {
        "members": len(members),
        "nonmembers": 0 if nonmembers is None else len(nonmembers),
        "control_pool": 0 if control is None else len(control),
        "n_classes": n_classes,
        "image_shape": [height, width, channels],
    }
