"""The text models: tokenizer, causal-LM training and adapter, generator, distinguisher."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from panoramia.errors import InputError
from panoramia.modalities.text.causal_lm import (
    CausalLMConfig,
    GPT2Size,
    fit_causal_lm,
    gpt2_architecture,
    new_causal_lm,
    save_causal_lm,
)
from panoramia.modalities.text.documents import TextSet, chunk_documents
from panoramia.modalities.text.tokenizer import load_tokenizer, tokenize, train_bpe_tokenizer
from panoramia.targets import load_target

LENGTH = 16
TINY = GPT2Size(n_layer=1, n_embd=32, n_head=2, dropout=0.0)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TextSet]:
    """A tokenizer trained on the documentation topics and their 16-token chunks."""
    from panoramia.modalities.text.datasets import load_pydoc_topics

    directory = tmp_path_factory.mktemp("tokenizer")
    documents = load_pydoc_topics()
    train_bpe_tokenizer(documents, vocab_size=400, directory=directory)
    chunks = chunk_documents(
        tokenize(documents, load_tokenizer(directory)), length=LENGTH, max_chunks=5
    )
    return directory, chunks


@pytest.fixture(scope="module")
def memorising_model(
    corpus: tuple[Path, TextSet], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, TextSet, TextSet]:
    """A tiny GPT-2 trained 40 epochs on 48 chunks (members); 48 other chunks held out."""
    tokenizer_dir, chunks = corpus
    members, others = chunks.take(np.arange(48)), chunks.take(np.arange(100, 148))
    architecture = gpt2_architecture(TINY, vocab_size=400, n_positions=LENGTH, eos_token_id=0)
    model = new_causal_lm(base_model=None, architecture=architecture, seed=0)
    config = CausalLMConfig(epochs=40, batch_size=16, learning_rate=3e-3, accelerator="cpu")
    model, _ = fit_causal_lm(model, members.tokens, config, seed=0)
    directory = tmp_path_factory.mktemp("lm")
    save_causal_lm(model, tokenizer_dir, directory)
    return directory, members, others


def test_byte_level_tokenizer_round_trips_any_text(corpus: tuple[Path, TextSet]) -> None:
    tokenizer = load_tokenizer(corpus[0])
    assert len(tokenizer) == 400
    for text in ("def f(x):\n    return x ** 2", "naïve café — ünïcode ✓", "   spaces\t\ttabs"):
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    with pytest.raises(InputError, match="vocab_size"):
        train_bpe_tokenizer(["x"], vocab_size=100, directory=corpus[0] / "small")


def test_adapter_losses_match_an_independent_computation(
    memorising_model: tuple[Path, TextSet, TextSet],
) -> None:
    directory, members, _ = memorising_model
    target = load_target(directory)
    assert target.identity()["format"] == "hf-causal-lm"
    per_token = target.per_token_loss(members)
    assert per_token.shape == (48, LENGTH - 1)
    assert per_token.dtype == np.float64
    # oracle: log-softmax of the logits at t, read at the token t + 1
    with torch.no_grad():
        logits = target.model(input_ids=torch.from_numpy(members.tokens)).logits.double()
    log_p = torch.log_softmax(logits, dim=-1)[:, :-1]
    expected = -log_p.gather(2, torch.from_numpy(members.tokens[:, 1:, None])).squeeze(2)
    assert np.allclose(per_token, expected.numpy(), atol=1e-5)
    assert np.allclose(target.per_example_loss(members), per_token.mean(axis=1))


def test_many_epochs_memorise_members(memorising_model: tuple[Path, TextSet, TextSet]) -> None:
    directory, members, others = memorising_model
    target = load_target(directory)
    member_loss, other_loss = target.per_example_loss(members), target.per_example_loss(others)
    assert member_loss.mean() < 0.6 * other_loss.mean()


def test_a_bare_hugging_face_directory_loads_and_bad_ones_fail_in_one_line(
    memorising_model: tuple[Path, TextSet, TextSet], tmp_path: Path
) -> None:
    directory, members, _ = memorising_model
    bare = tmp_path / "bare"
    shutil.copytree(directory, bare)
    (bare / "target.json").unlink()
    assert np.allclose(
        load_target(bare).per_example_loss(members),
        load_target(directory).per_example_loss(members),
    )
    too_large = TextSet(members.tokens + 1000, members.documents, members.positions)
    with pytest.raises(InputError, match="vocabulary has 400"):
        load_target(bare).per_token_loss(too_large)
    (bare / "model.safetensors").write_bytes(b"corrupt")
    with pytest.raises(InputError, match="not a loadable causal LM") as error:
        load_target(bare)
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match="base_model"):
        new_causal_lm(base_model=str(tmp_path / "nowhere"), architecture=None, seed=0)


def test_generator_continues_prompts_with_top_k_sampling(
    corpus: tuple[Path, TextSet], tmp_path: Path
) -> None:
    from panoramia.modalities.text.generator import (
        TextGenerator,
        TextGeneratorConfig,
        continuation_pairs,
    )

    tokenizer_dir, chunks = corpus
    pairs = continuation_pairs(chunks.take(np.arange(30)), seed=0)
    assert pairs.shape == (30, 2 * LENGTH)
    first = chunks.take(np.arange(30))
    same_document = first.documents[0] == first.documents[1]
    if same_document:  # a chunk's partner is the next chunk of its document
        assert np.array_equal(pairs[0, LENGTH:], first.tokens[1])
    architecture = gpt2_architecture(TINY, vocab_size=400, n_positions=LENGTH, eos_token_id=0)
    config = TextGeneratorConfig(epochs=1, samples_per_prompt=2, generation_batch=4, top_k=20)
    generator = TextGenerator(config)
    generator.fit(chunks.take(np.arange(40)), architecture=architecture, seed=0)
    assert generator.model.config.n_positions == 2 * LENGTH
    generator.save(tmp_path / "g", tokenizer_dir)
    loaded = TextGenerator.load(tmp_path / "g")
    prompts = chunks.take(np.arange(40, 43))
    samples = loaded.sample(prompts, 7, seed=5)
    assert samples.tokens.shape == (7, LENGTH)
    assert samples.tokens.max() < 400
    assert samples.documents.tolist() == prompts.documents[[0, 0, 1, 1, 2, 2, 0]].tolist()
    assert (samples.positions == -1).all()
    assert np.array_equal(samples.tokens, loaded.sample(prompts, 7, seed=5).tokens)
    assert not np.array_equal(samples.tokens, loaded.sample(prompts, 7, seed=6).tokens)
    assert loaded.tokens_per_second > 0
    greedy = TextGenerator(TextGeneratorConfig(top_k=1, samples_per_prompt=1))
    greedy.model = loaded.model
    assert np.array_equal(
        greedy.sample(prompts, 3, seed=1).tokens, greedy.sample(prompts, 3, seed=2).tokens
    )
    # the rank of each drawn token in the LM's next-token distribution: top_k bounds it; None
    # (the default) draws from the whole vocabulary (400 tokens here)
    assert _draw_ranks(loaded, prompts).max() < 20
    assert TextGeneratorConfig().top_k is None
    # a job that draws differently reuses the fitted generator with its own sampling settings
    whole = TextGenerator.load(tmp_path / "g", sampling=TextGeneratorConfig(samples_per_prompt=1))
    assert (whole.config.top_k, whole.config.samples_per_prompt, whole.config.epochs) == (
        None,
        1,
        1,
    )
    whole.model.generation_config.top_p = 0.5  # a model file's own cut (Llama's ship one)
    assert _draw_ranks(whole, prompts).max() >= 200  # beyond the paper's k and any default cut


def _draw_ranks(generator: Any, prompts: TextSet) -> np.ndarray:
    """Rank (0 = likeliest) of every generated token under the generator's LM given its prefix."""
    drawn = generator.sample(prompts, 12, seed=3)
    which = (np.arange(12) // generator.config.samples_per_prompt) % len(prompts)
    sequences = torch.from_numpy(np.concatenate([prompts.tokens[which], drawn.tokens], axis=1))
    with torch.no_grad():
        logits = generator.model(input_ids=sequences).logits[:, LENGTH - 1 : -1]
    chosen = logits.gather(-1, sequences[:, LENGTH:, None])
    return (logits > chosen).sum(-1).numpy()


def test_text_distinguisher_two_phases_and_continuous_scores() -> None:
    from panoramia.modalities.text.distinguisher import TextDistinguisher, TextDistinguisherConfig

    rng = np.random.default_rng(0)
    n, length = 800, 12
    labels = rng.integers(0, 2, n)
    tokens = rng.integers(0, 50, (n, length))
    tokens[labels == 1, 0] = 7  # members start with token 7
    losses = rng.gamma(2.0, 1.0, (n, length - 1)) * np.where(labels == 1, 0.7, 1.0)[:, None]
    chunks = TextSet(tokens, np.arange(n), np.zeros(n, np.int64))
    config = TextDistinguisherConfig(
        d_model=16, layers=1, heads=2, hidden=16, head_epochs=2, epochs=3, batch_size=32,
        learning_rate=3e-3, accelerator="cpu",
    )  # fmt: skip
    train, val = np.arange(500), np.arange(500, n)
    model = TextDistinguisher(config, seed=0, vocab_size=50)
    model.fit(
        chunks.take(train), losses[train], labels[train], chunks.take(val), losses[val],
        labels[val],
    )  # fmt: skip
    assert [c.params["phase"] for c in model.candidates] == ["head"] * 2 + ["all"] * 3
    scores = model.score(chunks.take(val), losses[val])
    assert scores.shape == (300,)
    assert np.unique(scores).size == 300
    assert ((scores > 0) & (scores < 1)).all()
    assert scores[labels[val] == 1].mean() > scores[labels[val] == 0].mean() + 0.1
    assert model.chosen.validation_theta_lb > 0
    with pytest.raises(ValueError, match="side: shape"):
        model.score(chunks.take(val), losses[val][:, :3])


def test_first_phase_trains_the_head_with_the_encoder_frozen() -> None:
    import lightning as L

    from panoramia.modalities.text.distinguisher import TextDistinguisher, TextDistinguisherConfig
    from panoramia.modalities.text.distinguisher_module import TextLossDistinguisher

    rng = np.random.default_rng(1)
    n, length = 64, 8
    chunks = TextSet(rng.integers(0, 20, (n, length)), np.arange(n), np.zeros(n, np.int64))
    losses, labels = rng.gamma(2.0, 1.0, (n, length - 1)), rng.integers(0, 2, n)
    config = TextDistinguisherConfig(
        d_model=8, layers=1, heads=2, hidden=8, head_epochs=2, epochs=0, accelerator="cpu"
    )
    model = TextDistinguisher(config, seed=3, vocab_size=20)
    model.fit(chunks, losses, labels, chunks, losses, labels)
    L.seed_everything(3, verbose=False)
    initial = TextLossDistinguisher(20, length, 2 * (length - 1) + 2, d_model=8, layers=1,
                                    heads=2, hidden=8)  # fmt: skip
    assert torch.equal(initial.embedding.weight, model.model.embedding.weight)
    assert not torch.equal(initial.head[0].weight, model.model.head[0].weight)


def test_public_base_reads_package_docstrings_never_the_audited_text(
    corpus: tuple[Path, TextSet], tmp_path: Path
) -> None:
    from panoramia.modalities.text.datasets import package_modules
    from panoramia.modalities.text.public_base import pretrain_public_base, public_chunks

    tokenizer_dir, _ = corpus
    modules = package_modules(["sklearn"])
    assert modules
    assert all("tests" not in m.parts[-3:-1] for m in modules)
    tokens = public_chunks(modules, load_tokenizer(tokenizer_dir), length=LENGTH, count=50, seed=0)
    assert tokens.shape == (50, LENGTH)
    again = public_chunks(modules, load_tokenizer(tokenizer_dir), length=LENGTH, count=50, seed=0)
    assert np.array_equal(tokens, again)
    architecture = gpt2_architecture(TINY, vocab_size=400, n_positions=2 * LENGTH, eos_token_id=0)
    metrics = pretrain_public_base(
        modules, tokenizer_dir, architecture, tmp_path / "base", length=LENGTH, count=40,
        training=CausalLMConfig(epochs=1, accelerator="cpu"), seed=0,
    )  # fmt: skip
    assert metrics["chunks"] == 40
    base = new_causal_lm(base_model=str(tmp_path / "base"), architecture=None, seed=0)
    assert base.config.n_positions == 2 * LENGTH
    with pytest.raises(InputError, match="not an installed package"):
        package_modules(["no_such_package_here"])


def test_loss_sequence_features_of_several_models_concatenate_per_model() -> None:
    from panoramia.modalities.text.distinguisher import loss_sequence_features

    rng = np.random.default_rng(2)
    f_loss, h_loss = rng.gamma(2.0, 1.0, (5, 7)), rng.gamma(2.0, 1.0, (5, 7))
    both = loss_sequence_features(np.stack([f_loss, h_loss], axis=-1))
    assert both.shape == (5, 2 * (2 * 7 + 2))
    np.testing.assert_array_equal(both[:, :16], loss_sequence_features(f_loss))
    np.testing.assert_array_equal(both[:, 16:], loss_sequence_features(h_loss))
