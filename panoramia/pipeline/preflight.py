"""Check the command line's config before Hydra runs anything: one line and exit 2 on error.

Hydra reports a bad override only once a job starts, over several lines and with exit 1. The
preflight composes the config once (taking the first value of every sweep) so that unknown keys,
values of the wrong type and required values left unset (``???``) fail at once, in one line.
"""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from panoramia.errors import InputError

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


def config_name(arguments: list[str]) -> str:
    """The primary config the command line selects (``--config-name``/``-cn``, else config)."""
    name = "config"
    for position, argument in enumerate(arguments):
        if argument in ("--config-name", "-cn") and position + 1 < len(arguments):
            name = arguments[position + 1]
        elif argument.startswith("--config-name="):
            name = argument.split("=", 1)[1]
    return name


def _override_lists(arguments: list[str]) -> list[list[str]]:
    """Single-run override lists that together try every value of every sweep once."""
    parser = OverridesParser.create()
    fixed: list[str] = []
    sweeps: list[tuple[str, list[str]]] = []
    for override in parser.parse_overrides(_overrides(arguments)):
        if override.is_hydra_override():
            continue
        if override.is_sweep_override():
            prefix = "+" if override.is_add() else ""
            key = f"{prefix}{override.get_key_element()}"
            sweeps.append((key, [f"{key}={v}" for v in override.sweep_string_iterator()]))
        else:
            fixed.append(override.input_line)
    firsts = [values[0] for _, values in sweeps]
    lists = [fixed + firsts]
    for position, (_, values) in enumerate(sweeps):
        for value in values[1:]:
            lists.append(fixed + firsts[:position] + [value] + firsts[position + 1 :])
    return lists


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    cause = error.__cause__
    if cause is not None:
        lines += [line.strip() for line in str(cause).splitlines() if line.strip()][:2]
    hints = ("To append", "full_key", "object_type", "Set the environment")
    message = "; ".join(line for line in lines if not line.startswith(hints))
    return message.split("; Config search path")[0]


def _missing_keys(node: DictConfig, prefix: str = "") -> list[str]:
    """Keys left at ``???``, found without resolving interpolations (Hydra is not set up yet)."""
    found = []
    for key in node:
        if OmegaConf.is_missing(node, key):
            found.append(f"{prefix}{key}")
            continue
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            found += _missing_keys(child, f"{prefix}{key}.")
    return found


def check_command_line(config_dir: Path, arguments: list[str]) -> None:
    """Raise InputError (one line) when the overrides do not compose into a valid config."""
    name = config_name(arguments)
    if not (config_dir / f"{name}.yaml").is_file():
        raise InputError(f"config: no primary config {name!r} in {config_dir}")
    try:
        for overrides in _override_lists(arguments):
            GlobalHydra.instance().clear()
            with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
                config = compose(config_name=name, overrides=overrides)
    except Exception as error:  # Hydra and OmegaConf raise several unrelated types
        raise InputError(f"config: {_one_line(error)}") from None
    finally:
        GlobalHydra.instance().clear()
    missing = _missing_keys(config)
    if missing:
        raise InputError(f"config: required value(s) not set: {', '.join(missing)}")
