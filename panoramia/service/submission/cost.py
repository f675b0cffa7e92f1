"""What an audit will cost, estimated from its settings before it is queued.

The unit is one **multiply–add of a forward pass** (MAC): a stage that trains a network costs
``MACs per example × examples × epochs``, where MACs per example are the weights an example
meets (an MLP's weights; a convolution's weights × the image positions it slides over; a
transformer's 12·layers·width² × tokens per chunk), and a tree ensemble's are its leaves. A
backward pass costs about two forward ones, so training FLOPs are roughly 6 × this figure.

It is an order-of-magnitude estimate, not a prediction of seconds: it ranks the project's own
recipes correctly (the demo's tabular audit is ~10⁹–10¹⁰, the tiny image and text ones
~10¹¹–10¹², CIFAR-10 at paper scale ~10¹⁴) and it grows with every setting a contributor can
use to make an audit heavier (widths, layers, epochs, rows, ensemble, grids). Parts that the
settings cannot show (a brought model's own size, when only its folder is named) are counted
at a stated nominal size. The service refuses an audit whose estimate, added to the same
contributor's queued and running audits, is past the operator's budget
(``PANORAMIA_MAX_AUDIT_COST``; :func:`check_budget`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import SupportsFloat, cast

from panoramia.errors import InputError

IMAGE_POSITIONS = 1024
"""Pixels a convolution slides over per image, counted at 32 × 32 (MNIST's 28 × 28 and
CIFAR's 32 × 32 both round to this)."""
TABULAR_INPUT = 128
"""Input width of a tabular network (encoded columns), counted at 128."""
NOMINAL_PRETRAINED = 124_000_000
"""Parameters of a text model given only as a folder (``base_model``): GPT-2 small's."""
NOMINAL_BROUGHT_ROWS_PER_BYTE = {"csv": 1 / 64, "text": 1 / 256}
"""Rows per byte of a contributor's file when only its size is known: a CSV row counted at
64 bytes, a text chunk at 256 bytes (64 tokens of about 4 characters)."""
COMPRESSION_RATIO = 20
"""How much a compressed CSV is counted to expand (text of numbers and categories)."""
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


class OverBudget(InputError):
    """An audit past the contributor's budget: ``alone`` when the audit by itself is past it
    (422: it can never run), otherwise it waits for her own queued and running ones (429)."""

    def __init__(self, estimate: CostEstimate, active: float, budget: float):
        self.estimate, self.active, self.budget = estimate, active, budget
        self.alone = estimate.total > budget
        queued = "" if self.alone else f" with your queued and running audits' {active:.2g}"
        super().__init__(
            f"audit cost estimate {estimate.total:.2g} multiply-adds ({estimate.largest()})"
            f"{queued} is over your budget {budget:.2g} (PANORAMIA_MAX_AUDIT_COST)"
        )


def check_budget(estimate: CostEstimate, active: float, budget: float) -> None:
    """:class:`OverBudget` when ``estimate`` plus ``active`` (the contributor's queued and
    running audits' estimates) is past ``budget``."""
    if estimate.total + active > budget:
        raise OverBudget(estimate, active, budget)


def _value(config: Mapping, key: str, depth: int = 0) -> object:
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
            return _value(config, match.group(1), depth + 1)
        if node.startswith("${"):
            return None
    return node


def _number(config: Mapping, key: str, default: float = 0.0) -> float:
    value = _value(config, key)
    if isinstance(value, bool) or value is None:
        return default
    try:  # a config scalar; float() rejects anything else, caught below
        return float(cast("str | SupportsFloat", value))
    except (TypeError, ValueError):
        return default


def _mlp_macs(widths: list) -> float:
    sizes = [TABULAR_INPUT, *(float(w) for w in widths), 2.0]
    return float(sum(a * b for a, b in pairwise(sizes)))


def _conv_macs(config: Mapping, block: str) -> float:
    """A CNN or wide ResNet of ``width``·``widen`` channels and ``blocks`` blocks per stage
    (three stages, each halving the positions)."""
    width = _number(config, f"{block}.width", 16) * _number(config, f"{block}.widen", 1)
    blocks = _number(config, f"{block}.blocks", 1)
    per_stage = 9 * width * width * (2 * blocks + 1)
    return per_stage * IMAGE_POSITIONS * (1 + 4 / 4 + 16 / 16) / 3 * 4


def _transformer_macs(layers: float, width: float, tokens: float, vocab: float) -> float:
    return (12 * layers * width * width + vocab * width) * tokens


def _network_macs(config: Mapping, block: str, modality: str) -> float:
    """MACs per example of the network that ``block`` (``target``, ``helper``, …) trains."""
    tokens = _number(config, "data.chunk_length", 64)
    vocab = _number(config, "data.vocab_size", 50257)
    if _value(config, f"{block}.base_model"):
        return NOMINAL_PRETRAINED * tokens
    if modality == "text" and _value(config, f"{block}.n_embd") is None:
        block = "target"  # h, the generator and the stand-ins take the target's shape
        if _value(config, "target.n_embd") is None:  # a brought model, named by its folder
            return NOMINAL_PRETRAINED * tokens
    if _value(config, f"{block}.n_embd") is not None:
        layers = _number(config, f"{block}.n_layer", 1)
        return _transformer_macs(layers, _number(config, f"{block}.n_embd"), tokens, vocab)
    if _value(config, f"{block}.d_model") is not None:
        layers = _number(config, f"{block}.layers", 1)
        return _transformer_macs(layers, _number(config, f"{block}.d_model"), tokens, 0)
    hidden = _value(config, f"{block}.hidden")
    if modality == "image" and _value(config, f"{block}.width") is not None:
        return _conv_macs(config, block) + (float(hidden) if isinstance(hidden, int) else 0)
    if isinstance(hidden, list):
        return _mlp_macs(hidden)
    return _mlp_macs([150, 100, 50, 10])


def _leaves(n_estimators: float, max_depth: float) -> float:
    """A tree ensemble's "multiply-adds per example": its most leaves (depth capped at 24)."""
    return n_estimators * 2 ** min(max_depth, 24)


def _trees(config: Mapping, block: str) -> float:
    return _leaves(
        _number(config, f"{block}.n_estimators", 100), _number(config, f"{block}.max_depth", 6)
    )


def data_rows(config: Mapping) -> float:
    """Rows (images, chunks) the audit's data has: the contributor's file measured from its
    size or headers, else the embedded source's pool; ``data.max_members`` caps it."""
    modality = str(_value(config, "modality") or "tabular")
    pool = _number(config, "data.pool_chunks" if modality == "text" else "data.pool_size", 0)
    members = _value(config, "data.members_path")
    if isinstance(members, str) and members and not members.startswith("${"):
        pool = _file_rows(Path(members), modality) or pool
    cap = _number(config, "data.max_members", 0)
    rows = min(pool, cap) if cap > 0 else pool
    return max(rows, 1.0)


def _file_rows(path: Path, modality: str) -> float:
    """Rows of a contributor's members file or folder: an npz's image count from its
    header, a parquet file's from its metadata, otherwise from its size
    (``NOMINAL_BROUGHT_ROWS_PER_BYTE``); 0 when unreadable. Never through a link: the file is
    opened with ``O_NOFOLLOW`` (a file swapped for a link to someone else's after the
    submission's checks prices as unreadable) and a folder is walked without following any
    (:func:`panoramia.service.submission.usage.folder_bytes`)."""
    from panoramia.service.submission.usage import folder_bytes

    try:
        if path.is_dir():
            return folder_bytes(path) * NOMINAL_BROUGHT_ROWS_PER_BYTE["text"]
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(descriptor, "rb") as opened:
            if path.suffix == ".npz":
                from panoramia.data.files import check_npz_arrays

                headers = check_npz_arrays(opened, max_bytes=2**62, where=str(path))  # type: ignore[arg-type]
                shape, _dtype = headers["images"]
                return float(shape[0])
            if path.suffix == ".parquet":
                import pyarrow.parquet as parquet

                return float(parquet.ParquetFile(opened).metadata.num_rows)
            size = os.fstat(opened.fileno()).st_size
        rate = NOMINAL_BROUGHT_ROWS_PER_BYTE["text" if modality == "text" else "csv"]
        packed = COMPRESSION_RATIO if path.suffix in (".gz", ".bz2", ".xz", ".zst") else 1
        return size * rate * packed
    except Exception:  # unreadable here: the audit's own reader says why, in the worker
        return 0.0


def estimate_cost(config: Mapping) -> CostEstimate:
    """The training stages of the composed, unresolved ``config`` and their MACs."""
    modality = str(_value(config, "modality") or "tabular")
    rows = data_rows(config)
    split = lambda name: _number(config, f"data.split.{name}", 0.25)  # noqa: E731
    ensemble = int(_number(config, "audit.ensemble", 1))
    stages = []

    kind = str(_value(config, "target.kind") or "")
    if kind == "xgboost":
        stages.append(StageCost("target", _trees(config, "target"), rows, 1))
    elif kind != "path":
        macs = _network_macs(config, "target", modality)
        stages.append(StageCost("target", macs, rows, _number(config, "target.epochs", 1)))

    recipe = "target" if _value(config, "audit.stand_in.recipe") == "target" else "helper"
    if "stand_in" in str(_value(config, "audit.baseline_side") or ""):
        epochs = _number(config, f"{recipe}.epochs", 1)
        if recipe == "target" and kind == "xgboost":
            stages.append(StageCost("stand-ins", _trees(config, "target"), rows, 1, ensemble))
        else:
            macs = _network_macs(config, recipe, modality)
            stages.append(StageCost("stand-ins", macs, rows, epochs, ensemble))

    helper_rows = max(
        _number(config, "helper.n_rows"),
        _number(config, "helper.n_images"),
        _number(config, "helper.n_chunks"),
    )
    stages.append(
        StageCost(
            "helper",
            _network_macs(config, "helper", modality),
            helper_rows or rows,
            _number(config, "helper.epochs", 1),
        )
    )
    stages.extend(_generator_stages(config, modality, rows * split("generator")))
    if modality == "text" and _number(config, "base.chunks"):
        base = _network_macs(config, "target", modality)
        stages.append(
            StageCost("base", base, _number(config, "base.chunks"), _number(config, "base.epochs"))
        )

    sides = 2 * ensemble
    attack_rows = 2 * rows * split("attack_train")
    if modality == "tabular":
        grid = _value(config, "distinguisher.grid")
        entries = grid if isinstance(grid, list) else [{}]
        leaves = sum(
            _leaves(float(e.get("n_estimators", 100)), float(e.get("max_depth", 6)))
            for e in entries
            if isinstance(e, Mapping)
        )
        stages.append(StageCost("distinguishers", leaves, attack_rows, 1, sides))
    else:
        macs = _network_macs(config, "distinguisher", modality)
        epochs = _number(config, "distinguisher.epochs", 1) + _number(
            config, "distinguisher.head_epochs", 0
        )
        stages.append(StageCost("distinguishers", macs, attack_rows, epochs, sides))
    return CostEstimate(tuple(stages))


def _drawn(config: Mapping, rows: float) -> float:
    """Candidates a generator draws to keep ``rows``: the filter's extra share, over what its
    largest drop leaves."""
    extra = max(_number(config, "generator.filter.extra_fraction", 0.0), 0.0)
    kept = 1.0 - min(max(_number(config, "generator.filter.max_drop", 0.0), 0.0), 0.999)
    return rows * (1.0 + extra) / kept


def _generator_stages(config: Mapping, modality: str, rows: float) -> list[StageCost]:
    """The generator's training, its drawing (by candidates drawn, each image over its
    sampling steps) and, for images, the labeler's and loss matching's classifiers."""
    epochs = _number(config, "generator.epochs", 1)
    if modality == "image":
        width = _number(config, "generator.width", 16)
        if _value(config, "generator.model") == "ddpm":  # a U-Net, each image over its steps
            macs = 9 * width * width * 60 * IMAGE_POSITIONS
            steps = max(_number(config, "generator.sampling_steps", 1), 1.0)
        else:  # a DCGAN: a few strided layers, one pass an image
            macs, steps = 9 * width * width * 16 * IMAGE_POSITIONS / 4, 1.0
        classifier = _conv_macs({"c": {"width": 16}}, "c")
        return [
            StageCost("generator", macs, rows, epochs),
            StageCost(
                "drawing",
                macs,
                _drawn(config, 4 * rows + _number(config, "audit.fpr_negatives", 1000)),
                steps,
            ),
            StageCost("labeler", classifier, rows, _number(config, "generator.labeler_epochs")),
            StageCost(
                "loss matching",
                classifier,
                2 * rows,
                _number(config, "generator.loss_matching.epochs"),
            ),
        ]
    return [_generator_stage(config, modality, rows)]


def _generator_stage(config: Mapping, modality: str, rows: float) -> StageCost:
    epochs = _number(config, "generator.epochs", 1)
    if modality == "text":
        return StageCost("generator", _network_macs(config, "generator", modality), rows, epochs)
    synthesizer = _value(config, "generator.synthesizer")
    if synthesizer in ("ctgan", "tvae"):
        return StageCost("generator", _mlp_macs([256, 256, 256, 256]), rows, epochs)
    return StageCost("generator", _mlp_macs([]) * 16, rows, 1)  # trees over the columns
