"""What an audit will cost, in the units and parts every modality's estimate is made of.

The unit is one **multiply–add of a forward pass** (MAC): a stage that trains a network costs
``MACs per example × examples × epochs``, where MACs per example are the weights an example
meets (an MLP's weights; a convolution's weights × the image positions it slides over; a
transformer's 12·layers·width² × tokens per chunk), and a tree ensemble's are its leaves. A
backward pass costs about two forward ones, so training FLOPs are roughly 6 × this figure.

It is an order-of-magnitude estimate, not a prediction of seconds: it ranks the project's own
recipes correctly and grows with every setting a contributor can use to make an audit heavier
(widths, layers, epochs, rows, ensemble, grids). Parts that the settings cannot show (a brought
model's own size, when only its folder is named) are counted at a stated nominal size.

Each modality plug-in's ``cost`` module (:attr:`panoramia.plugins.Modality.cost_path`) builds
its stages from these parts; the service adds the rows and the budget
(:mod:`panoramia.service.submission.cost`). This module imports no deep-learning stack.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol, SupportsFloat, cast

MLP_INPUT = 128
"""Input width of an MLP (a table's encoded columns), counted at 128."""
IMAGE_POSITIONS = 1024
"""Pixels a convolution slides over per image, counted at 32 × 32 (MNIST's 28 × 28 and
CIFAR's 32 × 32 both round to this)."""
NOMINAL_PRETRAINED = 124_000_000
"""Parameters of a text model given only as a folder (``base_model``): GPT-2 small's."""
_REFERENCE = re.compile(r"^\$\{([A-Za-z0-9_.]+)\}$")


@dataclass(frozen=True)
class StageCost:
    """One training stage: ``copies`` models of ``macs_per_example`` MACs, each over
    ``examples`` examples for ``epochs`` epochs."""

    name: str
    macs_per_example: float
    examples: float
    epochs: float
    copies: int = 1

    @property
    def macs(self) -> float:
        return self.macs_per_example * self.examples * self.epochs * self.copies


@dataclass(frozen=True)
class CostEstimate:
    """The stages an audit trains and their total (MACs)."""

    stages: tuple[StageCost, ...]

    @property
    def total(self) -> float:
        return float(sum(stage.macs for stage in self.stages))

    def largest(self) -> str:
        """The heaviest stage in words, e.g. ``"target: 3.5e+14"``."""
        stage = max(self.stages, key=lambda s: s.macs, default=None)
        return "nothing trained" if stage is None else f"{stage.name}: {stage.macs:.2g}"


class CostModel(Protocol):
    """What a plug-in's ``cost`` module holds."""

    POOL_SETTING: str
    """The setting that holds the embedded data's pool size (rows, images, chunks)."""
    BYTES_PER_ROW: int
    """Bytes a row of a contributor's file is counted at when only its size is known."""

    def stages(self, config: Mapping[str, Any], rows: float) -> list[StageCost]:
        """The training stages of ``config`` over ``rows`` rows of data."""
        ...


Network = Callable[[str], float]
"""MACs per example of the network a config block (``target``, ``helper``, …) trains."""


def value(config: Mapping[str, Any], key: str, depth: int = 0) -> object:
    """``config``'s value at dotted ``key``, following ``${a.b}`` references of the project's
    own configs (anything else unresolved is None)."""
    node: object = config
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, str) and depth < 8:
        match = _REFERENCE.match(node)
        if match:
            return value(config, match.group(1), depth + 1)
        if node.startswith("${"):
            return None
    return node


