"""The target-model interface: an audited model seen only through its per-example losses."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

MIN_PROBABILITY = 1e-12
"""Probabilities are clipped here before the log, so a loss is at most ~27.6 nats."""


class TargetModel(Protocol):
    """A classifier under audit, seen only through its per-example losses."""

    def per_example_loss(self, rows: Any) -> np.ndarray:
        """Cross-entropy (nats) of each example's true label; float64 array of shape (n,).

        ``rows`` is a DataFrame for tabular targets, a
        :class:`panoramia.modalities.image.images.ImageSet` for image targets (``"modality":
        "image"``) and a :class:`panoramia.modalities.text.documents.TextSet` of token chunks for
        causal LMs (the mean next-token loss of each chunk).
        """
        ...

    def identity(self) -> dict[str, object]:
        """Format and content hashes of the model's files (for the report)."""
        ...


def loss_from_probabilities(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """−log p(true class) per row from (n, n_classes) probabilities and int class indices."""
    chosen = probabilities[np.arange(labels.size), labels]
    return -np.log(np.clip(chosen.astype(np.float64), MIN_PROBABILITY, 1.0))


def shown_values(values: list, most: int = 10) -> str:
    """At most ``most`` values, quoted (40 characters each), then how many more: the value
    lists of the adapters' one-line errors."""
    shown = ", ".join(repr(str(v)[:40]) for v in values[:most])
    more = f", … ({len(values) - most} more)" if len(values) > most else ""
    return f"[{shown}{more}]"
