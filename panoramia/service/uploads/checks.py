"""What an upload must be before it is kept: checked when its last byte has arrived.

- A **CSV** (``.csv``, or ``.csv.gz``/``.bz2``/``.xz``): a header of at most
  :data:`MAX_COLUMNS` distinct, non-empty names on one line of at most
  :data:`MAX_HEADER_BYTES`, then at least one row, no row longer than the header (read in
  chunks, never whole; a compressed file may expand to at most ``max_bytes``). Its summary
  gives the rows and each column's type (number or text), as ``[name, type]`` pairs in the
  file's order (a JSONB column would reorder an object's keys).
- Every check runs in a process of its own with memory and processor ceilings
  (:func:`panoramia.service.uploads.files.finish`): a file built to expand inside a parser
  (a tar's long-name header, a CSV of a few enormous rows) fails its own check only.
- A **Parquet** file: its metadata readable; rows and column types from it.
- **Documents** for a text audit, as the audit reads them: ``.jsonl`` (a line: an object with a
  string field ``text``, or a bare JSON string) or ``.txt`` (one document); UTF-8 (a leading BOM
  allowed), at least one non-blank document, no line longer than :data:`MAX_LINE_BYTES` (read a
  line at a time), no NUL or lone surrogate in a document (not even as a JSON escape); the
  summary counts the documents and their characters.
- An **npz**: every array's header read before any array (no pickled objects, no more data
  declared than held, at most ``max_bytes`` once read:
  :func:`panoramia.data.files.check_npz_arrays`).
- A **tar** archive (``.tar``, ``.tar.gz``, ``.tgz``: a text or image folder, or a model
  folder): only plain files and folders, each name relative, without ``..``, ``\\`` or
  ``${``, at most :data:`MAX_ENTRIES` entries, :data:`MAX_FOLDERS` folders,
  :data:`MAX_DEPTH` levels and ``max_bytes`` once unpacked (each entry counting
  :data:`ENTRY_BYTES`), all read from its headers before anything is written; then unpacked
  here, entry by entry, into a folder nothing else writes to.
- A **model** folder: a ``target.json`` of a known format whose files lie inside it (a
  ``peft`` adapter's folders as :func:`panoramia.modalities.text.targets.peft_folders` checks
  them); an ``http`` model (a URL the server would call) and, unless the operator trusts
  TorchScript, a TorchScript program are refused; an ONNX graph is read as data and refused
  for a non-standard operator domain, weights outside its folder, or past the size and shape
  limits (:func:`panoramia.targets.onnx_graph.check_onnx_target`).

Every refusal is an :class:`UploadRejected` with one line naming the upload's own file; a
data archive holding a model (its ``target.json``) is refused as :class:`ModelSentAsData`,
which the console's form, left to take the kind from the file, takes again as a model.
"""

from __future__ import annotations

import csv
import io
import json
import lzma
import os
import tarfile
import warnings
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from panoramia.errors import InputError
from panoramia.service.upload_formats import (
    ARCHIVE_SUFFIXES,
    CSV_SUFFIXES,
    DATA_SUFFIXES,
    MODEL_SUFFIXES,
    PARQUET_SUFFIXES,
    TEXT_SUFFIXES,
)

MAX_ENTRIES = 100_000
"""Entries an archive may hold (the staging copy's cap)."""
MAX_DEPTH = 32
MAX_LINE_BYTES = 16 * 2**20
"""The longest line a ``.jsonl`` or ``.txt`` upload may hold (each is read a line at a time)."""
MAX_FOLDERS = 10_000
"""Folders an archive may create (named, or implied by its files' paths)."""
ENTRY_BYTES = 4096
"""What each entry costs on disk besides its contents, as the size cap and the quota count it."""
CSV_CHUNK_BYTES = 32 * 2**20
"""About how many bytes of rows the CSV check reads at once."""
MAX_COLUMNS = 10_000
MAX_HEADER_BYTES = 2**20
REMOTE_FORMATS = ("http",)
"""Formats of a model that is an address the server would call, not files: never uploaded
(the operator places those, SECURITY.md)."""
MANIFEST_FILES = ("file", "weights", "encoder")
"""Manifest fields that name a file of the model folder."""


MAX_VALUES = 50
"""The most distinct values a text column's summary keeps (more: a feature, not a label)."""
MAX_VALUE_CHARS = 100
"""The most characters kept of one such value."""


