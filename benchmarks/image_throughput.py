"""Throughput of the image audit's trained parts on this machine (CPU, or a GPU if present).

On the embedded MNIST subset (28×28×1): the demo's conditional DDPM's and DCGAN's training
(images/s over a few epochs) and sampling (images/s; the DDPM with the DDIM steps of
``panoramia/modalities/image/conf/generator/ddpm.yaml``), a demo CNN target's training (images/s
over a few epochs) and
its per-example losses (images/s).
Prints one line per measurement; the image demo's stage times follow from these (e.g. the
DDPM's 240 epochs on 800 images of D_G).

    .venv/bin/python benchmarks/image_throughput.py [--images 2000] [--epochs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from image_generator_quality import demo_settings

from panoramia.modalities.image.datasets import load_mnist_subset
from panoramia.modalities.image.generator import ImageGenerator
from panoramia.modalities.image.training import ImageModelConfig, train_image_directory
from panoramia.targets import load_target


def timed(action, *arguments, **keywords) -> float:
    """Seconds that ``action(*arguments, **keywords)`` takes."""
    started = time.perf_counter()
    action(*arguments, **keywords)
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

    for model, samples in (("ddpm", 1_000), ("dcgan", 10_000)):
        generator = ImageGenerator(demo_settings(model, epochs=epochs))
        seconds = timed(generator.fit, images, seed=0)
        print(f"{model.upper():5} training: {n * epochs / seconds:10,.0f} images/s ({epochs} "
              f"epochs, {seconds:.1f} s)")  # fmt: skip
        seconds = timed(generator.sample, samples, seed=1)
        print(f"{model.upper():5} sampling: {samples / seconds:10,.0f} images/s")

    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder) / "cnn"
        config = ImageModelConfig(epochs=epochs)
        seconds = timed(
            lambda: train_image_directory(images, config, directory, seed=0, n_classes=10)
        )
        print(f"CNN training:    {n * epochs / seconds:10,.0f} images/s ({epochs} epochs, "
              f"{seconds:.1f} s)")  # fmt: skip
        target = load_target(directory)
        seconds = timed(lambda: target.per_example_loss(images))
        print(f"CNN losses:      {n / seconds:10,.0f} images/s")


if __name__ == "__main__":
    main()
