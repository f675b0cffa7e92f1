"""Token chunks (the membership unit of a text audit) and the readers of the user's text.

A :class:`TextSet` holds ``tokens`` as int64 of shape (N, L): N chunks of exactly L token ids of
the target's tokenizer (PANORAMIA App. C.2: L = 64); ``documents`` as int64 of shape (N,): the
index of the document each chunk comes from; ``positions`` as int64 of shape (N,): the chunk's
place in its document (0, 1, …; −1 for generated chunks). Documents are read from:

* a ``.txt`` file: one document;
* a ``.jsonl`` file: one document per line, a JSON object with a string field (``text`` by
  default) or a bare JSON string;
* a directory: every ``.txt`` and ``.jsonl`` file in it (sorted by name, recursively).

:func:`chunk_documents` cuts each tokenised document into consecutive, non-overlapping chunks of
L tokens, drops the incomplete tail and keeps at most the first ``max_chunks`` per document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from panoramia.data.text import TEXT_SUFFIXES, unstorable
from panoramia.errors import InputError


@dataclass(frozen=True)
class TextSet:
    """int64 token ids (N, L), document indices (N,) and chunk positions in the document (N,)."""

    tokens: np.ndarray
    documents: np.ndarray
    positions: np.ndarray

    def __post_init__(self) -> None:
        if self.tokens.ndim != 2 or not np.issubdtype(self.tokens.dtype, np.integer):
            raise InputError(
                f"tokens: expected integer N×L token ids, got {self.tokens.dtype} "
                f"{self.tokens.shape}"
            )
        for name in ("documents", "positions"):
            if getattr(self, name).shape != (self.tokens.shape[0],):
                raise InputError(
                    f"{name}: shape {getattr(self, name).shape} does not match "
                    f"{self.tokens.shape[0]} chunks"
                )

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def length(self) -> int:
        """Tokens per chunk (L)."""
        return int(self.tokens.shape[1])

    def take(self, index: np.ndarray) -> TextSet:
        return TextSet(self.tokens[index], self.documents[index], self.positions[index])

    def save(self, path: Path) -> None:
        np.savez(path, tokens=self.tokens, documents=self.documents, positions=self.positions)


def read_chunks(path: Path) -> TextSet:
    """A TextSet saved by :meth:`TextSet.save`."""
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return TextSet(
                *(arrays[k].astype(np.int64) for k in ("tokens", "documents", "positions"))
            )
    except (OSError, ValueError, KeyError) as error:
        raise InputError(f"{str(path)!r}: not a token-chunk .npz ({error})") from None


def concat_chunks(sets: list[TextSet]) -> TextSet:
    return TextSet(
        np.concatenate([s.tokens for s in sets]),
        np.concatenate([s.documents for s in sets]),
        np.concatenate([s.positions for s in sets]),
    )


def _storable(path: Path, text: str, line: int | None) -> str:
    """``text``, or InputError naming its ``line`` of ``path`` (None: ``text`` is the whole
    file, whose line is counted) where it holds what :func:`unstorable` finds."""
    found = unstorable(text)
    if found is None:
        return text
    where, what = found
    number = line if line is not None else 1 + text.count("\n", 0, where)
    raise InputError(f"{str(path)!r} line {number}: holds {what}, which no report can store")


def _jsonl_documents(path: Path, field: str) -> list[str]:
    documents = []
    with open(path, encoding="utf-8-sig") as handle:  # a leading BOM (Windows editors) allowed
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                raise InputError(f"{str(path)!r} line {number}: not JSON") from None
            if isinstance(value, dict):
                value = value.get(field)
            if not isinstance(value, str):
                raise InputError(
                    f"{str(path)!r} line {number}: needs a string field {field!r} "
                    "(or a bare JSON string)"
                )
            documents.append(_storable(path, value, number))
    return documents


def read_documents(path: str | Path, *, field: str = "text") -> list[str]:
    """The non-empty documents of a ``.txt`` file, a ``.jsonl`` file or a directory of them;
    InputError naming the file and line of a document holding what no report can store
    (:func:`unstorable`: a NUL, or a lone surrogate a ``.jsonl`` escapes as ``\\ud800``)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{str(path)!r}: no such file or directory")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file())
        if not files:
            raise InputError(f"{str(path)!r}: no .txt or .jsonl files")
    elif path.suffix in TEXT_SUFFIXES:
        files = [path]
    else:
        raise InputError(f"{str(path)!r}: expected a .txt or .jsonl file or a directory")
    documents: list[str] = []
    for file in files:
        try:
            if file.suffix == ".jsonl":
                documents += _jsonl_documents(file, field)
            else:
                documents.append(_storable(file, file.read_text(encoding="utf-8-sig"), None))
        except UnicodeDecodeError:
            raise InputError(f"{str(file)!r}: not UTF-8 text") from None
    documents = [d for d in documents if d.strip()]
    if not documents:
        raise InputError(f"{str(path)!r}: holds no non-empty document")
    return documents


def chunk_documents(token_ids: list[list[int]], *, length: int, max_chunks: int | None) -> TextSet:
    """Consecutive ``length``-token chunks of each document, at most ``max_chunks`` per document.

    ``token_ids[d]`` is document d's token ids; the chunks keep d as their document index. The
    incomplete tail of a document is dropped (a document shorter than ``length`` gives none).
    """
    if length < 2:
        raise InputError(f"chunk length: {length} (needs at least 2 tokens)")
    parts, owners, places = [], [], []
    for document, ids in enumerate(token_ids):
        count = len(ids) // length
        if max_chunks is not None:
            count = min(count, max_chunks)
        if count:
            parts.append(np.asarray(ids[: count * length], np.int64).reshape(count, length))
            owners.append(np.full(count, document, np.int64))
            places.append(np.arange(count, dtype=np.int64))
    if not parts:
        raise InputError(f"text: no document has {length} tokens; nothing to audit")
    return TextSet(np.concatenate(parts), np.concatenate(owners), np.concatenate(places))
