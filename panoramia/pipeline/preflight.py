"""Check the command line's config before Hydra runs anything: one line and exit 2 on error.

Hydra reports a bad override only once a job starts, over several lines and with exit 1. The
preflight composes the config once (taking the first value of every sweep) so that unknown keys,
values of the wrong type and required values left unset (``???``) fail at once, in one line.
Hydra's own overrides (``hydra.run.dir=…``, ``hydra/launcher=…``) are composed with them. It
then resolves every interpolation as Hydra will (with Hydra's settings, so that
``${hydra:runtime.cwd}`` and ``${now:…}`` work), so that ``seed='${oc.env:UNSET}'``, an unknown
key or resolver, or a resolved value of the wrong type is one line too, naming the key. Only
values that Hydra fills in when a job starts (``hydra.runtime.output_dir``, and in a multirun
``hydra.job.num`` and ``hydra.job.id``: ``???`` or None until then) are left to Hydra.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import Container, DictConfig, DictKeyType, ListConfig, OmegaConf
from omegaconf.errors import (
    InterpolationToMissingValueError,
    InterpolationValidationError,
    OmegaConfBaseException,
)

from panoramia.audit_settings import check_renamed
from panoramia.errors import InputError
from panoramia.pipeline.tracking_settings import check_logger_chosen

VALUE_FLAGS = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
               "--config-dir", "-cd", "--experimental-rerun"}  # fmt: skip
"""Hydra flags whose next argument is their value, not an override."""


def _overrides(arguments: list[str]) -> list[str]:
    found, skip = [], False
    for argument in arguments:
        if skip:
            skip = False
        elif argument in VALUE_FLAGS:
            skip = True
        elif not argument.startswith("-"):
            found.append(argument)
    return found


class _ParserGaveUp(Exception):
    """Hydra's argparse parser met a flag it cannot read (a flag without its value, --version)."""


