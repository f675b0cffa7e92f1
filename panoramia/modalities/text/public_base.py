"""Pre-training the public base LM of a text audit (the stand-in for a pre-trained GPT-2).

PANORAMIA's text generator and helper are GPT-2 — pre-trained on public web text — fine-tuned
on D_G and on synthetic text. With no hub, the demo pre-trains its own base once: the target's
architecture (context 2L) on chunks of public text that the target never saw (docstrings of
installed packages), tokenised with the audit's tokenizer. Chunks are drawn at random and
trained in pairs, so that positions L…2L−1 (the generator's continuations) are learned too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from panoramia.errors import InputError
from panoramia.modalities.text.causal_lm import CausalLMConfig
from panoramia.modalities.text.documents import chunk_documents

if TYPE_CHECKING:
    from transformers import PretrainedConfig


def public_chunks(
    modules: list[Path], tokenizer, *, length: int, count: int, seed: int
) -> np.ndarray:
    """``count`` random ``length``-token chunks (int64, (count, length)) of the modules'
    docstrings, read and tokenised in a seeded order only until enough chunks are found."""
    from panoramia.modalities.text.datasets import module_docstrings
    from panoramia.modalities.text.tokenizer import tokenize

    order = np.random.default_rng(seed).permutation(len(modules))
    parts, found = [], 0
    for start in range(0, len(order), 64):
        texts = [module_docstrings(modules[i]) for i in order[start : start + 64]]
        ids = [i for i in tokenize([t for t in texts if t], tokenizer) if len(i) >= length]
        if ids:
            chunks = chunk_documents(ids, length=length, max_chunks=50).tokens
            parts.append(chunks)
            found += len(chunks)
        if found >= count:
            break
    if found < 2:
        raise InputError("base: the public text gives fewer than 2 chunks")
    tokens = np.concatenate(parts)
    return tokens[np.random.default_rng(seed + 1).permutation(len(tokens))[:count]]


def pretrain_public_base(
    modules: list[Path],
    tokenizer_dir: Path,
    architecture: PretrainedConfig,
    directory: Path,
    *,
    length: int,
    count: int,
    training: CausalLMConfig,
    seed: int,
) -> dict[str, float]:
    """Pre-train fresh weights of ``architecture`` on chunks of the modules' docstrings; save a
    model directory."""
    from panoramia.modalities.text.causal_lm import fit_causal_lm, new_causal_lm, save_causal_lm
    from panoramia.modalities.text.tokenizer import load_tokenizer

    tokens = public_chunks(
        modules, load_tokenizer(tokenizer_dir), length=length, count=count, seed=seed
    )
    pairs = tokens[: len(tokens) // 2 * 2].reshape(-1, 2 * length)
    model = new_causal_lm(base_model=None, architecture=architecture, seed=seed)
    model, metrics = fit_causal_lm(model, pairs, training, seed=seed)
    save_causal_lm(model, tokenizer_dir, directory)
    return {"chunks": len(tokens), **metrics}
