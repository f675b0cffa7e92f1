"""The image generators (DDPM, DCGAN), the quality filter, the labeler and the distinguisher."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from panoramia.baselines.labels import draw_classes
from panoramia.errors import InputError
from panoramia.modalities.image.datasets import load_digits
from panoramia.modalities.image.distinguisher import ImageDistinguisher, ImageDistinguisherConfig
from panoramia.modalities.image.generator import ImageGenerator, ImageGeneratorConfig
from panoramia.modalities.image.images import ImageSet


@pytest.fixture(scope="module")
def digits() -> ImageSet:
    return load_digits()


@pytest.fixture(scope="module", params=["ddpm", "dcgan"])
def generator(request: pytest.FixtureRequest, digits: ImageSet) -> ImageGenerator:
    config = ImageGeneratorConfig(
        model=request.param, epochs=2, width=8, latent=16, batch_size=64, sampling_steps=10
    )
    return ImageGenerator(config).fit(digits.take(np.arange(300)), seed=0)


def test_samples_are_reproducible_and_follow_the_class_prior(
    generator: ImageGenerator, digits: ImageSet, tmp_path: Path
) -> None:
    first = generator.sample(500, seed=7)
    assert first.images.dtype == np.uint8
    assert first.shape == (8, 8, 1)
    np.testing.assert_array_equal(first.images, generator.sample(500, seed=7).images)
    assert not np.array_equal(first.images, generator.sample(500, seed=8).images)
    prior = np.bincount(digits.labels[:300], minlength=10) / 300
    observed = np.bincount(first.labels, minlength=10) / 500
    assert np.abs(observed - prior).max() < 0.06
    generator.save(tmp_path)
    again = ImageGenerator.load(tmp_path).sample(500, seed=7)
    np.testing.assert_array_equal(again.images, first.images)
    np.testing.assert_array_equal(again.labels, first.labels)


def test_black_level_comes_from_a_pure_black_background() -> None:
    from panoramia.modalities.image.generator import black_level_of

    mnist_like = np.r_[np.zeros(1000), np.full(10, 5), np.full(10, 9), np.full(500, 200)]
    assert black_level_of(mnist_like.astype(np.uint8)) == 8  # (0, 8]: 1 % of the zeros
    assert black_level_of(np.arange(256, dtype=np.uint8).repeat(10)) == 0  # natural images
    assert black_level_of(np.full(100, 30, np.uint8)) == 0  # no black at all


def test_samples_at_or_below_the_black_level_are_black(generator: ImageGenerator) -> None:
    plain = copy.copy(generator)
    plain.config = replace(generator.config, black_level=0)
    before = plain.sample(300, seed=3).images
    level = int(np.median(before[before > 0]))  # whatever the two epochs learnt
    snapped = copy.copy(generator)
    snapped.config = replace(generator.config, black_level=level)
    after = snapped.sample(300, seed=3).images
    np.testing.assert_array_equal(after, np.where(before <= level, 0, before))
    assert ((before > 0) & (before <= level)).any()  # the test sees pixels to blacken


def test_generator_needs_square_images_divisible_by_four() -> None:
    odd = ImageSet(np.zeros((4, 10, 10, 1), np.uint8), np.zeros(4, np.int64))
    with pytest.raises(InputError, match="divisible by 4"):
        ImageGenerator(ImageGeneratorConfig(epochs=1)).fit(odd, seed=0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": "vae"}, "generator.model: 'vae' is not dcgan or ddpm"),
        ({"model": "ddpm", "width": 12}, "generator.width: 12 is not a multiple of 8"),
        ({"model": "ddpm", "sampling_steps": 0}, "generator.sampling_steps: 0 is not in"),
        ({"black_level": 256}, "generator.black_level: 256 is not in"),
    ],
)
def test_bad_generator_settings_are_named(change: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        ImageGeneratorConfig(**change)


def test_ddim_returns_the_data_under_an_exact_denoiser() -> None:
    """Oracle: when every image is x*, the exact noise is ε = (x_t − √ᾱ_t·x*)/√(1 − ᾱ_t) and
    deterministic DDIM must land on x* from any start, for any number of steps."""
    import torch

    from panoramia.modalities.image.ddpm import cosine_alpha_bar, ddim_sample

    target = torch.linspace(-1.0, 1.0, 2 * 4 * 4).reshape(2, 4, 4)
    alpha_bar = cosine_alpha_bar(1000)

    class ExactDenoiser(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.classes = torch.nn.Embedding(3, 1)  # two classes and "none"

        def forward(self, x: torch.Tensor, steps: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
            kept = alpha_bar[steps][:, None, None, None]
            return (x - kept.sqrt() * target) / (1.0 - kept).sqrt()

    for steps, guidance in [(1, 1.0), (7, 1.0), (50, 3.0)]:
        images = ddim_sample(
            ExactDenoiser(), torch.tensor([0, 1, 1]), (2, 4, 4), diffusion_steps=1000,
            sampling_steps=steps, guidance=guidance, generator=torch.Generator().manual_seed(0),
        )  # fmt: skip
        torch.testing.assert_close(images, target.expand(3, -1, -1, -1), atol=1e-4, rtol=0)


def test_ddpm_learns_each_class_pattern() -> None:
    """Two classes with one image each (black; a white centre square): after a short training
    the samples of each class are close to its image, far from the other's."""
    patterns = np.zeros((2, 8, 8, 1), np.uint8)
    patterns[1, 2:6, 2:6] = 255
    labels = np.repeat([0, 1], 512)
    members = ImageSet(patterns[labels], labels)
    config = ImageGeneratorConfig(
        model="ddpm", epochs=40, width=8, batch_size=64, learning_rate=1e-3, ema_decay=0.9,
        sampling_steps=20,
    )  # fmt: skip
    samples = ImageGenerator(config).fit(members, seed=0).sample(200, seed=1)
    pixels = samples.images.astype(float)
    distance = np.abs(pixels[:, None] - patterns[None].astype(float)).mean(axis=(2, 3, 4))
    own = distance[np.arange(200), samples.labels]
    other = distance[np.arange(200), 1 - samples.labels]
    assert np.median(own) < 20 < np.median(other)