def _silent_parser() -> argparse.ArgumentParser:
    """Hydra's own command-line parser, made to raise instead of printing and exiting.

    Not ``contextlib.redirect_stderr``: ``sys.stderr`` is process-wide, and this runs in the
    service's request and audit threads, where swapping it hides other threads' output (and
    restoring a stale stream displaces whatever another thread set meanwhile)."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def give_up(*_: object, **__: object) -> NoReturn:
        raise _ParserGaveUp

    parser.error = give_up  # type: ignore[method-assign]
    parser.exit = give_up  # type: ignore[method-assign]
    parser._print_message = give_up  # type: ignore[method-assign]  # usage, --help, --version
    return parser


def config_name(arguments: list[str]) -> str:
    """The primary config the command line selects (``--config-name``/``-cn`` in any form
    Hydra's own parser takes: ``-cn=x``, an abbreviation; else ``config``). Prints nothing and
    touches no process-wide stream: where argparse would give up (a flag without its value),
    the answer is ``config`` and Hydra reports the error when it runs."""
    try:
        parsed, _ = _silent_parser().parse_known_args(arguments)
    except _ParserGaveUp:
        return "config"
    return parsed.config_name or "config"


def _override_lists(arguments: list[str]) -> list[list[str]]:
    """Single-run override lists that together try every value of every sweep once."""
    parser = OverridesParser.create()
    fixed: list[str] = []
    sweeps: list[tuple[str, list[str]]] = []
    for override in parser.parse_overrides(_overrides(arguments)):
        if override.is_sweep_override():
            prefix = "+" if override.is_add() else ""
            key = f"{prefix}{override.get_key_element()}"
            sweeps.append((key, [f"{key}={v}" for v in override.sweep_string_iterator()]))
        else:
            assert override.input_line is not None  # parse_overrides sets it on every override
            fixed.append(override.input_line)
    firsts = [values[0] for _, values in sweeps]
    lists = [fixed + firsts]
    for position, (_, values) in enumerate(sweeps):
        for value in values[1:]:
            lists.append(fixed + firsts[:position] + [value] + firsts[position + 1 :])
    return lists


def one_line(error: BaseException) -> str:
    """The message of a Hydra/OmegaConf error on one line, without the hints and key paths
    (``full_key: …``, ``object_type=…``) that OmegaConf appends on lines of their own."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    cause = error.__cause__
    if cause is not None:
        lines += [line.strip() for line in str(cause).splitlines() if line.strip()][:2]
    hints = ("To append", "full_key", "object_type", "reference_type", "Set the environment")
    message = "; ".join(line for line in lines if not line.startswith(hints))
    return message.split("; Config search path")[0]


LAUNCH_VALUES = ("runtime.output_dir",)
"""Hydra values that are ``???`` (or None through ``${hydra:…}``) until a job starts."""
SWEEP_LAUNCH_VALUES = ("job.num", "job.id")
"""… and those that only a multirun's launcher sets (a single run leaves them ``???``)."""


def _filled_at_launch(error: OmegaConfBaseException, *, multirun: bool) -> bool:
    """True for an interpolation into a value Hydra sets only when the job starts."""
    names = LAUNCH_VALUES + (SWEEP_LAUNCH_VALUES if multirun else ())
    message = str(error)
    if isinstance(error, InterpolationToMissingValueError):
        return any(f"Missing mandatory value: hydra.{name}" in message for name in names)
    return isinstance(error, InterpolationValidationError) and any(
        "${hydra:" + name in message for name in names
    )


def _unresolvable(
    node: DictConfig | ListConfig, key: DictKeyType, path: str, *, multirun: bool
) -> tuple[str, str] | None:
    """(path, one-line reason) of the first value under ``node[key]`` whose interpolation fails
    to resolve (unknown key or resolver, unset environment variable, a value of the wrong
    type); None when all resolve. Values left at ``???`` and values Hydra fills in at launch
    (:func:`_filled_at_launch`) are skipped."""
    container: Container = node  # a ListConfig's keys are its int indices: Container takes either
    try:
        if OmegaConf.is_missing(node, key):
            return None
        child = container._get_node(key)
        children: list[tuple[DictKeyType, str]]
        if isinstance(child, DictConfig) and not child._is_interpolation():
            children = [(name, f"{path}.{name!s}") for name in child]
        elif isinstance(child, ListConfig) and not child._is_interpolation():
            children = [(index, f"{path}[{index}]") for index in range(len(child))]
        else:
            container[key]  # resolves the interpolation and checks the value's type
            return None
    except OmegaConfBaseException as error:
        return None if _filled_at_launch(error, multirun=multirun) else (path, one_line(error))
    for name, child_path in children:
        found = _unresolvable(child, name, child_path, multirun=multirun)
        if found is not None:
            return found
    return None


def _check_interpolations(config: DictConfig, *, multirun: bool) -> None:
    """Raise InputError naming the first key whose interpolation fails to resolve (the job's
    keys first, then Hydra's, which interpolate the job's: ``hydra.run.dir`` holds ``seed``).
    Of ``hydra.run`` and ``hydra.sweep``, only the one the mode uses is resolved."""
    HydraConfig.instance().set_config(config)
    unused = "sweep" if not multirun else "run"
    try:
        for node, key, path in (
            *((config, key, str(key)) for key in config if key != "hydra"),
            *((config.hydra, key, f"hydra.{key}") for key in config.hydra if key != unused),
        ):
            found = _unresolvable(node, key, path, multirun=multirun)
            if found is not None:
                raise InputError(f"config: {found[0]}: {found[1]}")
    finally:
        HydraConfig.instance().cfg = None


def missing_keys(node: DictConfig, prefix: str = "") -> list[str]:
    """Keys left at ``???``, found without resolving interpolations (Hydra is not set up yet)."""
    found = []
    for key in node:
        if OmegaConf.is_missing(node, key):
            found.append(f"{prefix}{key!s}")
            continue
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            found += missing_keys(child, f"{prefix}{key!s}.")
    return found


def _check_additions(folders: Sequence[Path], arguments: list[str]) -> None:
    """``+key=value`` adds a key the schema does not have, which nothing reads: refused
    (InputError naming it), except for config groups (``+experiment=validity``) and Hydra's own
    settings."""
    try:
        parsed = OverridesParser.create().parse_overrides(_overrides(arguments))
    except Exception:  # a malformed override: composing reports it in one line
        return
    for override in parsed:
        key = override.get_key_element().lstrip("+")
        group = key.split("@")[0]
        is_group = any((folder / group).is_dir() for folder in folders)
        if not override.is_add() or is_group or key.startswith("hydra"):
            continue
        raise InputError(
            f"config: +{key}: not a setting of this audit ('+' adds config groups only, such "
            "as +experiment=…; set existing settings without it)"
        )


def check_command_line(folders: Sequence[Path], arguments: list[str]) -> None:
    """Raise InputError (one line) when the overrides do not compose into a valid config.
    ``folders``: where the configs are, the shared folder first (Hydra's main one), then the
    plug-ins' own, which Hydra's search-path plug-in adds
    (:func:`panoramia.pipeline.registry.config_folders`)."""
    name = config_name(arguments)
    multirun = any(argument in ("-m", "--multirun") for argument in arguments) or any(
        argument.replace(" ", "") == "hydra.mode=MULTIRUN" for argument in arguments
    )
    if not any((folder / f"{name}.yaml").is_file() for folder in folders):
        raise InputError(f"config: no primary config {name!r} in {', '.join(map(str, folders))}")
    _check_additions(folders, arguments)
    check_renamed(_overrides(arguments))
    configs = []
    try:
        for overrides in _override_lists(arguments):
            GlobalHydra.instance().clear()
            with initialize_config_dir(config_dir=str(folders[0]), version_base="1.3"):
                configs.append(
                    compose(config_name=name, overrides=overrides, return_hydra_config=True)
                )
    except Exception as error:  # Hydra and OmegaConf raise several unrelated types
        check_logger_chosen(_overrides(arguments))  # logger.* set, no logger chosen: say so
        raise InputError(f"config: {one_line(error)}") from None
    finally:
        GlobalHydra.instance().clear()
    for config in configs:
        missing = [key for key in missing_keys(config) if not key.startswith("hydra.")]
        if missing:
            raise InputError(f"config: required value(s) not set: {', '.join(missing)}")
        _check_interpolations(config, multirun=multirun)
