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


def stage_data_files(
    overrides: list[str],
    data_dir: Path,
    run_dir: Path,
    uploads: UploadSource | None = None,
    shared_label: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """``overrides`` with each data path replaced by a copy under ``run_dir/inputs`` (see the
    module docstring), and each copy's path mapped to the name the contributor knows (its
    path inside her folder, or the upload's), for messages. A data path is ``upload:<id>``,
    copied from ``uploads`` (a model upload's ``target.path`` too; a shared model's is left
    as it is), or lies in one contributor's folder of ``data_dir``; StagingError naming the
    path inside that folder otherwise. Earlier copies of a previous attempt are replaced.
    ``shared_label``: the audit's target is a shared model (``owner/name:version``): its copy
    and any refusal to copy it are named so, never by the owner's upload."""
    parser = OverridesParser.create()
    inputs = run_dir / INPUTS
    if inputs.is_symlink() or inputs.is_file():  # planted by an earlier attempt's child
        inputs.unlink()
    elif inputs.exists():
        shutil.rmtree(inputs)
    inputs.mkdir(parents=True)
    base = data_dir.resolve()
    staged, names = [], {}
    for line in overrides:
        key = line.split("=", 1)[0]
        if key not in UPLOADED_KEYS:
            staged.append(line)
            continue
        (parsed,) = parser.parse_overrides([line])
        value = str(parsed.value())
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
        elif key not in DATA_PATH_KEYS:  # a shared model, read where the operator put it
            staged.append(line)
            continue
        else:
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
        quoted = copy.replace("\\", "\\\\").replace("'", "\\'")
        staged.append(f"{key}='{quoted}'")
    return staged, names


def in_contributor_terms(message: str, names: dict[str, str]) -> str:
    """``message`` with every copy's path replaced by the contributor's own name for it."""
    for copy, shown in sorted(names.items(), key=lambda item: -len(item[0])):
        message = message.replace(copy, shown)
    return message
