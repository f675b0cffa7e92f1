"""The real-vs-synthetic quality filter for images (PANORAMIA App. C.3).

The logic is the tabular filter's (:mod:`panoramia.generators.realness`): a classifier, cross-fitted
on two folds of D_G (real) against extra synthetic images, rates every candidate's P(real);
candidates below the ``real_quantile`` quantile of held-out real images' P(real) are dropped,
never more than ``max_drop`` of them. The classifier here is a small CNN trained with Lightning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from panoramia.generators.realness import cross_fitted_realness, realness_threshold
from panoramia.modalities.image.images import ImageSet

FILTER_EPOCHS = 8


@dataclass(frozen=True)
class ImageFilterResult:
    kept: ImageSet
    """Candidates that pass, in their original order."""
    real_probability: np.ndarray
    """P(real) of every candidate, shape (n_candidates,)."""
    threshold: float
    kept_real_probability: np.ndarray
    """P(real) of the kept candidates, in the order of ``kept``."""


def filter_synthetic_images(
    real: ImageSet,
    extra_synthetic: ImageSet,
    candidates: ImageSet,
    *,
    real_quantile: float,
    max_drop: float,
    seed: int,
    epochs: int = FILTER_EPOCHS,
) -> ImageFilterResult:
    """Keep the candidates that look at least as real as all but ``real_quantile`` real images."""
    import torch

    from panoramia.modalities.image.image_module import Normalization
    from panoramia.modalities.image.nets import SmallCNN
    from panoramia.models.training import TrainingConfig, fit_classifier

    normalization = Normalization.of(real.images)

    def tensor(images: np.ndarray) -> np.ndarray:
        return normalization.tensor(images).numpy()

    def fit_predict(train: np.ndarray, is_real: np.ndarray, inputs: list) -> list[np.ndarray]:
        torch.manual_seed(seed)
        model, _ = fit_classifier(
            SmallCNN(train.shape[-1], 2, width=16), (tensor(train), is_real.astype(np.int64)),
            TrainingConfig(epochs=epochs, batch_size=64, seed=seed),
        )  # fmt: skip
        with torch.no_grad():
            return [
                torch.softmax(model(torch.from_numpy(tensor(x))), 1)[:, 1].double().numpy()
                for x in inputs
            ]

    held_out_real, candidate_probability = cross_fitted_realness(
        real.images, extra_synthetic.images, candidates.images, fit_predict, seed=seed
    )
    threshold = realness_threshold(
        held_out_real, candidate_probability, real_quantile=real_quantile, max_drop=max_drop
    )
    keep = np.flatnonzero(candidate_probability >= threshold)
    return ImageFilterResult(
        candidates.take(keep), candidate_probability, threshold, candidate_probability[keep]
    )


@dataclass(frozen=True)
class CrossFittedLosses:
    """Classifier losses (nats) from two models trained on the two halves of D_G."""

    held_out_real: np.ndarray
    """Loss of every D_G image under the fold model that did not train on it, shape (n_real,)."""
    real_fold: np.ndarray
    """The fold (0 or 1) of every D_G image: model k trained on the images of the other fold."""
    models: tuple
    """The two fold models (image targets: ``per_example_loss``)."""
    seed: int

    def of(self, candidates: ImageSet) -> np.ndarray:
        """Each candidate's loss under one of the fold models, drawn at random (seeded), so
        that candidates and held-out real images are rated by the same mix of models."""
        fold = np.random.default_rng(self.seed).integers(0, 2, len(candidates))
        losses = np.empty(len(candidates))
        for k, model in enumerate(self.models):
            rows = np.flatnonzero(fold == k)
            if rows.size:
                losses[rows] = model.per_example_loss(candidates.take(rows))
        return losses


def cross_fitted_losses(
    real: ImageSet, config, directory, *, seed: int, n_classes: int
) -> CrossFittedLosses:
    """Train ``config``'s classifier (an ImageModelConfig) on each half of ``real`` (D_G) into
    ``directory``/fold0 and fold1, and rate every real image with the model that did not see it."""
    from panoramia.devices import inference_device
    from panoramia.modalities.image.training import train_image_directory
    from panoramia.targets import load_target

    fold = np.random.default_rng(seed).integers(0, 2, len(real))
    held_out = np.empty(len(real))
    models = []
    for k in (0, 1):
        model_directory = directory / f"fold{k}"
        train_image_directory(
            real.take(np.flatnonzero(fold != k)), config, model_directory, seed=seed + k,
            n_classes=n_classes,
        )  # fmt: skip
        device = inference_device(config.accelerator, config.devices)
        models.append(load_target(model_directory, device=device))
        held_out[fold == k] = models[k].per_example_loss(real.take(np.flatnonzero(fold == k)))
    return CrossFittedLosses(held_out, fold, tuple(models), seed)
