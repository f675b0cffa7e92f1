"""A rule across audit settings (:class:`Rule`): the shared ones are
``panoramia.audit_settings.RULES``, a modality plug-in declares its own
(``panoramia.modality_plugin.Modality.rules``). Apart from both so that a plug-in's
declaration and the settings engine can name it without importing each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    """A rule across settings: ``check`` raises :class:`~panoramia.errors.InputError` naming
    the key, and does nothing where a setting it reads is missing or unresolved."""

    says: str
    """What it holds, for ``docs/RANGES.md``."""
    check: Callable[[Mapping[str, Any]], None]
