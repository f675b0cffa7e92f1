"""Naming a release gate's policy (the job's ``gate`` setting, ``panoramia gate --policy``,
``panoramia audits submit --gate``): a shipped policy by its name, which resolves to
``conf/gates/<name>.yaml`` and nothing else, or a policy file the user gives by its path (a
suffix of :data:`~panoramia.report.gate_policy.SUFFIXES`). Never an interpolation (``${…}``):
a CI's gate does not hang on an environment variable or another setting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from panoramia.errors import InputError
from panoramia.pipeline.registry import config_dir
from panoramia.report.gate_policy import SUFFIXES, GatePolicy, read_policy_file

SHIPPED_DIR = "gates"
"""The shipped policies' folder in the config directory (``conf/gates/``). Not ``conf/gate/``:
Hydra would take a folder of that name for a config group, and ``gate=strict`` for the choice
of one of its options."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A shipped policy's name: no dot, no separator (anything else is read as a path)."""


@dataclass(frozen=True)
class NamedPolicy:
    """A policy with the name the gate's lines show (``strict``, or the path as given)."""

    name: str
    path: Path
    policy: GatePolicy


def shipped_policies() -> dict[str, Path]:
    """The shipped policies by name (``conf/gates/*.yaml``); none where there is no config
    directory (a client installed without ``conf/``)."""
    try:
        directory = config_dir() / SHIPPED_DIR
    except FileNotFoundError:
        return {}
    return {path.stem: path for path in sorted(directory.glob("*.yaml")) if path.is_file()}


def load_policy(value: object, *, setting: str = "gate") -> NamedPolicy:
    """The policy ``value`` names: a shipped policy's name, or a policy file's path (relative
    to the working directory). :class:`InputError` naming ``setting`` for an interpolation, an
    unknown name or a missing file, and naming the file and field for a bad policy."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{setting}: a shipped policy's name or a policy file's path")
    if "${" in value:
        raise InputError(
            f"{setting}: an interpolation is not accepted; name a shipped policy or give a "
            "policy file's path"
        )
    if NAME.fullmatch(value):
        shipped = shipped_policies()
        if value not in shipped:
            known = ", ".join(shipped) or f"none found in conf/{SHIPPED_DIR}/"
            raise InputError(
                f"{setting}: {value!r} is not a shipped policy ({known}); give a policy file's "
                f"path ({', '.join(SUFFIXES)})"
            )
        path = shipped[value]
        shown = f"conf/{SHIPPED_DIR}/{path.name}"
        return NamedPolicy(value, path, read_policy_file(path, shown=shown))
    path = Path(value).expanduser()
    return NamedPolicy(value, path, read_policy_file(path, shown=value))