def number(config: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    """``config``'s number at ``key``; ``default`` when unset, unresolved or not a number."""
    found = value(config, key)
    if isinstance(found, bool) or found is None:
        return default
    try:  # a config scalar; float() rejects anything else, caught below
        return float(cast("str | SupportsFloat", found))
    except (TypeError, ValueError):
        return default


def mlp_macs(widths: list[Any]) -> float:
    """An MLP from :data:`MLP_INPUT` inputs through ``widths`` to 2 outputs."""
    sizes = [MLP_INPUT, *(float(w) for w in widths), 2.0]
    return float(sum(a * b for a, b in pairwise(sizes)))


def conv_macs(config: Mapping[str, Any], block: str) -> float:
    """A CNN or wide ResNet of ``width``·``widen`` channels and ``blocks`` blocks per stage
    (three stages, each halving the positions)."""
    width = number(config, f"{block}.width", 16) * number(config, f"{block}.widen", 1)
    blocks = number(config, f"{block}.blocks", 1)
    per_stage = 9 * width * width * (2 * blocks + 1)
    return per_stage * IMAGE_POSITIONS * (1 + 4 / 4 + 16 / 16) / 3 * 4


def transformer_macs(layers: float, width: float, tokens: float, vocab: float) -> float:
    """A transformer of ``layers`` × ``width`` over ``tokens`` tokens (and its output layer)."""
    return (12 * layers * width * width + vocab * width) * tokens


def network_macs(
    config: Mapping[str, Any],
    block: str,
    *,
    shares_target_shape: bool = False,
    convolutional: bool = False,
) -> float:
    """MACs per example of the network that ``block`` (``target``, ``helper``, …) trains:
    a pre-trained folder at its nominal size, a transformer, a convolution (where the plug-in
    says its ``width`` is one), else an MLP. ``shares_target_shape``: a block that sets no
    width of its own takes the target's (a text audit's h, generator and stand-ins)."""
    tokens = number(config, "data.chunk_length", 64)
    vocab = number(config, "data.vocab_size", 50257)
    if value(config, f"{block}.base_model"):
        return NOMINAL_PRETRAINED * tokens
    if shares_target_shape and value(config, f"{block}.n_embd") is None:
        block = "target"
        if value(config, "target.n_embd") is None:  # a brought model, named by its folder
            return NOMINAL_PRETRAINED * tokens
    if value(config, f"{block}.n_embd") is not None:
        layers = number(config, f"{block}.n_layer", 1)
        return transformer_macs(layers, number(config, f"{block}.n_embd"), tokens, vocab)
    if value(config, f"{block}.d_model") is not None:
        layers = number(config, f"{block}.layers", 1)
        return transformer_macs(layers, number(config, f"{block}.d_model"), tokens, 0)
    hidden = value(config, f"{block}.hidden")
    if convolutional and value(config, f"{block}.width") is not None:
        return conv_macs(config, block) + (float(hidden) if isinstance(hidden, int) else 0)
    if isinstance(hidden, list):
        return mlp_macs(hidden)
    return mlp_macs([150, 100, 50, 10])


def leaves(n_estimators: float, max_depth: float) -> float:
    """A tree ensemble's "multiply-adds per example": its most leaves (depth capped at 24)."""
    return n_estimators * 2 ** min(max_depth, 24)


def trees(config: Mapping[str, Any], block: str) -> float:
    """:func:`leaves` of the ensemble that ``block`` configures."""
    return leaves(
        number(config, f"{block}.n_estimators", 100), number(config, f"{block}.max_depth", 6)
    )


def split(config: Mapping[str, Any], name: str) -> float:
    """The share of the rows that ``data.split.<name>`` gives a stage."""
    return number(config, f"data.split.{name}", 0.25)


def trained_stages(
    config: Mapping[str, Any], rows: float, network: Network, *, tree_target: bool = False
) -> list[StageCost]:
    """The target (unless brought: ``target.kind=path``), the stand-ins (when a baseline side
    trains them) and the helper h; ``tree_target``: the target is a tree ensemble."""
    stages = []
    ensemble = int(number(config, "audit.ensemble", 1))
    kind = str(value(config, "target.kind") or "")
    if tree_target:
        stages.append(StageCost("target", trees(config, "target"), rows, 1))
    elif kind != "path":
        stages.append(
            StageCost("target", network("target"), rows, number(config, "target.epochs", 1))
        )
    recipe = "target" if value(config, "audit.stand_in.recipe") == "target" else "helper"
    if "stand_in" in str(value(config, "audit.baseline_side") or ""):
        epochs = number(config, f"{recipe}.epochs", 1)
        if recipe == "target" and tree_target:
            stages.append(StageCost("stand-ins", trees(config, "target"), rows, 1, ensemble))
        else:
            stages.append(StageCost("stand-ins", network(recipe), rows, epochs, ensemble))
        if (
            tree_target
            and kind != "path"
            and value(config, "audit.real_nonmembers.reference_attack") is not False
        ):
            # the reference attack's models of a tree target's recipe, each on half the rows
            stages.append(
                StageCost("reference models", trees(config, "target"), rows / 2, 1, ensemble)
            )
    helper_rows = max(
        number(config, "helper.n_rows"),
        number(config, "helper.n_images"),
        number(config, "helper.n_chunks"),
    )
    stages.append(
        StageCost(
            "helper", network("helper"), helper_rows or rows, number(config, "helper.epochs", 1)
        )
    )
    return stages


def distinguisher_stage(
    config: Mapping[str, Any], rows: float, per_row: float, epochs: float | None = None
) -> StageCost:
    """The distinguishers an attack trains: one per side and ensemble member, each of
    ``per_row`` MACs over the attack's training rows of both kinds for ``epochs`` (None: a
    network's, ``distinguisher.epochs`` + ``distinguisher.head_epochs``)."""
    sides = 2 * int(number(config, "audit.ensemble", 1))
    if epochs is None:
        epochs = number(config, "distinguisher.epochs", 1) + number(
            config, "distinguisher.head_epochs", 0
        )
    attack_rows = 2 * rows * split(config, "attack_train")
    return StageCost("distinguishers", per_row, attack_rows, epochs, sides)
