"""Contributor text as a store can hold it: a report that quotes a document is kept in
PostgreSQL's text and JSONB columns, which hold no NUL, and in UTF-8, which has no lone
surrogate half (a JSON escape such as ``"\\ud800"`` makes one)."""

from __future__ import annotations

TEXT_SUFFIXES = (".txt", ".jsonl")
"""The document files a folder of text is read from (the text plug-in's reader and the
service's door alike)."""


def unstorable(text: str) -> tuple[int, str] | None:
    """Where ``text`` first holds what no report can store, and what: a NUL character or a
    lone surrogate half (the tokenizers refuse it too); None where it holds neither. Linear
    in ``text``; no pattern is matched."""
    nul = text.find("\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        if nul < 0 or error.start < nul:
            return error.start, f"a lone surrogate (U+{ord(text[error.start]):04X})"
    return (nul, "a NUL character (U+0000)") if nul >= 0 else None