def test_quality_filter_keeps_at_least_one_minus_max_drop(
    generator: ImageGenerator, digits: ImageSet
) -> None:
    from panoramia.modalities.image.generator_filter import filter_synthetic_images

    real = digits.take(np.arange(300))
    result = filter_synthetic_images(
        real, generator.sample(300, seed=1), generator.sample(400, seed=2),
        real_quantile=0.05, max_drop=0.5, seed=0, epochs=2,
    )  # fmt: skip
    assert 200 <= len(result.kept) <= 400
    assert result.real_probability.shape == (400,)
    assert np.all((result.real_probability >= 0) & (result.real_probability <= 1))
    kept = result.real_probability >= result.threshold
    np.testing.assert_array_equal(result.kept.labels, generator.sample(400, seed=2).labels[kept])
    np.testing.assert_array_equal(result.kept_real_probability, result.real_probability[kept])


def test_draw_classes_follows_the_probabilities() -> None:
    probabilities = np.tile([0.1, 0.6, 0.3], (20000, 1))
    drawn = draw_classes(probabilities, seed=0)
    frequencies = np.bincount(drawn, minlength=3) / drawn.size
    np.testing.assert_allclose(frequencies, [0.1, 0.6, 0.3], atol=0.015)
    certain = draw_classes(np.eye(3)[[2, 0, 1]], seed=1)
    assert certain.tolist() == [2, 0, 1]


def test_labeler_relabels_with_known_classes(digits: ImageSet, tmp_path: Path) -> None:
    from panoramia.modalities.image.helper import ImageLabeler
    from panoramia.modalities.image.training import ImageModelConfig

    labeler = ImageLabeler(ImageModelConfig(width=16, epochs=15, batch_size=32), tmp_path, seed=0)
    labeler.fit(digits.take(np.arange(600)), n_classes=10)
    held_out = digits.take(np.arange(1000, 1400))
    relabelled = labeler.relabel(held_out, seed=0)
    np.testing.assert_array_equal(relabelled.images, held_out.images)
    assert relabelled.labels.min() >= 0
    assert relabelled.labels.max() <= 9
    assert np.mean(relabelled.labels == held_out.labels) > 0.3  # far above chance (0.1)


def leaky_sets(n: int, seed: int, gap: float) -> tuple[ImageSet, np.ndarray, np.ndarray]:
    """Members and non-members drawn from the same digits; members' losses lower by ``gap``."""
    rng = np.random.default_rng(seed)
    digits = load_digits()
    index = rng.choice(len(digits), n, replace=False)
    membership = rng.integers(0, 2, n).astype(np.int8)
    losses = rng.exponential(1.0, n) * np.where(membership == 1, np.exp(-gap), 1.0)
    return digits.take(index), losses, membership


def test_distinguisher_scores_are_continuous_and_chosen_by_validation() -> None:
    config = ImageDistinguisherConfig(width=4, hidden=8, epochs=4, batch_size=64)
    model = ImageDistinguisher(config, seed=0)
    model.fit(*leaky_sets(600, 0, gap=3.0), *leaky_sets(300, 1, gap=3.0))
    images, losses, membership = leaky_sets(400, 2, gap=3.0)
    scores = model.score(images, losses)
    assert scores.dtype == np.float64
    assert scores.shape == (400,)
    assert np.unique(scores).size > 300  # continuous, never hard 0/1 predictions
    assert np.all((scores > 0) & (scores < 1))
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(membership, scores) > 0.8
    assert [c.params["epoch"] for c in model.candidates] == [1, 2, 3, 4]
    best = max(c.validation_theta_lb for c in model.candidates)
    assert model.chosen.validation_theta_lb == best


