"""The text plug-in's own settings: the values of its choice settings (one
:class:`~enum.StrEnum` each, :data:`CHOICE_TYPES`) and its rules across settings
(:data:`RULES`), which its declaration (``plugin.py``) hands to the settings engine
(:mod:`panoramia.audit_settings`). Light: the service reads it through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from panoramia.audit_settings import TargetKind, settings_at
from panoramia.errors import InputError
from panoramia.settings_rule import Rule


class TextFeatures(StrEnum):
    """``distinguisher.features``: what the loss branch reads of the per-token losses
    (``panoramia.modalities.text.features``; docs/SPEC.md §2.9)."""

    SEQUENCE = "sequence"
    CALIBRATED = "calibrated"


class TextArchitecture(StrEnum):
    """``target.architecture`` (demo targets): the causal-LM family built from a config."""

    GPT2 = "gpt2"
    LLAMA = "llama"


class TextAdapter(StrEnum):
    """``target.adapter`` (demo targets): the whole network trained, or a LoRA adapter over
    the public base (``peft``)."""

    NONE = "none"
    LORA = "lora"


class PublicBaseSource(StrEnum):
    """``base.source``: the installed packages' docstrings, or no public base LM."""

    PACKAGE_DOCS = "package_docs"
    NONE = "none"


class TextSource(StrEnum):
    """``data.source`` in a text audit: the installed packages' documentation (by module, or
    pydoc's pages), Jane Austen's novels, or her files."""

    PYTHON_DOCS = "python_docs"
    PYDOC = "pydoc"
    AUSTEN = "austen"
    FILES = "files"


CHOICE_TYPES: dict[str, type[StrEnum]] = {
    "base.source": PublicBaseSource,
    "distinguisher.features": TextFeatures,
    "target.adapter": TextAdapter,
    "target.architecture": TextArchitecture,
}
"""The choice settings this plug-in owns, by their whole key."""


def _heads(config: Mapping[str, Any]) -> None:
    found = settings_at(
        config, "target.kind", "target.base_model", "target.n_embd", "target.n_head"
    )
    if found is None:
        return
    kind, base_model, n_embd, n_head = found
    if kind == TargetKind.TRAIN and not base_model and n_head and n_embd % n_head:
        raise InputError(f"target.n_embd: {n_embd} is not a multiple of target.n_head {n_head}")


def _lora_base(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "target.kind", "target.adapter", "target.base_model", "base.source")
    if found is None:
        return
    kind, adapter, base_model, source = found
    if (
        kind == TargetKind.TRAIN
        and adapter == TextAdapter.LORA
        and not base_model
        and (source == PublicBaseSource.NONE)
    ):
        raise InputError(
            "target.adapter: a LoRA adapter trains over a base LM: set base.source=package_docs "
            "or target.base_model"
        )


RULES: tuple[Rule, ...] = (
    Rule("a text target trained here from scratch: `target.n_embd` a multiple of "
         "`target.n_head`", _heads),
    Rule("a text target trained as a LoRA adapter (`target.adapter=lora`) needs a base: "
         "`base.source=package_docs` or `target.base_model`", _lora_base),
)  # fmt: skip
"""The rules across this plug-in's settings, checked after the shared ones."""
