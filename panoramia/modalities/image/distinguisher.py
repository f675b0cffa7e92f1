"""The image distinguisher shared by the attack (losses of f) and the baseline (losses of h).

``ImageDistinguisher(config, seed=...).fit(x_train, side_train, y_train, x_val, side_val,
y_val)`` then ``.score(x, side)``: ``x_*`` are :class:`~panoramia.modalities.image.images.ImageSet`
s, ``side_*`` per-example losses (nats, shape (n,), or (n, k) for k models' losses), ``y_*``
1 = member, 0 = non-member. Scores are continuous probabilities of "member" (float64, shape
(n,)) — never hard 0/1 predictions, whose precision–recall sweep collapses to a single point.
The epoch is chosen by the validation lower bound (see :mod:`panoramia.mia.distinguisher_module`);
``candidates`` records every epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from panoramia.mia.network import NetworkDistinguisher, NetworkDistinguisherConfig
from panoramia.mia.selection import LOSS_FLOOR
from panoramia.modalities.image.images import ImageSet
from panoramia.setting_bounds import COUNT, Limit, ranged

if TYPE_CHECKING:
    from panoramia.modalities.image.image_module import Normalization


@dataclass
class ImageDistinguisherConfig(NetworkDistinguisherConfig):
    width: int = ranged(16, COUNT, limit=Limit.WIDTH)
    """Channels of the image branch's first conv layer."""
    hidden: int = ranged(32, COUNT, limit=Limit.WIDTH)
    """Width of the loss branch and the stacking head."""
    epochs: int = ranged(20, COUNT, limit=Limit.EPOCHS)


def loss_features(losses: np.ndarray) -> np.ndarray:
    """(n,) or (n, k) losses (nats; k models) → (n, 2k) float32: the log losses, then the
    losses (standardised later on training data)."""
    losses = np.asarray(losses, np.float64).reshape(len(losses), -1)
    return np.column_stack([np.log(np.maximum(losses, LOSS_FLOOR)), losses]).astype(np.float32)


class ImageDistinguisher(NetworkDistinguisher):
    score_batch = 4096
    config: ImageDistinguisherConfig

    def __init__(self, config: ImageDistinguisherConfig, *, seed: int) -> None:
        super().__init__(config, seed=seed)
        self.normalization: Normalization | None = None

    side_features = staticmethod(loss_features)

    def _inputs(self, x: ImageSet):
        assert self.normalization is not None
        return self.normalization.tensor(x.images)

    def fit(
        self,
        x_train: ImageSet,
        side_train: np.ndarray,
        y_train: np.ndarray,
        x_val: ImageSet,
        side_val: np.ndarray,
        y_val: np.ndarray,
    ) -> ImageDistinguisher:
        from panoramia.modalities.image.distinguisher_module import ImageLossDistinguisher
        from panoramia.modalities.image.image_module import Normalization

        self.normalization = Normalization.of(x_train.images)
        n_side = self._prepare(x_train, side_train)
        network = ImageLossDistinguisher(
            x_train.shape[2], n_side, self.config.width, self.config.hidden
        )
        self._train(
            network, (x_train, side_train, y_train), (x_val, side_val, y_val),
            phases=[({}, self.config.epochs, [])],
        )  # fmt: skip
        return self