def test_distinguisher_without_signal_stays_near_chance() -> None:
    config = ImageDistinguisherConfig(width=4, hidden=8, epochs=3, batch_size=64)
    model = ImageDistinguisher(config, seed=0)
    model.fit(*leaky_sets(600, 3, gap=0.0), *leaky_sets(300, 4, gap=0.0))
    images, losses, membership = leaky_sets(600, 5, gap=0.0)
    from sklearn.metrics import roc_auc_score

    assert abs(roc_auc_score(membership, model.score(images, losses)) - 0.5) < 0.1


def test_cross_fitted_losses_rate_real_images_with_the_model_that_did_not_see_them(
    digits: ImageSet, tmp_path: Path
) -> None:
    from panoramia.modalities.image.generator_filter import cross_fitted_losses
    from panoramia.modalities.image.training import ImageModelConfig

    real, candidates = digits.take(np.arange(300)), digits.take(np.arange(300, 400))
    fitted = cross_fitted_losses(
        real, ImageModelConfig(width=8, epochs=8), tmp_path, seed=3, n_classes=10
    )
    for k, model in enumerate(fitted.models):
        held_out, trained = (
            np.flatnonzero(fitted.real_fold == k),
            np.flatnonzero(fitted.real_fold != k),
        )
        np.testing.assert_allclose(
            fitted.held_out_real[held_out], model.per_example_loss(real.take(held_out))
        )
        assert (
            model.per_example_loss(real.take(trained)).mean()
            < fitted.held_out_real[held_out].mean()
        )
    losses = fitted.of(candidates)
    assert losses.shape == (100,)
    assert np.all(np.isfinite(losses))
    assert np.all(losses >= 0)
    np.testing.assert_array_equal(losses, fitted.of(candidates))


def calibrated_sets(n: int, seed: int) -> tuple[ImageSet, np.ndarray, np.ndarray]:
    """Side (n, 2): f's and h's losses. Both follow each example's difficulty (spread over
    orders of magnitude); members' f-losses are lower by e^-2, so only f against h reveals
    membership well."""
    rng = np.random.default_rng(seed)
    digits = load_digits()
    membership = rng.integers(0, 2, n).astype(np.int8)
    difficulty = np.exp(rng.normal(0.0, 2.5, n))
    f_loss = difficulty * np.exp(-2.0 * membership) * np.exp(rng.normal(0.0, 0.3, n))
    h_loss = difficulty * np.exp(rng.normal(0.0, 0.3, n))
    index = rng.choice(len(digits), n, replace=False)
    return digits.take(index), np.column_stack([f_loss, h_loss]), membership


def test_distinguisher_uses_a_second_models_losses() -> None:
    """With f's and h's losses stacked as side (n, 2) (audit.attack_side=target+helper), the
    distinguisher finds what neither loss shows alone."""
    from sklearn.metrics import roc_auc_score

    config = ImageDistinguisherConfig(width=4, hidden=16, epochs=8, batch_size=64)
    train, val, test = calibrated_sets(1000, 10), calibrated_sets(400, 11), calibrated_sets(600, 12)
    both = ImageDistinguisher(config, seed=0).fit(*train, *val)
    f_only = ImageDistinguisher(config, seed=0)
    f_only.fit(train[0], train[1][:, 0], train[2], val[0], val[1][:, 0], val[2])
    images, side, membership = test
    auc_both = roc_auc_score(membership, both.score(images, side))
    auc_f = roc_auc_score(membership, f_only.score(images, side[:, 0]))
    assert auc_both > 0.9
    assert auc_both > auc_f + 0.1


def test_a_seed_gives_the_same_images_whatever_number_a_device_samples_at_once(
    generator: ImageGenerator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU samples 2,048 images per call and the CPU 256; the noise is drawn 256 at a time
    from the seed's CPU generator, so both give the same images (the CPU's here, twice)."""
    import panoramia.modalities.image.generator as module

    drawn = {}
    for per_call in (256, 512):
        monkeypatch.setattr(module, "SAMPLE_BATCH", {"cpu": per_call, "cuda": per_call})
        drawn[per_call] = generator.sample(600, seed=3)
    np.testing.assert_array_equal(drawn[256].images, drawn[512].images)
    np.testing.assert_array_equal(drawn[256].labels, drawn[512].labels)
    assert len({image.tobytes() for image in drawn[256].images[:20]}) == 20  # not one image
