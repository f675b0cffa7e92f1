"""The text distinguisher's loss features and the blind classifier (docs/SPEC.md §2.9)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from panoramia.modalities.text.blind import BlindTextClassifier
from panoramia.modalities.text.features import (
    calibrated_features,
    loss_sequence_features,
    lowest_share_mean,
)


def test_calibrated_features_hold_the_sequence_then_the_calibration() -> None:
    rng = np.random.default_rng(0)
    losses = rng.uniform(0.1, 5, size=(7, 10, 3))
    features = calibrated_features(losses)
    sequence = loss_sequence_features(losses)
    assert features.shape == (7, sequence.shape[1] + 10 + 5)
    np.testing.assert_array_equal(features[:, : sequence.shape[1]], sequence)
    calibrated = losses[..., 0] - losses[..., 1:].mean(axis=2)
    np.testing.assert_allclose(features[:, sequence.shape[1] : -5], calibrated, rtol=1e-6)
    mean, min_k_raw, min_k_calibrated, below, _ = features[:, -5:].T
    np.testing.assert_allclose(mean, calibrated.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(min_k_raw, np.sort(losses[..., 0], axis=1)[:, :2].mean(axis=1), 1e-5)
    np.testing.assert_allclose(
        min_k_calibrated, np.sort(calibrated, axis=1)[:, :2].mean(axis=1), 1e-5
    )
    np.testing.assert_allclose(below, (calibrated < 0).mean(axis=1))


def test_calibrated_features_of_one_model_add_its_min_k() -> None:
    losses = np.arange(20, dtype=float).reshape(2, 10) + 1
    features = calibrated_features(losses)
    assert features.shape == (2, 22 + 1)
    assert features[:, -1].tolist() == pytest.approx([1.5, 11.5])  # the lowest 2 of 10
    assert lowest_share_mean(losses, 0.01).tolist() == [1.0, 11.0]  # at least one token


def test_a_token_shift_the_generator_left_is_caught_without_any_model() -> None:
    """Members use tokens 0–99, generated chunks also 100–119: the blind classifier sees it,
    out of fold on its training chunks and on new chunks alike; same tokens, chance."""
    rng = np.random.default_rng(1)
    members = rng.integers(0, 100, size=(200, 16))
    generated = rng.integers(0, 120, size=(200, 16))
    labels = np.r_[np.ones(200), np.zeros(200)].astype(int)
    model = BlindTextClassifier(seed=0).fit(np.r_[members, generated], labels)
    assert model.training_logits is not None
    assert model.training_logits.shape == (400,)

    assert roc_auc_score(labels, model.training_logits) > 0.9
    fresh = np.r_[rng.integers(0, 100, size=(100, 16)), rng.integers(0, 120, size=(100, 16))]
    fresh_labels = np.r_[np.ones(100), np.zeros(100)]
    assert roc_auc_score(fresh_labels, model.probabilities(fresh)) > 0.9
    same = BlindTextClassifier(seed=0).fit(rng.integers(0, 100, size=(400, 16)), labels)
    assert same.training_logits is not None
    assert abs(roc_auc_score(labels, same.training_logits) - 0.5) < 0.1


def test_the_blind_column_is_out_of_fold_on_the_training_chunks_alone() -> None:
    """The distinguisher stacks the blind logit: its training chunks get their out-of-fold
    logits (a model that never saw each one), any other chunks the full model's."""
    from panoramia.modalities.text.distinguisher import TextDistinguisher, TextDistinguisherConfig
    from panoramia.modalities.text.documents import TextSet

    rng = np.random.default_rng(3)
    tokens = np.r_[rng.integers(0, 100, size=(60, 16)), rng.integers(0, 120, size=(60, 16))]
    chunks = TextSet(tokens, np.arange(120), np.zeros(120, dtype=np.int64))
    labels = np.r_[np.ones(60), np.zeros(60)].astype(int)
    distinguisher = TextDistinguisher(TextDistinguisherConfig(blind=True), seed=0, vocab_size=120)
    distinguisher.blind_model = BlindTextClassifier(0).fit(tokens, labels)
    distinguisher._blind_train = chunks
    losses = rng.uniform(0.1, 5, size=(120, 15))
    model = distinguisher.blind_model
    assert model.training_logits is not None
    np.testing.assert_allclose(distinguisher.features_of(chunks, losses)[:, -1],
                               model.training_logits, rtol=1e-5)  # fmt: skip
    copy = TextSet(tokens.copy(), np.arange(120), np.zeros(120, dtype=np.int64))
    np.testing.assert_allclose(distinguisher.features_of(copy, losses)[:, -1],
                               model.logits(tokens), rtol=1e-5)  # fmt: skip
    assert not np.allclose(model.training_logits, model.logits(tokens))


def test_the_new_settings_stay_out_of_a_stage_key_at_their_defaults() -> None:
    """Stores built before ``features`` and ``blind`` existed are still found at the defaults;
    set, they are in the key."""
    from dataclasses import asdict

    from panoramia.hashing import settings_key
    from panoramia.modalities.text.distinguisher import TextDistinguisherConfig

    default = TextDistinguisherConfig()
    before = {k: v for k, v in asdict(default).items() if k not in ("features", "blind")}
    assert settings_key(default) == before
    chosen = settings_key(TextDistinguisherConfig(features="calibrated", blind=True))
    assert (chosen["features"], chosen["blind"]) == ("calibrated", True)


def test_losses_stages_are_read_whether_written_a_set_a_file_or_in_one_archive(
    tmp_path: Path,
) -> None:
    """Per-token losses are written a set at a time (``sequences/<set>.npy``, memory-mapped
    when read); a store built before keeps them in one ``sequence_losses.npz``, still read."""
    from panoramia.pipeline.stages.losses import SEQUENCE_LOSSES, SEQUENCES, side_losses_of
    from panoramia.pipeline.stages.runner import StageResult

    losses = {"member_audit": np.arange(6.0).reshape(2, 3), "synthetic_audit": np.ones((2, 3))}
    new, old = tmp_path / "new", tmp_path / "old"
    (new / SEQUENCES).mkdir(parents=True)
    for name, values in losses.items():
        np.save(new / SEQUENCES / f"{name}.npy", values)
    old.mkdir()
    np.savez(old / SEQUENCE_LOSSES, **losses)
    for folder in (new, old):
        read = side_losses_of(StageResult("losses_target", "k", folder, 0.0, True))
        assert set(read) == set(losses)
        for name, values in losses.items():
            np.testing.assert_array_equal(read[name], values)


def test_a_gpt2_trained_whole_keeps_its_target_key_and_a_lora_target_names_its_recipe() -> None:
    from dataclasses import asdict

    from panoramia.hashing import settings_key
    from panoramia.modalities.text.config import TextTargetConfig
    from panoramia.modalities.text.lora import RECIPE_VERSION, recipe_key

    whole = TextTargetConfig()
    new = ("architecture", "adapter", "lora_rank", "lora_alpha")
    assert recipe_key(settings_key(whole)) == {
        k: v for k, v in asdict(whole).items() if k not in new
    }  # fmt: skip
    lora = recipe_key(settings_key(TextTargetConfig(architecture="llama", adapter="lora")))
    assert (lora["adapter"], lora["recipe_version"]) == ("lora", RECIPE_VERSION)
