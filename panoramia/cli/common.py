"""Helpers shared by the ``panoramia`` commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

import typer

from panoramia.errors import InputError

P = ParamSpec("P")
R = TypeVar("R")


def exits_on_input_error(command: Callable[P, R]) -> Callable[P, R]:
    """Turn :class:`InputError` into ``panoramia: error: …`` on stderr and exit status 2.

    An ``OverflowError`` or ``MemoryError`` (values beyond what the computation can hold, that
    no check caught) ends the same way, as one line naming the command, never a traceback.
    """

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        name = command.__name__.replace("_", "-")
        try:
            return command(*args, **kwargs)
        except InputError as error:
            message = str(error)
        except OverflowError as error:
            message = f"{name}: a value is out of the computable range ({error})"
        except MemoryError as error:
            message = f"{name}: the inputs need more memory than there is ({error})"
        typer.echo(f"panoramia: error: {' '.join(message.split())}", err=True)
        raise typer.Exit(code=2) from None

    return wrapper


def print_json(document: object) -> None:
    json.dump(document, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def table_console():  # -> rich.console.Console
    """A console for tables: the terminal's width, or in a pipe, a file or CI the table's
    natural width (no id or number is cut at 80 columns)."""
    from rich.console import Console

    return Console() if Console().is_terminal else Console(width=4000)


def parse_shared(
    text: str, *, setting: str, version_needed: bool = True
) -> tuple[str, str, str | None]:
    """``OWNER/NAME:VERSION`` → (owner, name, version); InputError naming ``setting``
    otherwise (the version may be absent where ``version_needed`` is False)."""
    owner, slash, rest = text.partition("/")
    name, _colon, version = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not slash or not owner or not name or (version_needed and not version):
        form = "OWNER/NAME:VERSION" if version_needed else "OWNER/NAME[:VERSION]"
        raise InputError(f"{setting}: {text!r} is not {form} (e.g. olivia/census:2)")
    return owner, name, version or None


def shared_key(text: str, *, setting: str) -> dict[str, str]:
    """The request's ``shared`` from ``OWNER/NAME:VERSION``."""
    owner, name, version = parse_shared(text, setting=setting)
    return {"owner": owner, "name": name, "version": version or ""}
