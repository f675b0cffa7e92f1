"""How far the image generator's samples are from real images (the baseline's raw material).

Trains the demo's conditional generator (``--model ddpm`` or ``dcgan``, with the settings of
``panoramia/modalities/image/conf/generator/<model>.yaml``) on ``--train`` MNIST images (the
demo's D_G has 800), then
a CNN (the distinguisher's image branch: SmallCNN, 10 epochs) on ``--probe`` real vs as many
synthetic images, and rates ``--probe`` held-out real and synthetic images. Prints:

- the held-out AUC of real vs synthetic (positive class: real; 0.5 = indistinguishable) and
  the share of held-out real images rated above every synthetic one (recall at precision 1:
  what saturates the baseline's c_lb);
- pixel statistics that a CNN picks up at once: inked pixels per image, exact-white (255) and
  exact-black (0) shares, real against synthetic.

The real images never overlap: D_G, the probe's training and test images are disjoint slices.

    .venv/bin/python benchmarks/image_generator_quality.py [--model dcgan] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import fields

import numpy as np
import torch
from omegaconf import OmegaConf
from sklearn.metrics import roc_auc_score

from panoramia.modalities.image.datasets import load_mnist_subset
from panoramia.modalities.image.generator import ImageGenerator, ImageGeneratorConfig
from panoramia.modalities.image.image_module import Normalization
from panoramia.modalities.image.images import ImageSet
from panoramia.modalities.image.nets import SmallCNN
from panoramia.models.training import TrainingConfig, fit_classifier
from panoramia.pipeline.registry import existing_config_file

PROBE_EPOCHS = 10


def demo_settings(model: str, **changes) -> ImageGeneratorConfig:
    """The generator of ``panoramia/modalities/image/conf/generator/<model>.yaml`` (its model
    fields), with ``changes``."""
    settings = OmegaConf.to_container(
        OmegaConf.load(existing_config_file(f"generator/{model}.yaml"))
    )
    names = {field.name for field in fields(ImageGeneratorConfig)}
    settings = {key: value for key, value in settings.items() if key in names}
    return ImageGeneratorConfig(**{**settings, **changes})


def real_vs_synthetic(train: tuple[ImageSet, ImageSet], test: tuple[ImageSet, ImageSet], seed: int):
    """(AUC, recall at precision 1) of a CNN rating held-out images' P(real)."""
    normalization = Normalization.of(train[0].images)
    inputs = np.concatenate([train[0].images, train[1].images])
    is_real = np.r_[np.ones(len(train[0])), np.zeros(len(train[1]))].astype(np.int64)
    torch.manual_seed(seed)
    model, _ = fit_classifier(
        SmallCNN(inputs.shape[-1], 2), (normalization.tensor(inputs).numpy(), is_real),
        TrainingConfig(epochs=PROBE_EPOCHS, batch_size=64, seed=seed),
    )  # fmt: skip
    with torch.no_grad():
        scores = [
            torch.softmax(model(normalization.tensor(s.images)), 1)[:, 1].numpy() for s in test
        ]
    labels = np.r_[np.ones(len(scores[0])), np.zeros(len(scores[1]))]
    auc = roc_auc_score(labels, np.concatenate(scores))
    return auc, float((scores[0] > scores[1].max()).mean())


def pixel_statistics(images: np.ndarray) -> str:
    flat = images.reshape(len(images), -1)
    ink = np.median((flat > 0).sum(axis=1))
    white, black = (flat == 255).mean(), (flat == 0).mean()
    return f"ink/image {ink:5.0f}, white {white:6.2%}, black {black:6.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=800)
    parser.add_argument("--probe", type=int, default=500)
    parser.add_argument("--model", choices=("ddpm", "dcgan"), default="ddpm")
    parser.add_argument("--epochs", type=int, help="default: the demo's")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    arguments = parser.parse_args()
    everything = load_mnist_subset()
    order = np.random.default_rng(0).permutation(len(everything))
    n, p = arguments.train, arguments.probe
    d_g = everything.take(order[:n])
    real_train, real_test = everything.take(order[n : n + p]), everything.take(order[-p:])
    print(f"D_G {n} MNIST images, probe {p} + {p} real; real: {pixel_statistics(real_test.images)}")
    for seed in arguments.seeds:
        started = time.perf_counter()
        changes = {"epochs": arguments.epochs} if arguments.epochs else {}
        config = demo_settings(arguments.model, **changes)
        generator = ImageGenerator(config)
        generator.fit(d_g, seed=seed)
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        synthetic = generator.sample(2 * p, seed=seed + 1)
        sampling = time.perf_counter() - started
        fake_train, fake_test = synthetic.take(np.arange(p)), synthetic.take(np.arange(p, 2 * p))
        auc, recall = real_vs_synthetic((real_train, fake_train), (real_test, fake_test), seed)
        print(
            f"seed {seed}: {config.model} {config.epochs} epochs in {seconds:.0f} s, "
            f"{2 * p} samples in {sampling:.0f} s; real vs synthetic AUC "
            f"{auc:.3f}, recall at precision 1 {recall:.2f}; synthetic: "
            f"{pixel_statistics(synthetic.images)}"
        )


if __name__ == "__main__":
    main()
