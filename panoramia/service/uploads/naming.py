"""An audit names an upload by its id or name; this finds it, on the service's disk.

:func:`upload_resolver` gives :func:`panoramia.service.submission.command.audit_plan` a
function from (role, the name she gave) to the ready upload's data path (its checked file or
unpacked folder), or None where she has no upload of that name (the name may then be an
operator-placed file: her data folder, the shared models folder). It records which upload
each role named (``named``: role → upload id), which the audit keeps, so that deleting the
upload finds the audits that used it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from panoramia.service.schemas import DataRef
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.command import (
    RequestProblem,
    UploadNotFound,
    UploadNotReady,
    UploadResolver,
)
from panoramia.service.uploads.files import UploadFolder
from panoramia.store.repository import ReportStore
from panoramia.store.tables import Upload
from panoramia.store.uploads import READY, UploadRows


def upload_resolver(
    settings: ServiceSettings,
    store: ReportStore,
    contributor_id: int,
    named: dict[str, str],
    own_folder: Path | None = None,
) -> UploadResolver:
    """See the module docstring. ``own_folder``: her data folder (operator-placed files);
    where given, a name that is neither an upload (by id, name or the file name it was sent
    as) nor a file there is refused naming her uploads of that kind."""
    rows = UploadRows(store)

    def resolve(role: str, id_or_name: str) -> Path | None:
        wanted = "model" if role == "target" else "data"
        upload = rows.find(contributor_id, id_or_name)
        root = settings.models_dir if role == "target" else own_folder
        if upload is None and (root is None or _placed(root, id_or_name)):
            return None  # an operator-placed file or folder: the caller checks it
        if upload is None:  # the file's own name: members.csv for the upload sent as it
            sent_as = [u for u in rows.owned(contributor_id)
                       if u.filename == id_or_name and u.kind == wanted]  # fmt: skip
            if len(sent_as) > 1:
                both = ", ".join(u.name for u in sent_as[:5])
                raise UploadNotReady(
                    f"{id_or_name!r} is the file of several uploads ({both}): name one"
                )
            upload = sent_as[0] if sent_as else None
        if upload is None:
            names = [u.name for u in rows.owned(contributor_id) if u.kind == wanted]
            command = "panoramia models upload" if wanted == "model" else "panoramia data upload"
            known = (
                f"your {wanted} uploads: {', '.join(names[:20])}"
                if names
                else f"you have no {wanted} upload ({command} FILE)"
            )
            raise UploadNotFound(f"no upload named {id_or_name!r}; {known}")
        if upload.kind != wanted:
            raise UploadNotFound(f"upload {upload.name!r} is a {upload.kind} upload, not {wanted}")
        if upload.state != READY:
            if upload.state == "receiving":
                raise UploadNotReady(
                    f"upload {upload.name!r} has {upload.received} of {upload.size} bytes: "
                    "finish sending it first"
                )
            raise UploadNotReady(f"upload {upload.name!r} is {upload.state}")
        named[role] = upload.id
        folder = UploadFolder.of(settings.uploads_dir, contributor_id, upload.id)
        return folder.data_path(upload.filename).resolve()

    return resolve


def _placed(root: Path, name: str) -> bool:
    """Whether ``root / name`` exists and stays inside ``root`` (what lies outside is never
    looked at, so a refusal says nothing about the server's other files)."""
    try:
        base = root.resolve()
        candidate = (root / name).resolve()
        return candidate.is_relative_to(base) and candidate.exists()
    except (OSError, RuntimeError, ValueError):
        return False


def check_columns(data: DataRef, uploads: dict[str, Upload | None]) -> None:
    """A table audit's ``label``, ``categorical``, ``continuous`` and ``slices`` are columns
    of every data upload it names (their columns were read on arrival): RequestProblem naming
    the field and the upload's columns otherwise, at the door instead of in the worker."""
    if data.source != "csv":
        return
    for role in ("members", "nonmembers"):
        upload = uploads.get(role)
        columns = (upload.summary or {}).get("columns") if upload is not None else None
        if upload is None or not columns:
            continue
        names = [str(column[0]) for column in columns]
        wanted = [("label", data.label)] + [
            (field, name)
            for field, names in (("categorical", data.categorical),
                                 ("continuous", data.continuous), ("slices", data.slices))
            for name in names
        ]  # fmt: skip
        for field, name in wanted:
            if name is not None and name not in names:
                shown = ", ".join(names[:20]) + (", …" if len(names) > 20 else "")
                close = [n for n in names if n.lower() == str(name).lower()]
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RequestProblem(
                    ("data", field),
                    f"no column {name!r} in upload {upload.name!r}{hint}; it has: {shown}",
                )


def data_kind(upload: Upload) -> str:
    """What a data upload is, as its arrival check recorded it: ``table`` (a CSV or Parquet
    file: its columns are known), ``arrays`` (an .npz), ``documents`` (a ``.jsonl`` or
    ``.txt`` of text documents) or ``folder`` (an unpacked archive: its files are known)."""
    summary = upload.summary or {}
    if summary.get("columns"):
        return "table"
    if summary.get("arrays"):
        return "arrays"
    if summary.get("documents"):
        return "documents"
    return "folder"


KIND_WORDS = {
    "table": "a table",
    "arrays": "an .npz of arrays",
    "documents": "a file of documents",
    "folder": "a folder",
}
"""Each :func:`data_kind` in a sentence."""
SOURCE_READS: dict[str, tuple[frozenset[str], str]] = {
    "csv": (frozenset({"table"}), "a table (a CSV or Parquet file)"),
    "images": (
        frozenset({"arrays", "folder"}),
        "images (an .npz of arrays 'images' and 'labels', a folder of class folders or CIFAR "
        "batches)",
    ),
    "text_files": (
        frozenset({"documents", "folder"}),
        "text (a .txt or .jsonl file, or a folder of them)",
    ),
}
"""Each file data source: the kinds of data upload its audit reads, and what it reads in a
sentence (:class:`panoramia.service.schemas.DataRef`'s forms)."""


def check_data_kinds(data: DataRef, uploads: dict[str, Upload | None]) -> None:
    """Every data upload the request names is one its source reads, as recorded on arrival:
    a table for ``csv``; an .npz holding arrays ``images`` and ``labels``, or a folder with an
    image in a class folder or a CIFAR batch at its top, for ``images``; documents, or a
    folder holding a ``.txt`` or ``.jsonl`` file, for ``text_files``. RequestProblem naming
    ``data.members`` or ``data.nonmembers`` otherwise, at the door instead of in the worker.
    Operator-placed files (no upload) and sources not listed here are left to the audit."""
    if data.source not in SOURCE_READS:
        return
    kinds, reads = SOURCE_READS[data.source]
    for role in ("members", "nonmembers"):
        upload = uploads.get(role)
        if upload is None:
            continue
        kind = data_kind(upload)
        lacks = _lacks(data.source, upload, kind) if kind in kinds else KIND_WORDS[kind]
        if lacks is not None:
            raise RequestProblem(
                ("data", role),
                f"upload {upload.name!r} is {lacks}; data source {data.source!r} reads {reads}",
            )


def _lacks(source: str, upload: Upload, kind: str) -> str | None:
    """What ``upload`` (of ``kind``, :func:`data_kind`, one ``source`` reads) is, in a
    sentence, where it lacks what the source's reader needs
    (:func:`panoramia.modalities.image.images.read_images`,
    :func:`panoramia.modalities.text.documents.read_documents`); None where it holds it."""
    from panoramia.data.files import IMAGE_SUFFIXES
    from panoramia.data.text import TEXT_SUFFIXES

    paths = [PurePosixPath(path) for path in upload.files or {}]
    if source == "images" and kind == "arrays":
        missing = [a for a in ("images", "labels") if a not in upload.summary["arrays"]]
        plural = "s" if len(missing) > 1 else ""
        shown = " and ".join(repr(a) for a in missing)
        return f"an .npz without array{plural} {shown}" if missing else None
    if source == "images" and kind == "folder":
        if any(
            (len(p.parts) == 2 and p.suffix.lower() in IMAGE_SUFFIXES)
            or (len(p.parts) == 1 and p.name.startswith("data_batch_"))
            for p in paths
        ):
            return None
        suffixes = ", ".join(IMAGE_SUFFIXES)
        return (
            f"a folder without images in class folders ({suffixes}) or CIFAR batches (data_batch_*)"
        )
    if source == "text_files" and kind == "folder":
        found = any(p.suffix in TEXT_SUFFIXES for p in paths)
        return None if found else "a folder without .txt or .jsonl files"
    return None
