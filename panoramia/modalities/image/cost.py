"""The image audit's cost estimate (:mod:`panoramia.audit_cost`): the convolutional target,
stand-ins and h, the image generator (DCGAN or DDPM) with its drawing, labeler and loss
matching, and the convolutional distinguishers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panoramia.audit_cost import (
    IMAGE_POSITIONS,
    StageCost,
    conv_macs,
    distinguisher_stage,
    network_macs,
    number,
    split,
    trained_stages,
    value,
)

POOL_SETTING = "data.pool_size"
BYTES_PER_ROW = 64
"""A contributor's image file that is neither an npz nor a folder, counted at 64 bytes an
image (a floor: it only prices files the audit's reader refuses)."""


def stages(config: Mapping[str, Any], rows: float) -> list[StageCost]:
    """The training stages of an image ``config`` over ``rows`` images."""

    def network(block: str) -> float:
        return network_macs(config, block, convolutional=True)

    found = trained_stages(config, rows, network)
    found.extend(_generator(config, rows * split(config, "generator")))
    found.append(distinguisher_stage(config, rows, network("distinguisher")))
    return found


def _drawn(config: Mapping[str, Any], rows: float) -> float:
    """Candidates a generator draws to keep ``rows``: the filter's extra share, over what its
    largest drop leaves."""
    extra = max(number(config, "generator.filter.extra_fraction", 0.0), 0.0)
    kept = 1.0 - min(max(number(config, "generator.filter.max_drop", 0.0), 0.0), 0.999)
    return rows * (1.0 + extra) / kept


def _generator(config: Mapping[str, Any], rows: float) -> list[StageCost]:
    """The generator's training, its drawing (by candidates drawn, each image over its
    sampling steps) and the labeler's and loss matching's classifiers."""
    epochs = number(config, "generator.epochs", 1)
    width = number(config, "generator.width", 16)
    if value(config, "generator.model") == "ddpm":  # a U-Net, each image over its steps
        macs = 9 * width * width * 60 * IMAGE_POSITIONS
        steps = max(number(config, "generator.sampling_steps", 1), 1.0)
    else:  # a DCGAN: a few strided layers, one pass an image
        macs, steps = 9 * width * width * 16 * IMAGE_POSITIONS / 4, 1.0
    classifier = conv_macs({"c": {"width": 16}}, "c")
    drawn = _drawn(config, 4 * rows + number(config, "audit.fpr_negatives", 1000))
    return [
        StageCost("generator", macs, rows, epochs),
        StageCost("drawing", macs, drawn, steps),
        StageCost("labeler", classifier, rows, number(config, "generator.labeler_epochs")),
        StageCost(
            "loss matching", classifier, 2 * rows, number(config, "generator.loss_matching.epochs")
        ),
    ]
