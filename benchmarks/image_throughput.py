"""Throughput of the image audit's trained parts on this machine (CPU, or a GPU if present).

On the embedded MNIST subset (28×28×1): the conditional DCGAN's training (images/s over one
epoch) and sampling (images/s), a demo CNN target's training (images/s over a few epochs) and
its per-example losses (images/s). Prints one line per measurement; the image demo's stage
times follow from these (e.g. the DCGAN's 100 epochs on 800 images of D_G).

    .venv/bin/python benchmarks/image_throughput.py [--images 2000] [--epochs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from generators.image import ImageGenerator, ImageGeneratorConfig
from panoramia.datasets.images import load_mnist_subset
from panoramia.models.image_training import ImageModelConfig, train_image_directory
from panoramia.targets import load_target


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=2)
    arguments = parser.parse_args()
    images = load_mnist_subset().take(np.arange(arguments.images))
    n, epochs = len(images), arguments.epochs
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"device {device}, torch threads {torch.get_num_threads()}, {n} MNIST images")

    generator = ImageGenerator(ImageGeneratorConfig(epochs=epochs))
    seconds = timed(lambda: generator.fit(images, seed=0))
    print(
        f"DCGAN training: {n * epochs / seconds:10,.0f} images/s ({epochs} epochs, {seconds:.1f} s)"
    )
    seconds = timed(lambda: generator.sample(10_000, seed=1))
    print(f"DCGAN sampling: {10_000 / seconds:10,.0f} images/s")

    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder) / "cnn"
        config = ImageModelConfig(epochs=epochs)
        seconds = timed(
            lambda: train_image_directory(images, config, directory, seed=0, n_classes=10)
        )
        print(f"CNN training:   {n * epochs / seconds:10,.0f} images/s ({epochs} epochs, "
              f"{seconds:.1f} s)")  # fmt: skip
        target = load_target(directory)
        seconds = timed(lambda: target.per_example_loss(images))
        print(f"CNN losses:     {n / seconds:10,.0f} images/s")


if __name__ == "__main__":
    main()
