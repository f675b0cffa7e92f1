"""The data stage of the text audit: the tokenizer, then member / control / non-member chunks.

The tokenizer is the target's own (``target.kind=path``: copied from its directory), that of
the pre-trained model a demo target starts from (``target.base_model``), or, for the other
demo targets, a byte-level BPE trained on the corpus. Documents are tokenised and cut into
``chunk_length``-token chunks (at most ``max_chunks_per_document`` per document). Embedded text
is shuffled by *document* with ``pool_seed`` into the target's pool (the known members), a
disjoint pool (the negative control's training set) and the rest (real non-members), so that no
document has chunks in two pools. Every part is an ``.npz`` TextSet.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from panoramia.errors import InputError
from panoramia.hashing import settings_but, tree_sha256
from panoramia.modalities.text.config import TextDataConfig, TextTargetConfig
from panoramia.modalities.text.documents import TextSet, chunk_documents, read_documents
from panoramia.modalities.text.targets import text_model_folders
from panoramia.pipeline.data_identity import input_paths_identity
from panoramia.pipeline.stages.example_sets import save_known

MEMBERS = "members.npz"
CONTROL_POOL = "control_pool.npz"
NONMEMBERS = "nonmembers.npz"
TOKENIZER = "tokenizer"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                   "special_tokens_map.json", "tokenizer.model")  # fmt: skip


def _embedded(source: str) -> list[str]:
    from panoramia.modalities.text.datasets import EMBEDDED_TEXT

    return EMBEDDED_TEXT[source]()  # data.source's choices: panoramia.audit_settings


def text_data_identity(config: TextDataConfig, target: TextTargetConfig) -> dict:
    """What the data stage's key hashes: the config, the text and the tokenizer's files."""
    identity = settings_but(config, ("split",))  # the split is the later stages' to key
    if config.source == "files":
        identity.update(input_paths_identity(config))
    else:
        text = "\x00".join(_embedded(config.source)).encode()
        identity["text_sha256"] = hashlib.sha256(text).hexdigest()
    found = tokenizer_folder(target)
    if found is not None:
        key, folder = found
        identity["tokenizer_sha256"] = {
            name: tree_sha256(folder / name) for name in TOKENIZER_FILES if (folder / name).exists()
        }
        if not identity["tokenizer_sha256"]:
            raise InputError(f"{key}: {str(folder)!r} holds no tokenizer files")
    return identity


def tokenizer_folder(target: TextTargetConfig) -> tuple[str, Path] | None:
    """Where the audit's tokenizer comes from, with the setting that names it: a brought
    model's (``target.path``; a LoRA's: its base's or its own), or the pre-trained model a demo
    target starts from (``target.base_model``, e.g. SmolLM2: its vocabulary is the model's);
    None where the demo trains a BPE on the corpus."""
    if target.kind == "path":
        if not target.path or not Path(target.path).is_dir():
            raise InputError(f"target.path: {target.path!r} is not a model directory")
        return "target.path", text_model_folders(Path(target.path))[1]
    if target.base_model:
        if not Path(target.base_model).is_dir():
            raise InputError(f"target.base_model: {target.base_model!r} is not a model directory")
        return "target.base_model", Path(target.base_model)
    return None


def _pools(chunks: TextSet, n_documents: int, config: TextDataConfig) -> list[TextSet]:
    """Members, control pool and real non-members: whole documents in a seeded order."""
    counts = np.bincount(chunks.documents, minlength=n_documents)
    order = np.random.default_rng(config.pool_seed).permutation(n_documents)
    total = np.cumsum(counts[order])
    members_end = int(np.searchsorted(total, config.pool_chunks)) + 1
    control_end = members_end
    if members_end < n_documents:
        wanted = total[members_end - 1] + config.pool_chunks
        control_end = int(np.searchsorted(total, wanted)) + 1
    if control_end >= n_documents or total[-1] - total[control_end - 1] == 0:
        raise InputError(
            f"data.pool_chunks: {config.pool_chunks} is too large for {config.source} "
            f"({int(total[-1])} chunks: two pools and real non-members)"
        )
    parts = []
    for documents in (order[:members_end], order[members_end:control_end], order[control_end:]):
        parts.append(chunks.take(np.flatnonzero(np.isin(chunks.documents, documents))))
    return parts


def build_text_data(config: TextDataConfig, target: TextTargetConfig, directory: Path) -> dict:
    """Write the tokenizer, members, the control pool (embedded text) and real non-members."""
    from panoramia.modalities.text.tokenizer import load_tokenizer, tokenize, train_bpe_tokenizer

    outside: list[str] = []
    if config.source == "files":
        assert config.members_path is not None
        documents = read_documents(config.members_path, field=config.text_field)
        if config.nonmembers_path:
            outside = read_documents(config.nonmembers_path, field=config.text_field)
    else:
        documents = _embedded(config.source)
    found = tokenizer_folder(target)
    if found is not None:
        load_tokenizer(found[1]).save_pretrained(directory / TOKENIZER)
    else:
        train_bpe_tokenizer(
            documents + outside, vocab_size=config.vocab_size, directory=directory / TOKENIZER
        )
    tokenizer = load_tokenizer(directory / TOKENIZER)
    length, cap = config.chunk_length, config.max_chunks_per_document
    chunks = chunk_documents(tokenize(documents, tokenizer), length=length, max_chunks=cap)
    control = nonmembers = None
    if config.source == "files":
        members = chunks
        if outside:
            nonmembers = chunk_documents(
                tokenize(outside, tokenizer), length=length, max_chunks=cap
            )
            nonmembers = TextSet(
                nonmembers.tokens, nonmembers.documents + len(documents), nonmembers.positions
            )
    else:
        members, control, nonmembers = _pools(chunks, len(documents), config)
        control.save(directory / CONTROL_POOL)
    pool = len(members)
    members = save_known(
        directory, members, nonmembers, max_members=config.max_members,
        files=(MEMBERS, NONMEMBERS),
    )  # fmt: skip
    return {
        # the held-out documents were drawn at random with the members' (by document), unless
        # they are her own or max_members kept the pool's first chunks in the corpus's order
        "held_out_drawn": config.source != "files" and len(members) == pool,
        "documents": len(documents) + len(outside),
        "members": len(members),
        "member_documents": int(np.unique(members.documents).size),
        "nonmembers": 0 if nonmembers is None else len(nonmembers),
        "control_pool": 0 if control is None else len(control),
        "chunk_length": length,
        "vocab_size": len(tokenizer),
    }
