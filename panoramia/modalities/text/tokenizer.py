"""A byte-level BPE tokenizer (GPT-2's scheme) trained offline with ``tokenizers``.

The demo targets need a tokenizer and no hub is reachable, so one is trained on the audit's
text and saved as a Hugging Face ``PreTrainedTokenizerFast`` directory (``tokenizer.json``,
``tokenizer_config.json``), which ``AutoTokenizer.from_pretrained(dir, local_files_only=True)``
opens. Byte-level: every string is encodable, nothing maps to an unknown token.
"""

from __future__ import annotations

from pathlib import Path

from panoramia.errors import InputError

END_OF_TEXT = "<|endoftext|>"


def train_bpe_tokenizer(documents: list[str], *, vocab_size: int, directory: Path) -> int:
    """Train on ``documents``, save into ``directory``; returns the vocabulary size reached."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 300:
        raise InputError(f"data.vocab_size: {vocab_size} (a byte-level BPE needs at least 300)")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(documents, trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=END_OF_TEXT, eos_token=END_OF_TEXT,
        pad_token=END_OF_TEXT,
    )  # fmt: skip
    wrapped.save_pretrained(directory)
    return len(wrapped)


def load_tokenizer(directory: str | Path):  # -> transformers.PreTrainedTokenizerBase
    """A tokenizer directory (or a model directory holding one), without the network."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(
            str(directory), local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError, TypeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"tokenizer {str(directory)!r}: cannot be loaded ({first})") from None


def tokenize(documents: list[str], tokenizer) -> list[list[int]]:
    """Token ids of each document (no special tokens added)."""
    encoded = tokenizer(documents, add_special_tokens=False)["input_ids"]
    return [list(ids) for ids in encoded]
