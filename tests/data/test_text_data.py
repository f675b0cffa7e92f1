"""Token chunks, the readers of user text and the embedded corpus (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from panoramia.errors import InputError
from panoramia.modalities.text.documents import (
    TextSet,
    chunk_documents,
    concat_chunks,
    read_chunks,
    read_documents,
)


def test_chunks_are_consecutive_capped_and_drop_the_tail() -> None:
    documents = [list(range(10)), list(range(100, 103)), list(range(200, 225))]
    chunks = chunk_documents(documents, length=4, max_chunks=5)
    # doc 0: 2 chunks (tail of 2 dropped); doc 1: none (3 < 4); doc 2: 6 possible, capped at 5
    assert chunks.tokens.tolist()[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert chunks.documents.tolist() == [0, 0, 2, 2, 2, 2, 2]
    assert chunks.positions.tolist() == [0, 1, 0, 1, 2, 3, 4]
    assert chunks.tokens[-1].tolist() == [216, 217, 218, 219]
    uncapped = chunk_documents(documents, length=4, max_chunks=None)
    assert len(uncapped) == 2 + 6


def test_no_document_long_enough_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no document has 64 tokens"):
        chunk_documents([[1, 2, 3]], length=64, max_chunks=50)
    with pytest.raises(InputError, match="at least 2"):
        chunk_documents([[1, 2, 3]], length=1, max_chunks=50)


def test_text_set_round_trip_and_shape_checks(tmp_path: Path) -> None:
    chunks = TextSet(np.arange(12).reshape(3, 4), np.array([0, 0, 1]), np.array([0, 1, 0]))
    chunks.save(tmp_path / "c.npz")
    again = read_chunks(tmp_path / "c.npz")
    assert np.array_equal(again.tokens, chunks.tokens)
    assert again.length == 4
    both = concat_chunks([chunks, again.take(np.array([2]))])
    assert len(both) == 4
    assert both.documents.tolist() == [0, 0, 1, 1]
    with pytest.raises(InputError, match="positions"):
        TextSet(np.zeros((3, 4), np.int64), np.zeros(3, np.int64), np.zeros(2, np.int64))
    with pytest.raises(InputError, match="integer"):
        TextSet(np.zeros((3, 4)), np.zeros(3, np.int64), np.zeros(3, np.int64))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"bad\.npz"):
        read_chunks(tmp_path / "bad.npz")


def test_documents_from_txt_jsonl_and_directories(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first document\n")
    lines = [json.dumps({"text": "second"}), "", json.dumps("third"), json.dumps({"text": " "})]
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "ignored.csv").write_text("x,y\n")
    assert read_documents(tmp_path / "a.txt") == ["first document\n"]
    assert read_documents(tmp_path / "b.jsonl") == ["second", "third"]
    assert read_documents(tmp_path) == ["first document\n", "second", "third"]
    (tmp_path / "c.jsonl").write_text(json.dumps({"body": "x"}) + "\n")
    assert read_documents(tmp_path / "c.jsonl", field="body") == ["x"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.jsonl", '{"text": "ok"}\n{broken\n', "line 2: not JSON"),
        ("field.jsonl", '{"title": "no text"}\n', "line 1: needs a string field 'text'"),
        ("latin.txt", "caf\xe9".encode("latin-1"), "not UTF-8"),
        ("empty.txt", "   \n", "no non-empty document"),
        ("data.csv", "a,b\n", "expected a .txt or .jsonl"),
        # what no report can store (PostgreSQL: no NUL; UTF-8: no lone surrogate), by line
        ("nul.jsonl", '{"text": "ok"}\n{"text": "a\\u0000b"}\n', r"line 2: holds a NUL char"),
        ("half.jsonl", '"ok"\n\n"\\ud800 alone"\n', r"line 3: holds a lone surrogate \(U\+D800"),
        ("nul.txt", "one\ntwo\x00\n", r"line 2: holds a NUL character \(U\+0000\)"),
    ],
)
def test_bad_text_files_name_the_file(
    tmp_path: Path, name: str, content: str | bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError, match=message) as error:
        read_documents(path)
    assert name in str(error.value)
    with pytest.raises(InputError, match="no such file"):
        read_documents(tmp_path / "missing.txt")


def test_embedded_corpus_is_python_documentation() -> None:
    from panoramia.modalities.text.datasets import load_pydoc_topics, load_python_docs

    topics = load_pydoc_topics()
    assert 60 <= len(topics) <= 120
    assert any("assignment statement" in t.lower() for t in topics)
    everything = load_python_docs()
    assert everything[: len(topics)] == topics
    assert sum(map(len, everything)) > 2 * sum(map(len, topics))


def test_pools_hold_whole_documents() -> None:
    from panoramia.modalities.text.config import TextDataConfig
    from panoramia.modalities.text.data import _pools

    rng = np.random.default_rng(0)
    documents = np.repeat(np.arange(40), rng.integers(1, 20, 40))
    positions = np.concatenate([np.arange(c) for c in np.bincount(documents)])
    chunks = TextSet(rng.integers(0, 50, (documents.size, 8)), documents, positions)
    config = TextDataConfig(pool_chunks=100, pool_seed=3)
    members, control, outside = _pools(chunks, 40, config)
    assert len(members) >= 100
    assert len(control) >= 100
    assert len(outside) > 0
    assert len(members) + len(control) + len(outside) == len(chunks)
    owners = [set(part.documents.tolist()) for part in (members, control, outside)]
    assert not (owners[0] & owners[1])
    assert not (owners[0] & owners[2])
    assert not (owners[1] & owners[2])
    with pytest.raises(InputError, match=r"data\.pool_chunks"):
        _pools(chunks, 40, TextDataConfig(pool_chunks=len(chunks) // 2))
