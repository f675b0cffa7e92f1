"""How much of her members the audit's game scores, offered as three sizes (issue 72 item 4).

The known members are split four ways (``data.split``: the generator's, the distinguishers'
train and validation parts, and the audit part, docs/SPEC.md §2.5); the game scores about half
of the audit part (its coins). A larger size moves a share of the members from the
generator's part to the audit part, so the game scores more of hers and the generator learns
from fewer; the distinguishers' parts keep their share. Sizes are overrides of
``data.split.generator`` and ``data.split.audit``, the same the API takes in ``overrides``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

SIZES = {"standard": 0.0, "larger": 0.1, "largest": 0.2}
"""Each size's share of the members moved from the generator's part to the audit part."""
SIZE_WORDS = {
    "standard": "standard",
    "larger": "larger: more of your members scored, the generator learns from fewer",
    "largest": "largest: most of your members scored, the generator learns from fewest",
}
"""Each size as the form names it."""
MIN_GENERATOR_SHARE = 0.15
"""The least share of the members a size leaves the generator (below it, the synthetic
non-members are too poor for the game to read a leak)."""
MIN_PART_ROWS = 10
"""The fewest rows any part may hold (the split's own rule, ``split_sizes``)."""
SCORED_SHARE = 0.5
"""The share of the audit part the game's coins draw in, on average."""


@cache
def default_split(source: str) -> dict[str, float]:
    """The ``data.split`` fractions of the data source ``source``'s config (``data/`` of its
    plug-in's config folder), as the audit composes them without overrides; KeyError for a
    source that no plug-in registers (the name may come from a request: only a registered one
    names a file) or whose config has no split."""
    import yaml

    from panoramia.pipeline.registry import config_file
    from panoramia.plugins import data_sources

    if source not in data_sources():
        raise KeyError(source)
    path = config_file(f"data/{source}.yaml")
    if path is None:
        raise KeyError(source)
    split = yaml.safe_load(path.read_text(encoding="utf-8")).get("split")
    if not isinstance(split, dict):
        raise KeyError(source)
    return {str(key): float(value) for key, value in split.items()}


def size_split(split: Mapping[str, float], size: str) -> dict[str, float]:
    """``split`` with the share :data:`SIZES` gives ``size`` moved from the generator's part
    to the audit part (rounded to 4 places); KeyError for an unknown size."""
    moved = SIZES[size]
    shifted = dict(split)
    shifted["generator"] = round(float(split["generator"]) - moved, 4)
    shifted["audit"] = round(float(split["audit"]) + moved, 4)
    return shifted


def size_overrides(split: Mapping[str, float], size: str) -> list[str]:
    """The overrides that give ``size`` from ``split`` (none for the standard size)."""
    if SIZES[size] == 0.0:
        return []
    shifted = size_split(split, size)
    return [f"data.split.generator={shifted['generator']}", f"data.split.audit={shifted['audit']}"]


@dataclass(frozen=True)
class SizeOption:
    """One size as a quote offers it: ``overrides`` to add to the request; ``members_scored``
    about how many of her ``rows`` members the game scores (None where rows are unknown);
    ``cost`` the whole request's estimate in multiply-adds at this size; ``refused`` why it
    cannot be offered for her data or limits (None where it can)."""

    size: str
    words: str
    overrides: list[str]
    audit_share: float
    generator_share: float
    members_scored: int | None
    cost: float | None
    refused: str | None

    def as_dict(self) -> dict[str, Any]:
        """The option as the API and the console show it."""
        return {
            "size": self.size, "words": self.words, "overrides": list(self.overrides),
            "audit_share": self.audit_share, "generator_share": self.generator_share,
            "members_scored": self.members_scored, "cost": self.cost, "refused": self.refused,
        }  # fmt: skip


def size_refusal(split: Mapping[str, float], rows: float | None) -> str | None:
    """Why a split cannot be offered for ``rows`` members: a generator share under
    :data:`MIN_GENERATOR_SHARE`, or a part under :data:`MIN_PART_ROWS` rows; None where it can."""
    if split["generator"] < MIN_GENERATOR_SHARE - 1e-9:
        return f"it would leave the generator under {MIN_GENERATOR_SHARE:.0%} of your members"
    if rows is not None and rows >= 1:
        smallest = min(math.floor(share * rows) for share in split.values())
        if smallest < MIN_PART_ROWS:
            return f"your {rows:,.0f} members would leave a part under {MIN_PART_ROWS} rows"
    return None


def members_scored(split: Mapping[str, float], rows: float | None) -> int | None:
    """About how many members the game scores with ``split`` of ``rows`` members."""
    if rows is None or rows < 1:
        return None
    return int(math.floor(split["audit"] * rows) * SCORED_SHARE)