class UploadRejected(InputError):
    """An upload that is not what it says it is; the message is one line."""


class ModelSentAsData(UploadRejected):
    """A data upload's archive that holds a model (a ``target.json`` at its top or in its one
    folder). Refused as any UploadRejected is; the console, where she let the file say its
    kind, takes the same file again as a model."""


@dataclass
class Checked:
    """What a check found: ``summary`` is shown to the owner; ``unpacked`` is the folder an
    archive was unpacked into (None for a single file)."""

    summary: dict = field(default_factory=dict)
    unpacked: Path | None = None


def suffix_of(filename: str) -> str:
    """The format suffix of ``filename`` (lower case): the longest known one it ends with."""
    lowered = filename.lower()
    for suffix in sorted((*DATA_SUFFIXES, *MODEL_SUFFIXES), key=len, reverse=True):
        if lowered.endswith(suffix):
            return suffix
    return ""


def is_archive(filename: str) -> bool:
    """Whether an upload of this file name is kept unpacked (a folder), not as one file."""
    return suffix_of(filename) in ARCHIVE_SUFFIXES


def check_filename(filename: str, kind: str) -> str:
    """The format suffix of an upload's file name; UploadRejected for a name that is not a
    plain file name or a format its ``kind`` does not take."""
    if (
        not filename
        or len(filename) > 200
        or filename in (".", "..")
        or any(c in filename for c in "/\\\0\ufffd")
        or "${" in filename
        or not filename.isprintable()
    ):
        raise UploadRejected(
            f"filename {filename!r}: a plain, printable file name, without '/', '\\' or '${{'"
        )
    suffix = suffix_of(filename)
    allowed = MODEL_SUFFIXES if kind == "model" else DATA_SUFFIXES
    if suffix not in allowed:
        raise UploadRejected(f"{filename}: a {kind} upload is one of {', '.join(allowed)}")
    return suffix


def check_upload(
    path: Path,
    filename: str,
    kind: str,
    *,
    max_bytes: int,
    into: Path,
    trust_torchscript: bool,
    room_bytes: int | None = None,
) -> Checked:
    """Check the received file ``path`` (see the module docstring); an archive is unpacked
    into the new folder ``into``, if it fits in ``max_bytes`` and ``room_bytes`` (what its
    owner's quota leaves). UploadRejected (one line naming ``filename``) otherwise."""
    suffix = check_filename(filename, kind)
    if suffix in ARCHIVE_SUFFIXES:
        cap = max_bytes if room_bytes is None else min(max_bytes, room_bytes)
        count, size, dropped = unpack_tar(path, into, max_bytes=cap, shown=filename)
        checked = Checked({"files": count, "unpacked_bytes": size}, into)
        if dropped:
            checked.summary["empty_files_dropped"] = dropped
        if kind == "model":
            checked.summary["format"] = check_model_folder(
                into, shown=filename, trust_torchscript=trust_torchscript
            )
            checked.summary["modality"] = _modality_of(into)
            checked.summary.update(model_facts(into))
        elif (model_root(into) / "target.json").is_file():  # a model sent as data
            raise ModelSentAsData(
                f"{filename}: holds a model (its target.json): upload it as a model "
                "(kind model; in the console, 'a model folder' or 'from the file')"
            )
        return checked
    if suffix in CSV_SUFFIXES:
        return Checked(check_csv(path, max_bytes=max_bytes, shown=filename))
    if suffix in PARQUET_SUFFIXES:
        return Checked(check_parquet(path, max_bytes=max_bytes, shown=filename))
    if suffix in TEXT_SUFFIXES:
        return Checked(check_documents(path, jsonl=suffix == ".jsonl", shown=filename))
    from panoramia.data.files import check_npz_arrays

    try:
        headers = check_npz_arrays(path, max_bytes=max_bytes, where=filename)
    except InputError as error:
        raise UploadRejected(str(error)) from None
    if not headers:
        raise UploadRejected(f"{filename}: an .npz without arrays")
    return Checked({"arrays": {name: list(shape) for name, (shape, _) in headers.items()}})


