"""The text generator: a causal LM fine-tuned on D_G^train, prompted with chunks of D_G^prompt.

``TextGenerator(config).fit(train, architecture=..., tokenizer_dir=..., seed=...)`` then
``.sample(prompts, n, seed=...)``: a :class:`~panoramia.modalities.text.documents.TextSet` of n
synthetic chunks, each the L-token continuation of an L-token prompt (PANORAMIA App. C.2, L = 64),
drawn from the LM's whole next-token distribution at temperature 1 by default (``top_k`` keeps
the k likeliest tokens of each draw, as the paper's k = 200 over GPT-2's 50,257),
``samples_per_prompt`` continuations per prompt (prompts are reused cyclically when n exceeds
prompts × samples_per_prompt); generated in batches with the KV cache. ``.save(dir)`` /
``TextGenerator.load(dir)``.

The LM starts from ``base_model`` (a local directory) when given, else from fresh weights of the
target's architecture with a context of 2L. It is trained on 2L-token sequences: a D_G^train
chunk followed by another chunk of the same document (the next one in D_G^train when there is
one), so that it learns to continue a 64-token prompt.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from panoramia.modalities.text.causal_lm import CausalLMConfig
from panoramia.modalities.text.documents import TextSet
from panoramia.setting_bounds import BELOW_ONE, COUNT, LEVEL, Range, ranged

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

SETTINGS = "generator.json"
SAMPLING = ("top_k", "temperature", "samples_per_prompt", "generation_batch")
"""The settings that only drawing reads: a fitted generator serves jobs that differ in them."""


@dataclass
class TextGeneratorConfig(CausalLMConfig):
    """Fine-tuning (fields of CausalLMConfig) and sampling."""

    dropout: float | None = ranged(0.1, BELOW_ONE)
    """Dropout of the generator's LM; None: the target's (the same generator then serves
    targets that differ only in their own regularisation)."""
    prompt_fraction: float = ranged(0.3, LEVEL)
    """Share of D_G held out as prompts (D_G^prompt; the paper's 15 % of 50 %)."""
    top_k: int | None = ranged(None, COUNT)
    """Draw each token from the k likeliest only; None: from the whole vocabulary (the LM's own
    distribution). Truncation suits a large vocabulary; over a small one it drops the rare tokens
    real text holds, which a bag of words then spots (docs/RESULTS.md §23)."""
    temperature: float = ranged(1.0, Range(0, 100, open_low=True))
    samples_per_prompt: int = ranged(8, COUNT)
    generation_batch: int = ranged(64, COUNT)


def continuation_pairs(chunks: TextSet, *, seed: int) -> np.ndarray:
    """int64 (N, 2L): each chunk followed by a partner chunk from the same document.

    The partner is the next chunk of the same document among ``chunks`` (cyclically); a chunk
    alone in its document gets a random other chunk.
    """
    order = np.lexsort((chunks.positions, chunks.documents))
    documents = chunks.documents[order]
    partner = np.empty(len(order), np.int64)
    starts = np.flatnonzero(np.r_[True, documents[1:] != documents[:-1]])
    ends = np.r_[starts[1:], len(order)]
    rng = np.random.default_rng(seed)
    for start, end in zip(starts, ends, strict=True):
        if end - start > 1:
            partner[start:end] = np.roll(order[start:end], -1)
        else:
            partner[start] = rng.integers(len(order))
    return np.concatenate([chunks.tokens[order], chunks.tokens[partner]], axis=1)


class TextGenerator:
    def __init__(self, config: TextGeneratorConfig) -> None:
        self.config = config
        self.model: PreTrainedModel | None = None
        self.tokens_per_second: float | None = None
        """Generation throughput of the last :meth:`sample` call."""

    def fit(
        self,
        train: TextSet,
        *,
        architecture: PretrainedConfig,
        seed: int,
        validation: TextSet | None = None,
    ) -> dict[str, float]:
        """Fine-tune on D_G^train; returns training metrics."""
        from panoramia.modalities.text.causal_lm import fit_causal_lm, new_causal_lm, with_context

        length = train.length
        model = new_causal_lm(
            base_model=self.config.base_model,
            architecture=with_context(architecture, 2 * length, dropout=self.config.dropout),
            seed=seed,
        )
        sequences = continuation_pairs(train, seed=seed)
        held_out = None if validation is None else continuation_pairs(validation, seed=seed + 1)
        self.model, metrics = fit_causal_lm(
            model, sequences, self.config, seed=seed, validation=held_out
        )
        from panoramia.devices import inference_device

        device = inference_device(self.config.accelerator, self.config.devices)
        # transformers wraps Module.to with functools.wraps: its type takes `self` first
        self.model = self.model.to(device)  # type: ignore[arg-type]
        return metrics

    def sample(self, prompts: TextSet, n: int, *, seed: int) -> TextSet:
        """n continuations (L tokens each) of the prompts; document = the prompt's, position −1."""
        import torch

        from panoramia.devices import forward_passes

        assert self.model is not None
        length = prompts.length
        which = (np.arange(n) // self.config.samples_per_prompt) % len(prompts)
        device = next(self.model.parameters()).device
        torch.manual_seed(seed)
        outputs, started = [], time.perf_counter()
        with forward_passes(device):  # bf16 autocast on a GPU; tokens are drawn from float32
            for start in range(0, n, self.config.generation_batch):
                batch = torch.from_numpy(
                    prompts.tokens[which[start : start + self.config.generation_batch]]
                ).to(device)
                # a causal LM's generate is GenerationMixin's, which PreTrainedModel's type lacks
                # (nn.Module's __getattr__ answers: a Tensor or a Module)
                generated = self.model.generate(  # type: ignore[operator]
                    input_ids=batch, attention_mask=torch.ones_like(batch), do_sample=True,
                    top_k=self.config.top_k or 0, top_p=1.0,  # never the model file's own cuts
                    temperature=self.config.temperature,
                    max_new_tokens=length, min_new_tokens=length,
                    pad_token_id=self.model.config.eos_token_id,
                )  # fmt: skip
                outputs.append(generated[:, length : 2 * length].cpu().numpy())
        seconds = time.perf_counter() - started
        self.tokens_per_second = n * length / max(seconds, 1e-9)
        tokens = (
            np.concatenate(outputs).astype(np.int64) if outputs else np.zeros((0, length), np.int64)
        )
        return TextSet(tokens, prompts.documents[which], np.full(n, -1, np.int64))

    def save(self, directory: Path, tokenizer_dir: Path) -> None:
        from panoramia.modalities.text.causal_lm import save_causal_lm

        assert self.model is not None
        save_causal_lm(self.model, tokenizer_dir, directory)
        (directory / SETTINGS).write_text(json.dumps(asdict(self.config), indent=1))

    @classmethod
    def load(cls, directory: Path, *, sampling: TextGeneratorConfig | None = None) -> TextGenerator:
        """The generator saved in ``directory``, drawing with ``sampling``'s :data:`SAMPLING`
        settings where given (else with those it was fitted under)."""
        from panoramia.devices import inference_device
        from panoramia.modalities.text.targets import load_causal_lm_target

        config = TextGeneratorConfig(**json.loads((directory / SETTINGS).read_text()))
        if sampling is not None:
            config = replace(config, **{name: getattr(sampling, name) for name in SAMPLING})
        generator = cls(config)
        device = inference_device(config.accelerator, config.devices)
        generator.model = load_causal_lm_target(directory, {"directory": "."}, device).model
        return generator
