"""A text audit's documents as an upload (``.jsonl``, ``.txt``): checked a line at a time,
each refusal one line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from panoramia.service.uploads import checks
from panoramia.service.uploads.checks import UploadRejected, check_upload


def _check(tmp_path: Path, content: bytes, filename: str) -> dict:
    path = tmp_path / "incoming"
    path.write_bytes(content)
    checked = check_upload(
        path, filename, "data", max_bytes=2**20, into=tmp_path / "into", trust_torchscript=False
    )
    return checked.summary


def test_documents_are_counted_with_the_fields_every_one_holds_as_text(tmp_path: Path) -> None:
    jsonl = '\ufeff{"text": "a note", "title": "t"}\r\n\n"a bare string"\n{"text": " "}\n'.encode()
    assert _check(tmp_path, jsonl, "notes.jsonl") == {  # a BOM, CRLF, a blank text skipped
        "documents": 2, "characters": len("a note") + len("a bare string")
    }  # fmt: skip
    assert _check(tmp_path, "one document\nover two lines, ü\n".encode(), "a.TXT") == {
        "documents": 1, "characters": len("one document") + len("over two lines, ü")
    }  # fmt: skip


@pytest.mark.parametrize(
    ("content", "filename", "message"),
    [
        (b'{"text": "ok"}\nnot json\n', "d.jsonl", "d.jsonl: line 2 is not one JSON value"),
        (b'["a list"]\n', "d.jsonl", "d.jsonl: line 1 needs a string field 'text'"),
        (b'{"text": "a"}\n{"body": "b"}\n', "d.jsonl", "line 2 needs a string field 'text'"),
        (b"\n \n\t\n", "d.txt", "d.txt: no document (only blank text)"),
        (b"caf\xe9\n", "d.txt", "d.txt: line 1 is not UTF-8 text"),
        (b"x" * 40 + b"\n", "d.txt", "d.txt: line 1 is longer than 32 bytes"),
        # what PostgreSQL cannot store in a report quoting it, or UTF-8 cannot encode
        (b'"ok"\n{"text": "a\\u0000"}\n', "d.jsonl", "d.jsonl: line 2 holds a NUL character"),
        (b'"\\ud800"\n', "d.jsonl", "d.jsonl: line 1 holds a lone surrogate (U+D800)"),
        (b'"\\udfff b"\n', "d.jsonl", "line 1 holds a lone surrogate (U+DFFF)"),
        (b'{"text": "\\u0000"}\n', "d.jsonl", "line 1 holds a NUL"),  # blank text or not
        (b"ok\n\x00\n", "d.txt", "d.txt: line 2 holds a NUL character (U+0000)"),
    ],
)
def test_bad_documents_are_refused_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, filename: str, message: str
) -> None:
    monkeypatch.setattr(checks, "MAX_LINE_BYTES", 32)
    with pytest.raises(UploadRejected) as refused:
        _check(tmp_path, content, filename)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_surrogate_pair_escaped_in_json_is_one_character_and_kept(tmp_path: Path) -> None:
    assert _check(tmp_path, b'"\\ud83d\\ude00"\n', "d.jsonl") == {  # one emoji: text
        "documents": 1, "characters": 1
    }  # fmt: skip


def test_a_line_nested_past_the_parsers_depth_is_refused_with_one_line(tmp_path: Path) -> None:
    nested = b"[" * 200_000 + b"]" * 200_000 + b"\n"
    with pytest.raises(UploadRejected, match=r"^d.jsonl: line 1 is not one JSON value$"):
        _check(tmp_path, nested, "d.jsonl")


def test_the_console_audits_a_documents_upload_as_text() -> None:
    """A ``.jsonl`` upload's summary makes the console's form a text audit of it (no "the
    folder holds" question to answer)."""
    from panoramia.service.console.audit_form import audit_request, upload_kind
    from panoramia.store.tables import Upload

    documents = Upload(name="notes", summary={"documents": 50, "characters": 9})
    assert upload_kind(documents) == "documents"
    fields = {"model": ["lora"], "model_name": ["notes-lm"], "version": ["1"], "repeats": ["1"]}
    request = audit_request(fields, documents)
    assert (request.data.source, request.data.members) == ("text_files", "notes")