class _Capped(io.RawIOBase):
    """A decompressed stream that fails past ``limit`` bytes (a compression bomb stops
    there, having cost at most that much reading)."""

    def __init__(self, stream: io.BufferedIOBase, limit: int, shown: str):
        self.stream, self.limit, self.left, self.shown = stream, limit, limit, shown

    def readable(self) -> bool:
        return True

    # BufferedReader hands it a memoryview; RawIOBase's type takes any writable buffer
    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.stream.read(len(buffer))
        self.left -= len(data)
        if self.left < 0:
            raise UploadRejected(f"{self.shown}: expands past {self.limit} bytes")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.stream.close()
        super().close()


def _opened(path: Path, suffix: str, max_bytes: int, shown: str) -> io.TextIOWrapper:
    """The CSV's text, decompressed where its suffix says, cut off past ``max_bytes``."""
    import bz2
    import gzip
    import lzma

    # each opened with "rb": a binary stream
    openers: dict[str, Callable[..., io.BufferedIOBase]] = {
        ".csv.gz": gzip.open,
        ".csv.bz2": bz2.open,
        ".csv.xz": lzma.open,
    }
    raw = openers.get(suffix, open)(path, "rb")  # closed with the wrapper
    capped = io.BufferedReader(_Capped(raw, max_bytes, shown), 1 << 20)
    return io.TextIOWrapper(capped, encoding="utf-8", newline="")


def check_documents(path: Path, *, jsonl: bool, shown: str) -> dict:
    """A text audit's documents as the audit reads them (``panoramia.modalities.text.documents``):
    a ``.jsonl`` line is a JSON object with a string field ``text`` (the field the service's audits
    read) or a bare JSON string; a ``.txt`` is one document. ``{"documents": n, "characters": c}``
    counts the non-blank documents and their characters. A document holding a NUL or a lone
    surrogate (a ``.jsonl`` may escape them: ``"\\u0000"``, ``"\\ud800"``) is refused naming
    its line: PostgreSQL could not store a report quoting it."""
    import json

    documents = characters = 0
    with path.open("rb") as stream:
        for number, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:
                limit = MAX_LINE_BYTES
                raise UploadRejected(f"{shown}: line {number} is longer than {limit} bytes")
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise UploadRejected(f"{shown}: line {number} is not UTF-8 text") from None
            if not jsonl:
                _storable(line, number, shown)
                characters += len(line.strip())
                continue
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):
                raise UploadRejected(f"{shown}: line {number} is not one JSON value") from None
            if isinstance(value, dict):
                value = value.get("text")
            if not isinstance(value, str):
                raise UploadRejected(
                    f"{shown}: line {number} needs a string field 'text' (or a bare JSON string)"
                )
            _storable(value, number, shown)
            if value.strip():
                documents += 1
                characters += len(value)
    if not jsonl:
        documents = 1 if characters else 0
    if documents == 0:
        raise UploadRejected(f"{shown}: no document (only blank text)")
    return {"documents": documents, "characters": characters}


def _storable(text: str, number: int, shown: str) -> None:
    """UploadRejected naming line ``number`` where ``text`` holds what no report can store
    (:func:`panoramia.data.text.unstorable`: a NUL, a lone surrogate)."""
    from panoramia.data.text import unstorable

    found = unstorable(text)
    if found is not None:
        raise UploadRejected(f"{shown}: line {number} holds {found[1]}, which no report can store")


