"""Which model classes a manifest may name: an allow-list of modules, checked before import.

A ``torch-safetensors`` manifest names its network as ``"package.module:Class"`` and gives it
``kwargs``. Importing a module runs its top-level code and calling a class runs its
constructor, so a manifest that could name anything (``"subprocess:Popen"`` with
``{"args": "...", "shell": true}``) would run commands on the machine that opens it. Here:

1. the module name must be a plain dotted identifier, inside a trusted prefix, matched on
   whole components (``mypkg`` allows ``mypkg`` and ``mypkg.nets``, not ``mypkgevil``) —
   checked *before* anything is imported;
2. the attribute must be a class that subclasses ``torch.nn.Module`` and is defined in a
   trusted module (a trusted module re-exporting some other package's class does not count);
3. ``kwargs`` must be JSON data (a dict with str keys of None/bool/int/float/str and lists or
   dicts of them).

The trusted prefixes are :data:`DEFAULT_TRUSTED_MODULES` (the networks this project trains and
writes into manifests) plus those the user names: ``target.trusted_modules=[mypkg]`` on the
command line, or ``PANORAMIA_TRUSTED_MODULES=mypkg,other`` for the service's operator (read
by :func:`trusted_modules_from_env`). ``torch.nn`` is not trusted by default.

This module imports no deep-learning library at import time.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import TypeGuard

from panoramia.errors import InputError

DEFAULT_TRUSTED_MODULES: tuple[str, ...] = (
    "panoramia.modalities.tabular.mlp",
    "panoramia.modalities.image.nets",
)
"""Modules whose ``nn.Module`` classes every manifest may name: the tabular MLP and the image
networks (SmallCNN, ResNet) that the demo targets and helpers write into their manifests."""

MOVED_MODULES: dict[str, str] = {
    "panoramia.models.tabular_mlp": "panoramia.modalities.tabular.mlp",
    "panoramia.models.image_nets": "panoramia.modalities.image.nets",
}
"""Where the networks of :data:`DEFAULT_TRUSTED_MODULES` lived before the modalities became
plug-ins: a manifest written then names the old module, which is read as the new one."""

TRUSTED_MODULES_ENV = "PANORAMIA_TRUSTED_MODULES"
"""The service operator's extra trusted modules, comma-separated."""

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DEPTH = 32


def is_dotted_name(name: object) -> TypeGuard[str]:
    """Whether ``name`` is a plain dotted Python identifier (ASCII): ``pkg.mod``, ``pkg``."""
    return isinstance(name, str) and _DOTTED.fullmatch(name) is not None


def check_trusted_modules(names: Iterable[object], *, source: str) -> tuple[str, ...]:
    """``names`` as a tuple of dotted module names; InputError (naming ``source``) otherwise."""
    if isinstance(names, str):
        names = [names]
    checked = []
    for name in names:
        if not is_dotted_name(name):
            raise InputError(
                f"{source}: {name!r} is not a dotted module name (e.g. mypkg or mypkg.nets)"
            )
        checked.append(str(name))
    return tuple(checked)


def trusted_modules_from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """The operator's extra trusted modules from ``$PANORAMIA_TRUSTED_MODULES``
    (comma-separated; empty or unset: none). The defaults always apply besides these; pass
    the result to an audit as ``target.trusted_modules=[...]``."""
    value = (os.environ if environ is None else environ).get(TRUSTED_MODULES_ENV, "")
    names = [part.strip() for part in value.split(",") if part.strip()]
    return list(check_trusted_modules(names, source=TRUSTED_MODULES_ENV))


def is_trusted(module_name: str, trusted: Iterable[str]) -> bool:
    """Whether ``module_name`` is one of ``trusted`` or inside one (whole dotted components)."""
    return any(module_name == prefix or module_name.startswith(prefix + ".") for prefix in trusted)


def import_model_class(
    path: object, trusted_modules: Iterable[str] = (), *, field: str = "module"
) -> type:
    """``"package.module:Class"`` → the class, a ``torch.nn.Module`` subclass from a trusted
    module (:data:`DEFAULT_TRUSTED_MODULES` and ``trusted_modules``).

    The name is checked before anything is imported; every refusal is an InputError of one
    line that names the manifest ``field`` and how to trust the module."""
    extra = check_trusted_modules(trusted_modules, source="target.trusted_modules")
    trusted = (*DEFAULT_TRUSTED_MODULES, *extra)
    module_name, colon, attribute = path.partition(":") if isinstance(path, str) else ("", "", "")
    module_name = MOVED_MODULES.get(module_name, module_name)
    if not (colon and is_dotted_name(module_name) and _IDENTIFIER.fullmatch(attribute)):
        raise InputError(
            f"target manifest field {field!r}: {path!r} is not 'package.module:Class' "
            "(dotted Python identifiers)"
        )
    if not is_trusted(module_name, trusted):
        raise InputError(
            f"target manifest field {field!r}: module {module_name!r} is not trusted (trusted: "
            f"{', '.join(trusted)}); {_how_to_trust(module_name)}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise InputError(
            f"target manifest field {field!r}: {path!r} cannot be imported: {error}"
        ) from None
    import torch

    found = getattr(module, attribute, None)
    if not (isinstance(found, type) and issubclass(found, torch.nn.Module)):
        raise InputError(
            f"target manifest field {field!r}: {path!r} is not a torch.nn.Module class"
        )
    defined_in = getattr(found, "__module__", None)
    if not (is_dotted_name(defined_in) and is_trusted(defined_in, trusted)):
        raise InputError(
            f"target manifest field {field!r}: {path!r} is defined in module {defined_in!r}, "
            f"which is not trusted; {_how_to_trust(str(defined_in))}"
        )
    return found


def _how_to_trust(module_name: str) -> str:
    return (
        f"if you trust that code, allow it with 'target.trusted_modules=[{module_name}]' "
        f"(service operators: {TRUSTED_MODULES_ENV}={module_name})"
    )


def json_kwargs(value: object, *, field: str = "kwargs") -> dict:
    """``value`` if it is a dict of JSON data (str keys; None/bool/int/float/str, lists and
    dicts of those), else InputError naming the manifest ``field``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(
            f"target manifest field {field!r}: must be a JSON object, got {type(value).__name__}"
        )
    problem = _json_problem(value, field, 0)
    if problem:
        raise InputError(f"target manifest field {problem}")
    return value


def _json_problem(value: object, where: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return f"{where!r}: nested deeper than {_MAX_DEPTH} levels"
    if value is None or isinstance(value, bool | int | float | str):
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{where}[{index}]", depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where!r}: key {key!r} is not a string"
            problem = _json_problem(item, f"{where}.{key}", depth + 1)
            if problem:
                return problem
        return None
    return f"{where!r}: {type(value).__name__} is not JSON data"
