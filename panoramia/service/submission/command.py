"""From an :class:`AuditRequest` to the audit's plan (:mod:`.plan`), whose command line a
worker runs.

The request's data source picks the audit (the primary config: ``config`` for tabular data,
``image``, ``text``). A contributor controls only the audit's own settings: overrides may
name ``seed`` and keys under ``data.split``, ``generator``, ``helper``, ``distinguisher``,
``audit``, ``target`` and ``data.max_members``/``data.pool_size``/``data.pool_chunks``, or
pick an *existing* option of the groups ``generator``, ``helper``, ``distinguisher``,
``audit`` by its plain name (a path, ``..`` or a package is refused before anything is
composed: a group option is a YAML file, and one that starts ``# @package _global_`` could set
any key). Paths (``*path``, ``*_dir``, a base model's), ``kind``, ``trusted_modules``, device
and thread settings, ``artifacts_dir``, ``threads``, ``claim`` (from the model's declared
guarantee), the text audit's public ``base`` model and Hydra's own settings are the
service's. No value may contain ``${`` (an interpolation would read the server's environment
or config). Data files resolve inside the contributor's own data folder, model directories
inside the shared models folder. The composed config must stay within the service's limits
(:mod:`panoramia.service.resource_limits`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, cast

from hydra.core.override_parser.overrides_parser import OverridesParser

from panoramia.audit_settings import check_renamed, check_settings
from panoramia.errors import InputError
from panoramia.pipeline.registry import (
    compose_job,
    config_file,
    modality_of_command_line,
)
from panoramia.pipeline.registry import group_options as registry_group_options
from panoramia.plugins import modality
from panoramia.service.contributor_files import MAX_ENTRIES, unreadable_entry
from panoramia.service.resource_limits import AuditLimits, check_limits
from panoramia.service.schemas import INTERPOLATION, AuditRequest
from panoramia.service.submission.plan import (
    AuditPlan,
    PlannedFile,
    quoted,
    split_seed,
)
from panoramia.service.target_configs import fits

GROUPS = ("generator", "helper", "distinguisher", "audit")
KEY_PREFIXES = ("data.split.", "generator.", "helper.", "distinguisher.", "audit.", "target.")
KEYS = {"seed", "data.max_members", "data.pool_size", "data.pool_chunks"}
RESERVED_LEAVES = {
    "path", "kind", "base_model", "trusted_modules", "url", "directory",
    "accelerator", "devices", "strategy", "num_workers",
}  # fmt: skip
"""Last key components a contributor may never set, under any allowed prefix."""
RESERVED_SUFFIXES = ("_path", "_dir", "_url", "_file")
OPTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,99}")


UploadResolver = Callable[[str, str], Path | None]
"""(role: ``members``, ``nonmembers`` or ``target``; her name or id) → the data's path on
the service's disk, or None where she has no upload of that name
(:func:`panoramia.service.uploads.naming.upload_resolver`)."""


class UploadNotReady(Exception):
    """She has an upload of that name, but it has not fully arrived (or is being checked or
    deleted), or the name is the file name of several of hers; the message says which. The
    API answers 409 (:attr:`status`): the same request may run once that changes."""

    status = 409


class UploadNotFound(UploadNotReady):
    """The name is none of her uploads of the kind its role takes (nor a file the operator
    placed for her); the API answers 404."""

    status = 404


class RequestProblem(Exception):
    """A request that is well-formed JSON but cannot run; ``field`` is its location and
    ``status`` the API's answer (422: the request itself is wrong; 404 and 409: an upload it
    names, see :class:`UploadNotReady`)."""

    def __init__(self, field: tuple[str | int, ...], message: str, status: int = 422):
        super().__init__(message)
        self.field = field
        self.message = message
        self.status = status


def _quoted_list(values: list[str]) -> str:
    return "[" + ",".join(quoted(v) for v in values) + "]"


def _inside(root: Path, relative: str, field: tuple[str | int, ...]) -> Path:
    """``root / relative`` resolved, when it and (for a folder) everything under it stay
    inside ``root``: no '..', absolute path, or symbolic link that leads out."""
    try:
        base = root.resolve()
        candidate = (root / relative).resolve()
        if not candidate.is_relative_to(base):
            raise RequestProblem(field, "must stay inside its folder (no '..' or absolute paths)")
        if not candidate.exists():
            raise RequestProblem(field, f"{relative!r} not found")
        inside = str(candidate.relative_to(base))
        if "${" in inside or "\\" in inside:
            raise RequestProblem(field, "a file or folder name may not contain '${' or '\\'")
        problem = unreadable_entry(candidate.lstat())  # resolved: no link left to follow
        if problem is not None:
            raise RequestProblem(field, problem)
        if candidate.is_dir():
            check_folder_confined(candidate, base, field)
    except (OSError, RuntimeError, ValueError) as error:  # name too long, link loop, NUL
        raise RequestProblem(field, f"not a usable path ({type(error).__name__})") from None
    return candidate


def check_folder_confined(folder: Path, base: Path, field: tuple[str | int, ...]) -> None:
    """Every entry under ``folder`` is a plain file or folder: a symbolic link is refused
    wherever it leads (the worker's copy never follows one, :mod:`panoramia.service.
    data_staging`), and the scan stops at :data:`MAX_ENTRIES` entries. Entries are read with
    ``lstat`` only (no path is resolved), so the scan stays cheap."""
    pending, count = [folder], 0
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                count += 1
                if count > MAX_ENTRIES:
                    raise RequestProblem(field, f"more than {MAX_ENTRIES} entries")
                problem = unreadable_entry(entry.stat(follow_symlinks=False))
                if problem is not None:
                    where = str(Path(entry.path).relative_to(folder))
                    raise RequestProblem(field, f"{where!r} is {problem}")
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))


@cache
def group_options(group: str) -> frozenset[str]:
    """The options of a config group: its YAML files, by stem, in the shared ``conf/`` and
    every plug-in's own (:func:`panoramia.pipeline.registry.group_options`)."""
    return registry_group_options(group)


def _texts(value: object) -> list[str]:
    """Every string in a parsed override value: itself, list items, dict keys and values."""
    found, pending = [], [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            pending += list(item)
    return found


def _reserved(key: str) -> bool:
    leaf = key.rsplit(".", 1)[-1]
    return leaf in RESERVED_LEAVES or leaf.endswith(RESERVED_SUFFIXES)


def check_overrides(overrides: list[str]) -> None:
    """Reject overrides outside the contributor's remit (see module docstring), before any
    config is composed."""
    parser = OverridesParser.create()
    for position, line in enumerate(overrides):
        field = ("overrides", position)
        if INTERPOLATION in line:
            raise RequestProblem(field, "'${' is not accepted: configs never resolve your text")
        try:
            (parsed,) = parser.parse_overrides([line])
        except Exception as error:
            message = str(error).splitlines()[0] if str(error) else "not a Hydra override"
            raise RequestProblem(field, message) from None
        key = parsed.get_key_element()
        if any(INTERPOLATION in text for text in _texts(parsed.value())):
            # Hydra unescapes `$\{` to `${`: the parsed value, not the text, is what counts.
            raise RequestProblem(field, "'${' is not accepted: configs never resolve your text")
        if parsed.is_sweep_override() or parsed.is_add() or parsed.is_delete():
            raise RequestProblem(field, "sweeps, '+' and '~' are not accepted: one audit per job")
        if parsed.is_hydra_override() or parsed.package or "@" in key:
            raise RequestProblem(field, f"{key!r} is not an audit setting")
        allowed = key in KEYS or key in GROUPS or key.startswith(KEY_PREFIXES)
        if not allowed or _reserved(key):
            raise RequestProblem(field, f"{key!r} cannot be set by a contributor")
        try:  # a name renamed in 0.x gets its new name, before its group's options are listed
            check_renamed([line])
        except InputError as error:
            raise RequestProblem(field, str(error)) from None
        if key in GROUPS:
            value = parsed.value()
            options = group_options(key)
            if not (isinstance(value, str) and OPTION_NAME.fullmatch(value)) or (
                value not in options
            ):
                raise RequestProblem(
                    field, f"{key}: {value!r} is not one of {', '.join(sorted(options))}"
                )


def _check_model_format(directory: Path, *, allow_torchscript: bool) -> None:
    """A TorchScript archive is a program (its ops can read and write files), not data: the
    service opens one only where the operator trusts TorchScript."""
    from panoramia.targets.manifest import read_manifest

    try:
        manifest = read_manifest(directory)
    except InputError as error:
        raise RequestProblem(("target", "path"), str(error)) from None
    if manifest.get("format") == "torchscript" and not allow_torchscript:
        raise RequestProblem(
            ("target", "path"),
            "TorchScript models run code; this service opens them only with "
            "PANORAMIA_TRUST_TORCHSCRIPT=1 (ask its operator, or use torch-safetensors)",
        )


def audit_plan(
    request: AuditRequest,
    *,
    contributor: str,
    data_dir: Path,
    models_dir: Path,
    allow_torchscript: bool = False,
    uploads: UploadResolver | None = None,
) -> AuditPlan:
    """The audit's plan (:class:`~panoramia.service.submission.plan.AuditPlan`: the service's
    settings, the files it reads, her overrides and seed); each file as the path the door
    found (an upload's server path; the caller replaces her uploads by their ids, which its
    ``uploads`` resolver records). ``uploads`` finds her uploads by name or id
    (:mod:`panoramia.service.uploads.naming`); a name that is not one is looked up in her
    data folder, or for a model in the shared models folder."""

    def uploaded(role: str, name: str, field: tuple[str, ...]) -> Path | None:
        try:
            return uploads(role, name) if uploads is not None else None
        except UploadNotReady as error:
            raise RequestProblem(field, str(error), error.status) from None

    check_overrides(request.overrides)
    overrides, seed, _ = split_seed(list(request.overrides))
    target, data = request.target, request.data
    assert target is not None
    assert request.model is not None
    entry = modality(data.modality)
    lines = entry.command_line()
    files: dict[str, PlannedFile] = {}
    if target.config is not None:
        path = config_file(f"target/{target.config}.yaml")
        if path is None:
            raise RequestProblem(("target", "config"), f"no target config {target.config!r}")
        if not fits(path, entry.name):
            raise RequestProblem(
                ("target", "config"),
                f"{target.config!r} is not a target of an audit of {entry.name} data",
            )
        lines.append(f"target={target.config}")
    else:
        directory = uploaded("target", target.path or "", ("target", "path"))
        if directory is None:  # checked on arrival otherwise
            directory = _inside(models_dir, target.path or "", ("target", "path"))
            _check_model_format(directory, allow_torchscript=allow_torchscript)
        lines.append(f"target={entry.path_target}")
        files["target.path"] = PlannedFile(path=str(directory))
    lines.append(f"target.name={quoted(f'{request.model.name}-{request.model.version}')}")
    own = data_dir / contributor
    lines.append(f"data={data.source}")
    for role, given in (("members", data.members), ("nonmembers", data.nonmembers)):
        if given is None:
            continue
        path = uploaded(role, given, ("data", role)) or _inside(own, given, ("data", role))
        files[f"data.{role}_path"] = PlannedFile(path=str(path))
    if data.source == "csv":
        lines += [
            f"data.label={quoted(data.label or '')}",
            f"data.categorical={_quoted_list(data.categorical)}",
            f"data.continuous={_quoted_list(data.continuous)}",
        ]
        if data.slices:
            lines.append(f"audit.slices={_quoted_list(data.slices)}")
    lines += claim_overrides(request.model.claim)
    return AuditPlan(entry.name, tuple(lines), files, tuple(overrides), seed)


def claim_overrides(claim: dict | None) -> list[str]:
    """The ``claim.*`` overrides that put the model's declared guarantee (validated JSON form)
    in its report; a multi-phase DP-SGD claim has no single-phase config form."""
    if claim is None or claim["kind"] == "none":
        return []
    lines = [f"claim.kind={claim['kind']}"]
    if claim["kind"] == "dpsgd":
        if len(claim["phases"]) != 1:
            raise RequestProblem(
                ("model", "claim", "phases"), "a service audit reports single-phase claims only"
            )
        lines += [f"claim.{k}={v}" for k, v in claim["phases"][0].items()]
        lines.append(f"claim.neighbouring={claim['neighbouring']}")
        if claim.get("dataset_size") is not None:
            lines.append(f"claim.dataset_size={claim['dataset_size']}")
    else:
        lines += [f"claim.epsilon={claim['epsilon']}", f"claim.delta={claim['delta']}"]
    for key, value in (claim.get("tuning") or {}).items():
        lines.append(f"claim.tuning.{key}={value}")
    return lines


def check_composes(overrides: list[str], limits: AuditLimits | None = None) -> dict:
    """Compose the config once, as the job will: unknown keys, bad values (the ranges,
    choices and rules of :mod:`panoramia.audit_settings`, as the job checks them) and settings
    past the service's ``limits`` fail here. Returns the composed, unresolved config.

    Nothing is resolved in the server: a contributor's text holds no interpolation, and the
    project's own (``${oc.env:PANORAMIA_HOME,…}``, ``${hydra:…}``) are the child's to resolve,
    in its minimal environment."""
    from omegaconf import OmegaConf

    try:
        check_renamed(overrides)
        composed = compose_job(overrides)
    except InputError as error:
        raise RequestProblem(("overrides",), str(error)) from None
    container = cast("dict[str, Any]", OmegaConf.to_container(composed, resolve=False))
    try:
        check_settings(container)  # ranges, choices and rules, then the service's limits
        check_limits(container, limits or AuditLimits())
    except InputError as error:
        # The claim comes from the model's registration, not from the request's overrides.
        where = ("model", "claim") if str(error).startswith("claim") else ("overrides",)
        raise RequestProblem(where, str(error)) from None
    return container


def job_command(
    overrides: list[str],
    *,
    run_dir: Path,
    artifacts_dir: Path,
    threads: int,
    trusted_modules: tuple[str, ...] = (),
    modality_name: str | None = None,
) -> list:
    """The worker's command line for one audit run in ``run_dir``; ``trusted_modules`` are the
    operator's extra module prefixes for model manifests (text targets name no module);
    ``modality_name``: the plan's (an audit stored before plans: read off ``overrides``)."""
    trust = []
    entry = (
        modality(modality_name)
        if modality_name is not None
        else modality_of_command_line(overrides)
    )
    names = entry.target_settings() if entry else frozenset()
    if trusted_modules and "trusted_modules" in names:
        trust = [f"target.trusted_modules={_quoted_list(list(trusted_modules))}"]
    return [
        sys.executable,
        "-P",  # the run directory (the child's working directory, which it writes) is no
        "-m",  # import path: code an earlier attempt left there never runs in the next
        "panoramia.pipeline.app",
        *overrides,
        *trust,
        f"artifacts_dir={quoted(str(artifacts_dir))}",
        f"threads={threads}",
        f"hydra.run.dir={quoted(str(run_dir))}",
    ]