def check_csv(path: Path, *, max_bytes: int, shown: str) -> dict:
    """Rows and column types of a CSV (see the module docstring); UploadRejected otherwise.
    The header is read with :mod:`csv` (pandas would rename a repeated name), the rows with
    pandas' C parser, about :data:`CSV_CHUNK_BYTES` at a time."""
    import pandas as pd

    suffix = suffix_of(shown)
    try:
        with _opened(path, suffix, max_bytes, shown) as text:
            first = text.readline(MAX_HEADER_BYTES + 1)
            sample = text.read(2**20)
        if len(first) > MAX_HEADER_BYTES:
            raise UploadRejected(f"{shown}: a header line over {MAX_HEADER_BYTES} characters")
        header = next(csv.reader([first]), None)
        if not header:
            raise UploadRejected(f"{shown}: no header row")
        if len(header) > MAX_COLUMNS:
            raise UploadRejected(f"{shown}: {len(header)} columns; at most {MAX_COLUMNS}")
        names = [name.strip() for name in header]
        if any(not name for name in names):
            raise UploadRejected(f"{shown}: a column without a name in the header")
        repeated = [name for name, count in Counter(names).items() if count > 1]
        if repeated:
            raise UploadRejected(f"{shown}: column {repeated[0]!r} named twice")
        if any("${" in name for name in names):
            raise UploadRejected(f"{shown}: a column name may not contain '${{'")
        lines = max(sample.count("\n"), 1)
        chunk_rows = max(1, min(100_000, CSV_CHUNK_BYTES * lines // max(len(sample), 1)))
        numeric = dict.fromkeys(names, True)
        values: dict[str, set[str] | None] = {name: set() for name in names}
        rows = 0
        with _opened(path, suffix, max_bytes, shown) as text, warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a row longer than the header
            chunks = pd.read_csv(text, chunksize=chunk_rows, skipinitialspace=True, index_col=False)
            for chunk in chunks:
                rows += len(chunk)
                for name, column in zip(names, chunk.columns, strict=True):
                    if numeric[name] and not pd.api.types.is_numeric_dtype(chunk[column]):
                        numeric[name] = False
                    seen = values[name]
                    if seen is not None:
                        distinct = chunk[column].dropna().unique()[: MAX_VALUES + 1]
                        seen.update(str(v) for v in distinct)
                        if len(seen) > MAX_VALUES:
                            values[name] = None  # many values: a feature, not a label
    except UploadRejected:
        raise
    except UnicodeDecodeError:
        raise UploadRejected(f"{shown}: not UTF-8 text") from None
    except pd.errors.ParserError as error:
        line = str(error).strip().splitlines()[-1][:200]
        raise UploadRejected(f"{shown}: {line}") from None
    except pd.errors.ParserWarning:
        raise UploadRejected(f"{shown}: a row has more fields than the header") from None
    except (OSError, EOFError, csv.Error, ValueError, zlib.error, lzma.LZMAError) as error:
        raise UploadRejected(f"{shown}: not a readable CSV ({type(error).__name__})") from None
    if rows == 0:
        raise UploadRejected(f"{shown}: a header but no rows")
    few = {n: sorted(v)[:MAX_VALUES] for n, v in values.items() if v is not None}
    return {
        "rows": rows,
        "columns": [[n, "number" if numeric[n] else "text"] for n in names],
        "values": {n: [v[:MAX_VALUE_CHARS] for v in found] for n, found in few.items()},
    }


def check_parquet(path: Path, *, max_bytes: int, shown: str) -> dict:
    """Rows and column types from a Parquet file's metadata; UploadRejected otherwise."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.ParquetFile(path).metadata
        schema = metadata.schema.to_arrow_schema()
        unpacked = sum(
            metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups)
        )
    except Exception as error:  # pyarrow raises its own types for a malformed file
        kind = type(error).__name__
        raise UploadRejected(f"{shown}: not a readable Parquet file ({kind})") from None
    if unpacked > max_bytes:
        raise UploadRejected(f"{shown}: expands to {unpacked} bytes; at most {max_bytes}")
    if metadata.num_rows == 0:
        raise UploadRejected(f"{shown}: no rows")
    import pyarrow.types as types

    columns = [
        [f.name, "number" if types.is_integer(f.type) or types.is_floating(f.type) else "text"]
        for f in schema
    ]
    return {"rows": metadata.num_rows, "columns": columns}


def _entry_name(name: str, shown: str) -> PurePosixPath:
    """An archive entry's name as a relative path, or UploadRejected."""
    path = PurePosixPath(name)
    if (
        not name
        or path.is_absolute()
        or ".." in path.parts
        or "\\" in name
        or "${" in name
        or "\0" in name
    ):
        raise UploadRejected(f"{shown}: entry {name[:200]!r} would land outside its folder")
    if len(path.parts) > MAX_DEPTH:
        raise UploadRejected(f"{shown}: an entry deeper than {MAX_DEPTH} levels")
    if not name.isprintable() or any(c in name for c in "'\"`"):
        raise UploadRejected(f"{shown}: entry names may not hold quotes or control characters")
    return path


def survey_tar(archive: Path, *, max_bytes: int, shown: str) -> None:
    """Read the tar's headers only (nothing written) and refuse it, naming the cap, when it
    holds more than :data:`MAX_ENTRIES` entries or :data:`MAX_FOLDERS` folders (named or
    implied by a file's path), a name deeper than :data:`MAX_DEPTH`, or files past
    ``max_bytes`` counting :data:`ENTRY_BYTES` for each entry."""
    entries, total = 0, 0
    folders: set[tuple[str, ...]] = set()  # each a path's leading parts
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                entries += 1
                if entries > MAX_ENTRIES:
                    raise UploadRejected(f"{shown}: more than {MAX_ENTRIES} entries")
                relative = _entry_name(member.name, shown)
                parts = relative.parts if relative.parts != (".",) else ()
                owners = parts if member.isdir() else parts[:-1]
                before = len(folders)
                folders.update(owners[: depth + 1] for depth in range(len(owners)))
                if len(folders) > MAX_FOLDERS:
                    raise UploadRejected(f"{shown}: more than {MAX_FOLDERS} folders")
                blocks = -(-member.size // ENTRY_BYTES) * ENTRY_BYTES if member.isfile() else 0
                total += ENTRY_BYTES * (len(folders) - before + (not member.isdir())) + blocks
                if total > max_bytes:
                    raise UploadRejected(
                        f"{shown}: expands past {max_bytes} bytes, the most it may take (the "
                        f"file limit or your storage left; each entry counts {ENTRY_BYTES} "
                        "bytes besides its contents)"
                    )
    except UploadRejected:
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError) as error:
        kind = type(error).__name__
        raise UploadRejected(f"{shown}: not a readable tar archive ({kind})") from None


def unpack_tar(archive: Path, into: Path, *, max_bytes: int, shown: str) -> tuple[int, int, int]:
    """Unpack the tar ``archive`` into the new folder ``into``: plain files and folders only,
    names checked (:func:`_entry_name`), at most :data:`MAX_ENTRIES` entries and
    ``max_bytes`` in all, each file created new (``O_EXCL``: a repeated name is refused).
    Empty files are not written (nothing of them lands on disk or in the upload's record of
    files; the survey still counts their entries). Returns (files, bytes, empty files
    dropped)."""
    survey_tar(archive, max_bytes=max_bytes, shown=shown)
    into.mkdir(mode=0o700)
    files = size = empties = 0
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                relative = _entry_name(member.name, shown)
                if not (member.isfile() or member.isdir()):
                    raise UploadRejected(
                        f"{shown}: entry {member.name[:200]!r} is a link or a special file"
                    )
                target = into.joinpath(*relative.parts) if relative.parts != (".",) else into
                if member.isdir():
                    target.mkdir(mode=0o700, parents=True, exist_ok=True)
                    continue
                if member.size == 0:
                    empties += 1
                    continue
                size += member.size
                if size > max_bytes:
                    raise UploadRejected(f"{shown}: expands past {max_bytes} bytes")
                target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    raise UploadRejected(f"{shown}: entry {member.name[:200]!r} is unreadable")
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                with source, os.fdopen(os.open(target, flags, 0o600), "wb") as out:
                    copied = 0
                    while block := source.read(1 << 20):
                        copied += len(block)
                        if copied > member.size:
                            raise UploadRejected(f"{shown}: entry {member.name[:200]!r} overruns")
                        out.write(block)
                files += 1
    except UploadRejected:
        raise
    except FileExistsError:
        raise UploadRejected(f"{shown}: an entry named twice") from None
    except (tarfile.TarError, OSError, EOFError, ValueError) as error:
        kind = type(error).__name__
        raise UploadRejected(f"{shown}: not a readable tar archive ({kind})") from None
    if files == 0:
        raise UploadRejected(f"{shown}: an archive without files (empty ones are dropped)")
    return files, size, empties


def model_root(folder: Path) -> Path:
    """The model folder inside an unpacked archive: itself, or its one top-level folder when
    ``target.json`` lies there (``tar czf m.tgz my-model/``)."""
    if (folder / "target.json").is_file():
        return folder
    inner = [entry for entry in folder.iterdir()]
    if len(inner) == 1 and inner[0].is_dir() and (inner[0] / "target.json").is_file():
        return inner[0]
    return folder


MAX_ENCODER_BYTES = 4 * 2**20
"""The largest encoder file read for its label, features and classes at upload."""


def _texts(value: object) -> list[str] | None:
    """``value`` as text the way an audit compares labels and columns (``str`` of each:
    ``1`` is ``"1"``), where it is a list of at most :data:`MAX_VALUES` numbers or short
    texts; else None."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_VALUES:
        return None
    if not all(
        isinstance(v, str | int | float) and not isinstance(v, bool) and len(str(v)) <= 100
        for v in value
    ):
        return None
    return [str(v) for v in value]


def model_facts(folder: Path) -> dict[str, object]:
    """What a checked model folder tells the door before any audit (each fact only where it
    is stated): ``classes``, the label values it predicts, as text (its manifest's
    ``classes``, else its encoder's); from a panoramia encoder file (``encoder`` in the
    manifest, a tabular torch or xgboost model), ``label``, the column it predicts, and
    ``features``, the columns it reads. A fact that cannot be read is left out: the audit
    then finds the problem itself."""
    from panoramia.errors import InputError
    from panoramia.targets.manifest import manifest_file, read_manifest

    root = model_root(folder)
    manifest = read_manifest(root)
    facts: dict[str, object] = {}
    classes = _texts(manifest.get("classes"))
    if "encoder" in manifest:
        try:
            path = manifest_file(root, manifest, "encoder")
            if path.stat().st_size <= MAX_ENCODER_BYTES:
                encoder = json.loads(path.read_text(encoding="utf-8"))
                schema = encoder.get("schema") or {}
                label = schema.get("label")
                features = [*schema.get("categorical", []), *schema.get("continuous", [])]
                if isinstance(label, str) and len(label) <= 200:
                    facts["label"] = label
                if features and all(isinstance(f, str) for f in features):
                    facts["features"] = features[:MAX_COLUMNS]
                classes = classes or _texts(encoder.get("classes"))
        except (InputError, OSError, ValueError, AttributeError):
            pass
    if classes is not None:
        facts["classes"] = classes
    return facts


def _modality_of(folder: Path) -> str:
    """The audit the checked model folder's manifest belongs to (its manifest was read)."""
    from panoramia.plugins import modality_of_manifest
    from panoramia.targets.manifest import read_manifest

    return modality_of_manifest(read_manifest(model_root(folder))).name


def check_model_folder(folder: Path, *, shown: str, trust_torchscript: bool) -> str:
    """The format of the model in the unpacked ``folder``; UploadRejected when its manifest
    is missing, of an unknown or refused format, or names a file it does not hold."""
    from panoramia.modality_plugin import resolve
    from panoramia.plugins import modality_of_manifest, target_formats
    from panoramia.targets.manifest import manifest_file, read_manifest
    from panoramia.targets.onnx_graph import ONNX_FORMAT, check_onnx_target

    root = model_root(folder)
    if not (root / "target.json").is_file():
        raise UploadRejected(f"{shown}: no target.json at its top (or in its one folder)")
    try:
        manifest = read_manifest(root)
        kind = manifest["format"]
        if kind in REMOTE_FORMATS:
            raise UploadRejected(
                f"{shown}: an http model is a URL the server would call; only the operator "
                "places those (SECURITY.md)"
            )
        formats = [f for f in target_formats() if f not in REMOTE_FORMATS]
        if kind not in formats:
            raise UploadRejected(f"{shown}: format {kind!r} is not one of {', '.join(formats)}")
        if kind == "torchscript" and not trust_torchscript:
            raise UploadRejected(
                f"{shown}: TorchScript models run code; this service opens them only with "
                "PANORAMIA_TRUST_TORCHSCRIPT=1 (use torch-safetensors)"
            )
        for name in MANIFEST_FILES:
            if manifest.get(name) is not None:
                manifest_file(root, manifest, name)
        entry = modality_of_manifest(manifest)  # its plug-in's own rule for its formats
        if kind not in entry.target_formats:
            raise UploadRejected(
                f"{shown}: format {kind!r} is not one the {entry.name} audit opens "
                f"({', '.join(entry.target_formats)}), which its target.json's modality names"
            )
        if kind == ONNX_FORMAT:  # the graph as data: operators, weights' files, limits
            check_onnx_target(root, manifest)
        if entry.upload_check_path is not None:
            resolve(entry.upload_check_path)(root, manifest)
    except UploadRejected:
        raise
    except InputError as error:
        line = str(error).splitlines()[0]
        for where in (str(root.resolve()), str(root)):  # no server path shown
            line = line.replace(where, shown)
        if str(folder) in line or str(folder.resolve()) in line:
            line = "its target.json is not usable"
        raise UploadRejected(f"{shown}: {line[:300]}") from None
    return str(kind)
