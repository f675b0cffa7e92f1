"""A contributor's data files reach an audit as a copy the worker made, never as her path.

Just before an audit's child starts, the worker opens each data file (or folder) of the
request from its contributor's folder one path component at a time, never following a
symbolic link (``O_NOFOLLOW`` on every component, opened relative to the previous one), and
copies what it opened into the audit's run directory under a name it chooses
(``inputs/members.csv``). The child is given that copy's path. So:

- there is no window between the check and the read: what is copied is what was opened, and a
  file swapped for a link afterwards is not read (the copy is already made);
- a file or folder name never reaches the child's config: the config holds the worker's own
  name, so a name carrying ``${…}`` is never interpolated;
- a link anywhere on the way (the path given, or inside a folder) is refused with one line.

Only the file suffixes survive (``.csv``, ``.csv.gz``, ``.npz``, …: the readers go by them),
and only when they are plain (letters and digits).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser

from panoramia.errors import InputError
from panoramia.service.contributor_files import (
    DATA_PATH_KEYS,
    INPUTS,
    PLAIN_SUFFIX,
    UPLOAD_PREFIX,
    UPLOADED_KEYS,
    StagingError,
    UploadSource,
    copy_beneath,
)
from panoramia.service.submission.plan import AuditPlan


def stage_data_files(
    overrides: list[str],
    data_dir: Path,
    run_dir: Path,
    uploads: UploadSource | None = None,
    shared_label: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """``overrides`` (an audit stored before plans: its command line) with each data path
    replaced by a copy under ``run_dir/inputs`` (see the module docstring), and each copy's
    path mapped to the name the contributor knows, as :func:`stage_plan_files` does for a
    plan's files."""
    parser = OverridesParser.create()
    inputs = _fresh_inputs(run_dir)
    staged: list[str] = []
    names: dict[str, str] = {}
    for line in overrides:
        key = line.split("=", 1)[0]
        if key not in UPLOADED_KEYS:
            staged.append(line)
            continue
        (parsed,) = parser.parse_overrides([line])
        copy = _stage_one(key, str(parsed.value()), data_dir, inputs, uploads, shared_label, names)
        if copy is None:
            staged.append(line)
            continue
        quoted = copy.replace("\\", "\\\\").replace("'", "\\'")
        staged.append(f"{key}='{quoted}'")
    return staged, names


def stage_plan_files(
    plan: AuditPlan,
    data_dir: Path,
    run_dir: Path,
    uploads: UploadSource | None = None,
    shared_label: str | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """A copy under ``run_dir/inputs`` of each of the plan's files (see the module docstring):
    the path the child reads for each file setting (an operator-placed shared model is read
    where it lies), and each copy's path mapped to the name the contributor knows (its path
    inside her folder, or the upload's), for messages. An upload is copied from ``uploads``
    (a model upload's ``target.path`` too), a path must lie in one contributor's folder of
    ``data_dir``; StagingError naming the file otherwise. Earlier copies of a previous attempt
    are replaced. ``shared_label``: the audit's target is a shared model
    (``owner/name:version``): its copy and any refusal to copy it are named so, never by the
    owner's upload."""
    inputs = _fresh_inputs(run_dir)
    paths: dict[str, str] = {}
    names: dict[str, str] = {}
    for key, planned in plan.files.items():
        copy = _stage_one(key, planned.portable(), data_dir, inputs, uploads, shared_label, names)
        paths[key] = copy if copy is not None else str(planned.path)
    return paths, names


def _fresh_inputs(run_dir: Path) -> Path:
    """``run_dir/inputs``, empty (an earlier attempt's copies, or what its child planted
    there, removed)."""
    inputs = run_dir / INPUTS
    if inputs.is_symlink() or inputs.is_file():  # planted by an earlier attempt's child
        inputs.unlink()
    elif inputs.exists():
        shutil.rmtree(inputs)
    inputs.mkdir(parents=True)
    return inputs


def _stage_one(
    key: str,
    value: str,
    data_dir: Path,
    inputs: Path,
    uploads: UploadSource | None,
    shared_label: str | None,
    names: dict[str, str],
) -> str | None:
    """The copy of file setting ``key``'s ``value`` (``upload:<id>`` or a path) made under
    ``inputs``, its name as she knows it recorded in ``names``; None for a shared model read
    where the operator put it."""
    if value.startswith(UPLOAD_PREFIX):
        if uploads is None:
            raise StagingError(f"{key}: uploads cannot be read by this worker")
        upload_id = value.removeprefix(UPLOAD_PREFIX)
        if key == "target.path" and shared_label is not None:
            try:
                copy = uploads.copy(upload_id, inputs / UPLOADED_KEYS[key])
            except InputError:
                raise StagingError(
                    f"the shared model {shared_label}: its file cannot be read now "
                    "(withdrawn and deleted by its owner, or unreachable)"
                ) from None
            names[copy] = f"shared model {shared_label}"
        else:
            copy = uploads.copy(upload_id, inputs / UPLOADED_KEYS[key])
            names[copy] = f"upload {upload_id}"
        return copy
    if key not in DATA_PATH_KEYS:  # a shared model, read where the operator put it
        return None
    base = data_dir.resolve()
    try:
        relative = Path(value).relative_to(base)
    except ValueError:
        raise StagingError(f"{key}: outside the data folder") from None
    if not base.is_dir():
        raise StagingError(
            f"{key}: a file of the service's data folder, which this worker does not "
            "have; upload it (panoramia data upload)"
        )
    if len(relative.parts) < 2:
        raise StagingError(f"{key}: not a file or folder of a contributor's folder")
    owner, *inside = relative.parts
    shown = "/".join(inside)
    suffix = "".join(Path(inside[-1]).suffixes)
    name = DATA_PATH_KEYS[key] + (suffix if PLAIN_SUFFIX.fullmatch(suffix) else "")
    copy_beneath(base, (owner, *inside), inputs / name, shown)
    copy = str(inputs / name)
    names[copy] = shown
    return copy


def in_contributor_terms(message: str, names: dict[str, str]) -> str:
    """``message`` with every copy's path replaced by the contributor's own name for it."""
    for copy, shown in sorted(names.items(), key=lambda item: -len(item[0])):
        message = message.replace(copy, shown)
    return message
