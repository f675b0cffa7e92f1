"""The one module where audit settings are checked: the range of every numeric setting
(:data:`RANGES`, :data:`MAX_LIST`), the values of every setting that takes one of a list
(:data:`CHOICES`, one :class:`~enum.StrEnum` each, narrowed by each modality plug-in's
``choices``, :mod:`panoramia.plugins`) and the rules that tie settings together (:data:`RULES`).

:func:`check_settings` runs them in that order on the composed config, a plain container,
before any work: the CLI's job (``panoramia/pipeline/app.py::run_job``: one line, exit 2) and
the service's door (``panoramia/service/submission/command.py::check_composes``: 422) both
call it. The schemas give the types; this gives the values. A numeric setting is known by its
last name (``epochs``, ``real_quantile``), as the service's resource limits are
(``panoramia/service/resource_limits.py``, which stay on top); a choice by its whole key.
Values still holding an interpolation of the project's own configs are checked once resolved
(the job) and skipped unresolved (the service, which never resolves), and so is every rule
that reads one. ``claim.*`` has no range here: the claim is the accounting's own to read and check
(``panoramia/accounting/claim_settings.py``), which the claim rule asks. What needs files, installed
packages or the data's columns is checked where those are read (the modality plug-ins).
The tables are documented in ``docs/RANGES.md`` (``python -m panoramia.audit_settings``).

This module imports nothing of the job (``panoramia.pipeline``): the service, the building
blocks (``generators``, ``baselines``) and the models take their lists of values from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, cast

from panoramia.errors import InputError
from panoramia.settings_rule import Rule

if TYPE_CHECKING:
    from panoramia.modality_plugin import Modality


@dataclass(frozen=True)
class Range:
    """``low`` ≤ value ≤ ``high`` (strict where ``open_low``/``open_high``); ``integer``: a
    whole number."""

    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False
    integer: bool = False

    def holds(self, value: float) -> bool:
        """Whether ``value`` (an int of any size, or a float) lies in the range."""
        if isinstance(value, float) and math.isnan(value):
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    def __str__(self) -> str:
        left = "(" if self.open_low else "["
        right = ")" if self.open_high else "]"
        low, high = _bound(self.low), _bound(self.high)
        return f"{'an integer in ' if self.integer else ''}{left}{low}, {high}{right}"


def _bound(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


COUNT = Range(1, 10**9, integer=True)
"""Epochs, batch sizes, widths, steps, sizes: at least 1."""
AMOUNT = Range(0, 10**9, integer=True)
"""Numbers of examples drawn for h (0: none)."""
FRACTION = Range(0, 1)
BELOW_ONE = Range(0, 1, open_high=True)
LEVEL = Range(0, 1, open_low=True, open_high=True)
RATE = Range(0, 10, open_low=True)

_TABLE = (
    ("epochs min_leaf head_epochs labeler_epochs batch_size labeler_batch_size bins "
     "max_chunks_per_document samples_per_prompt sampling_steps diffusion_steps d_model "
     "n_embd n_head n_layer heads layers latent width widen blocks n_estimators max_depth "
     "top_k generation_batch pool_size pool_chunks chunks max_members max_examples n_jobs "
     "threads hidden lora_rank", COUNT),
    ("chunk_length", Range(2, 10**9, integer=True)),
    ("ensemble", Range(1, 64, integer=True)),
    ("draws", Range(19, 10_000, integer=True)),
    ("fpr_negatives", Range(0, 20_000, integer=True)),
    ("false_alarm_rate", Range(0.001, 0.5, open_high=True)),
    ("group_fpr", Range(0.001, 0.5)),
    ("vocab_size", Range(256, 10**7, integer=True)),
    ("num_workers", Range(0, 256, integer=True)),
    ("n_rows n_images n_chunks", AMOUNT),
    ("real_quantile support_novelty point_mass offset_noise generator attack_train "
     "attack_val audit", FRACTION),
    ("max_drop", Range(0, 0.99)),
    ("dropout label_dropout ema_decay validation_fraction gamma delta", BELOW_ONE),
    ("confidence selection_confidence dp_delta prompt_fraction", LEVEL),
    ("learning_rate xgb_learning_rate", RATE),
    ("weight_decay", Range(0, 10)),
    ("extra_fraction temperature", Range(0, 100, open_low=True)),
    ("guidance", Range(0, 100)),
    ("lora_alpha", Range(1, 10**4, integer=True)),
    ("dp_max_grad_norm", Range(0, 10**6, open_low=True)),
    ("dp_epsilon", Range(0, math.inf, open_low=True)),
    ("seed generation_seed train_seed pool_seed", Range(0, 2**32 - 1, integer=True)),
)  # fmt: skip
RANGES: dict[str, Range] = {name: allowed for names, allowed in _TABLE for name in names.split()}
"""Each setting's range, by its last name; a list's entries (``hidden``) each."""
MAX_LIST = {"hidden": 32, "packages": 64, "categorical": 10_000, "continuous": 10_000,
            "grid": 1_000, "trusted_modules": 100, "slices": 8}  # fmt: skip
"""The most entries a list setting may hold."""
MIN_LIST = {"grid": 1}
"""The fewest entries a list setting may hold (a distinguisher needs one candidate)."""
SKIPPED = ("claim.", "hydra.")


# -- choices ---------------------------------------------------------------------------------
class AttackSide(StrEnum):
    """``audit.attack_side``: the losses the attack sees (f's; f's and h's; f's, h's and the
    other stand-ins' as reference models, docs/SPEC.md §2.7)."""

    TARGET = "target"
    TARGET_HELPER = "target+helper"
    TARGET_HELPER_REFERENCE_MODELS = "target+helper+reference_models"


class BaselineSide(StrEnum):
    """``audit.baseline_side``: the losses the baseline sees (h's; the stand-in f̂'s; f̂'s and
    h's; f̂'s, h's and the other stand-ins'), docs/SPEC.md §2.7."""

    HELPER = "helper"
    STAND_IN = "stand_in"
    STAND_IN_HELPER = "stand_in+helper"
    STAND_IN_HELPER_REFERENCE_MODELS = "stand_in+helper+reference_models"


REFERENCE = "+reference_models"
"""The ending of the sides whose distinguishers also see the other stand-ins' losses."""


class GroupStatistic(StrEnum):
    """``audit.group_statistic``: what decides that a group of members stands out
    (docs/SPEC.md §3, ``exposure``): the share flagged at ``audit.group_fpr``, or the group's
    AUC against the non-members (every rate at once); both are read and reported."""

    SHARE = "share"
    RANK = "rank"


class StandInRecipe(StrEnum):
    """``audit.stand_in.recipe``."""

    HELPER = "helper"
    TARGET = "target"


class StandInData(StrEnum):
    """``audit.stand_in.training_data``."""

    REAL_NONMEMBERS = "real_nonmembers"
    GENERATOR_DATA = "generator_data"
    REAL_NONMEMBERS_GENERATOR_DATA = "real_nonmembers+generator_data"


class TargetKind(StrEnum):
    """``target.kind``: a demo target trained here by the plug-in's recipe (``train``) or a
    model directory (``path``); a plug-in may name its own recipes instead of ``train``
    (tables: ``mlp``, ``xgboost``, declared in its folder) through its narrowing."""

    TRAIN = "train"
    PATH = "path"


class TargetMembers(StrEnum):
    """``target.members``: the audited members, or a negative control (tables also
    ``disjoint+generator_data``)."""

    SAME = "same"
    DISJOINT = "disjoint"
    DISJOINT_GENERATOR_DATA = "disjoint+generator_data"


class Optimizer(StrEnum):
    """The optimisers the training building blocks take (``panoramia.models.training``, the
    distinguishers, the plug-ins' networks); the image plug-in's ``target.optimizer`` and
    ``helper.optimizer`` settings choose one."""

    ADAM = "adam"
    SGD = "sgd"


def values(choice: Iterable[StrEnum]) -> tuple[str, ...]:
    """The plain strings of a choice's members (a StrEnum, or some of its members), in order."""
    return tuple(member.value for member in choice)


CHOICE_TYPES: dict[str, type[StrEnum]] = {
    "audit.attack_side": AttackSide,
    "audit.baseline_side": BaselineSide,
    "audit.group_statistic": GroupStatistic,
    "audit.stand_in.recipe": StandInRecipe,
    "audit.stand_in.training_data": StandInData,
    "target.kind": TargetKind,
    "target.members": TargetMembers,
}
"""The type of each shared setting that takes one of a list of values, by its whole key (a
plug-in's own are its ``Modality.choice_types``, :func:`plugin_choice_types`). ``data.source``
has none: every value of it is a plug-in's (its ``choices``), so the engine names no data
set; :func:`shared_choices` joins them."""
CHOICES: dict[str, tuple[str, ...]] = {key: values(kind) for key, kind in CHOICE_TYPES.items()}
"""The values of each shared choice setting the engine declares (plain strings); with the
plug-ins' narrowings joined in: :func:`shared_choices`."""


def _plugins(modality: object) -> list[Modality]:
    """The declaration of ``modality``'s plug-in, or every registered one's where ``modality``
    names none (a config that says no modality is held to every plug-in's settings)."""
    from panoramia.plugins import MODALITIES

    if isinstance(modality, str) and modality in MODALITIES:
        return [MODALITIES[modality]]
    return list(MODALITIES.values())


def plugin_choice_types(modality: object = None) -> dict[str, type[StrEnum]]:
    """The choice settings the plug-ins own (``Modality.choice_types``): ``modality``'s, or
    every registered plug-in's (the first to declare a key gives its values)."""
    found: dict[str, type[StrEnum]] = {}
    for entry in _plugins(modality):
        for key, kind in entry.choice_types.items():
            found.setdefault(key, kind)
    return found


def shared_choices() -> dict[str, tuple[str, ...]]:
    """The values of each shared choice setting, whatever the modality: the engine's own
    (:data:`CHOICES`), then every registered plug-in's narrowing values not yet listed (its
    ``Modality.choices``: its data sets under ``data.source``, its recipes under
    ``target.kind``), in the registry's order."""
    joined = {key: list(allowed) for key, allowed in CHOICES.items()}
    for entry in _plugins(None):
        for key, allowed in entry.choices.items():
            listed = joined.setdefault(key, [])
            listed += [value for value in allowed if value not in listed]
    return {key: tuple(allowed) for key, allowed in joined.items()}


def all_choices() -> dict[str, tuple[str, ...]]:
    """Every choice setting's values: the shared ones (:func:`shared_choices`) and each
    plug-in's own, by whole key, sorted."""
    plugins = {key: values(kind) for key, kind in plugin_choice_types().items()}
    return dict(sorted((shared_choices() | plugins).items()))


def choices_of(key: str, modality: object = None) -> tuple[str, ...] | None:
    """The values the setting ``key`` may take in ``modality``'s audit (None: any text):
    the plug-in's narrowing of a shared choice (``Modality.choices``), else the shared
    choice's values, else the plug-in's own choice's."""
    from panoramia.plugins import MODALITIES

    entry = MODALITIES.get(modality) if isinstance(modality, str) else None
    if entry is not None and key in entry.choices:
        return entry.choices[key]
    shared = shared_choices()
    if key in shared:
        return shared[key]
    kind = plugin_choice_types(modality).get(key)
    return values(kind) if kind is not None else None


def not_one_of(key: str, value: str, allowed: tuple[str, ...]) -> InputError:
    """``"<key>: '<value>' is not A or B"`` (two values) or ``"… is not one of A, B, C"``; a
    value over 40 characters shortened."""
    shown = value if len(value) <= 40 else f"{value[:37]}..."
    listed = " or ".join(allowed) if len(allowed) == 2 else f"one of {', '.join(allowed)}"
    return InputError(f"{key}: {shown!r} is not {listed}")


# -- ranges and choices ----------------------------------------------------------------------
def _leaves(node: object, where: str = "") -> Iterator[tuple[str, str, object]]:
    """``(dotted.key, last name, value)`` of every leaf; a list's entries under its name."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _leaves(child, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        name = where.rsplit(".", 1)[-1]
        limit = MAX_LIST.get(name)
        if limit is not None and len(node) > limit:
            raise InputError(f"{where}: {len(node)} entries, at most {limit}")
        if len(node) < MIN_LIST.get(name, 0):
            raise InputError(f"{where}: {len(node)} entries, at least {MIN_LIST[name]}")
        for position, child in enumerate(node):
            if isinstance(child, dict | list):
                yield from _leaves(child, f"{where}[{position}]")
            else:
                yield f"{where}[{position}]", name, child
    else:
        yield where, where.rsplit(".", 1)[-1], node


def check_ranges(config: dict) -> None:
    """Raise InputError ``"<key>: <value> is not in <range>"`` for the first setting of the
    config ``config`` (a plain container) outside its range, or ``"<key>: '<value>' is not one
    of …"`` for the first choice outside its values (narrowed by the config's ``modality``);
    NaN and infinities are refused in every float setting but those whose range reaches
    infinity."""
    modality = config.get("modality")
    for key, name, value in _leaves(config):
        if key.startswith(SKIPPED) or isinstance(value, bool) or value is None:
            continue
        if ".grid[" in key:  # xgboost's own parameters: the service's allow-list bounds them
            name = ""
        if isinstance(value, str):
            allowed = choices_of(key, modality)
            if allowed is not None and value not in allowed and "${" not in value:
                raise not_one_of(key, value, allowed)
            continue  # another text, or an unresolved interpolation (the service's)
        allowed_range = RANGES.get(name)
        if allowed_range is None:
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError(f"{key}: {value} is not a finite number")
            continue
        if allowed_range.integer and isinstance(value, float) and not value.is_integer():
            raise InputError(f"{key}: {value} is not {allowed_range}")
        # a number: texts, booleans and None are handled above, lists and mappings unfolded
        if not allowed_range.holds(cast(float, value)):
            shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:37]}..."
            raise InputError(f"{key}: {shown} is not in {allowed_range}".replace("in an", "an"))


# -- rules across settings -------------------------------------------------------------------
class _Unknown:
    """A setting the config lacks, or one still holding an interpolation (``${…}``) or a
    mandatory ``???``: a rule that reads one is skipped."""


UNKNOWN = _Unknown()


def setting_at(config: Mapping[str, Any], key: str) -> Any:
    """The value at the dotted ``key`` of ``config``, or :data:`UNKNOWN`."""
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return UNKNOWN
        node = node[part]
    return UNKNOWN if unresolved(node) else node


def unresolved(node: object) -> bool:
    if isinstance(node, str):
        return "${" in node or node == "???"
    if isinstance(node, Mapping):
        return any(unresolved(child) for child in node.values())
    if isinstance(node, list):
        return any(unresolved(child) for child in node)
    return False


def settings_at(config: Mapping[str, Any], *keys: str) -> tuple[Any, ...] | None:
    """The values at ``keys``, or None where one of them is :data:`UNKNOWN`."""
    found = tuple(setting_at(config, key) for key in keys)
    return None if any(value is UNKNOWN for value in found) else found


def _target_path(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "target.kind", "target.path")
    if found and found[0] == TargetKind.PATH and not found[1]:
        raise InputError("target.path: a target directory is required for target.kind=path")


def _control_pool(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "modality", "target.members", "data.source")
    if found is None:
        return
    modality, members, source = found
    from panoramia.plugins import MODALITIES

    entry = MODALITIES.get(modality) if isinstance(modality, str) else None
    if members != TargetMembers.SAME and entry is not None and source in entry.file_source_values:
        raise InputError(
            f"target.members={members} needs embedded data with a control pool, not "
            f"data.source={source}"
        )


def _split(config: Mapping[str, Any]) -> None:
    split = setting_at(config, "data.split")
    if not isinstance(split, Mapping):
        return
    fractions = [value for value in split.values() if isinstance(value, int | float)]
    if sum(fractions) > 1 + 1e-9:
        raise InputError("data.split: the fractions add up to more than 1")


def _sides(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "audit.attack_side", "audit.baseline_side", "audit.ensemble")
    if found is None:
        return
    attack_side, baseline_side, ensemble = found
    attack_reference = attack_side.endswith(REFERENCE)
    baseline_reference = baseline_side.endswith(REFERENCE)
    if (attack_reference or baseline_reference) and (
        not (attack_reference and baseline_reference) or ensemble < 2
    ):
        raise InputError(
            "audit.attack_side=target+helper+reference_models goes with "
            "audit.baseline_side=stand_in+helper+reference_models and audit.ensemble ≥ 2 (the "
            "reference models are the other stand-ins, on both sides)"
        )


def _null(config: Mapping[str, Any]) -> None:
    found = settings_at(config, "audit.null.draws", "audit.null.false_alarm_rate")
    if found is not None:
        from panoramia.measure.null import check_null_settings

        check_null_settings(*found)


def _thresholds(config: Mapping[str, Any]) -> None:
    from panoramia.measure.thresholds import ThresholdStrategy

    for key in ("audit.thresholds", "distinguisher.selection_thresholds"):
        spec = setting_at(config, key)
        if spec is UNKNOWN:
            continue
        try:
            ThresholdStrategy.parse(spec)
        except InputError as error:
            reason = str(error).removeprefix("thresholds: ")
            raise InputError(f"{key}: {reason}") from None


def _claim(config: Mapping[str, Any]) -> None:
    from panoramia.accounting.claim_settings import check_claim

    claim = setting_at(config, "claim")
    if isinstance(claim, Mapping):
        check_claim(claim)


RULES: tuple[Rule, ...] = (
    Rule("`target.kind=path` needs `target.path`", _target_path),
    Rule("`target.members` other than `same` needs data with a control pool (not the "
         "modality's file source: `csv`, `files`)", _control_pool),
    Rule("the `data.split` fractions add up to at most 1", _split),
    Rule("`audit.attack_side=target+helper+reference_models` goes with "
         "`audit.baseline_side=stand_in+helper+reference_models` (and the reverse), and "
         "`audit.ensemble` ≥ 2", _sides),
    Rule("`audit.null.draws` can reach a p-value of `audit.null.false_alarm_rate` "
         "(`panoramia/measure/null.py`)", _null),
    Rule("`audit.thresholds` and `distinguisher.selection_thresholds` are threshold "
         "strategies (`grid:K`, `all`, `split:F`; `panoramia/measure/thresholds.py`)", _thresholds),
    Rule("`claim.*` is a claim the accounting takes and, for DP-SGD, can account for "
         "(`panoramia/accounting/claim_settings.py`)", _claim),
)  # fmt: skip
"""The rules across settings every modality shares, checked after the ranges and choices, in
this order; a plug-in's own follow (:func:`rules_of`)."""


def rules_of(modality: object = None) -> tuple[Rule, ...]:
    """The rules a config of ``modality`` keeps, in the order they are checked: the shared
    ones (:data:`RULES`), then its plug-in's (``Modality.rules``; every plug-in's where
    ``modality`` names none)."""
    return RULES + tuple(rule for entry in _plugins(modality) for rule in entry.rules)


def check_rules(config: Mapping[str, Any]) -> None:
    """The first of :func:`rules_of` the config's modality that ``config`` breaks raises
    :class:`InputError`."""
    for rule in rules_of(config.get("modality")):
        rule.check(config)


def check_settings(config: dict) -> None:
    """Every check of this module on the composed config (a plain container): the ranges
    and choices (:func:`check_ranges`), then the rules across settings (:data:`RULES`). The
    first setting found wrong raises :class:`InputError`, one line naming its key."""
    check_ranges(config)
    check_rules(config)


def ranges_markdown() -> str:
    """The tables of every setting's range, choices and rules (``docs/RANGES.md`` holds them;
    a test keeps it so)."""
    from panoramia.plugins import MODALITIES

    lines = [
        "# Settings and their ranges",
        "",
        "Generated from `panoramia/audit_settings.py` and each modality plug-in's `settings.py` "
        "(`python -m panoramia.audit_settings > docs/RANGES.md`).",
        "A setting is known by its last name (`target.epochs`, `helper.epochs`: `epochs`); every",
        "numeric setting of every config the job composes has a row here (a test composes them",
        "all). A choice is known by its whole key, and some modalities allow fewer of its",
        "values. The CLI refuses a value outside its range or its choices, or settings that break",
        "a rule across settings (the list at the end), with one line and exit 2, the service with",
        "422, before any work; the service's own limits (SECURITY.md) apply on top.",
        "",
        "| setting | range |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {RANGES[name]} |" for name in sorted(RANGES)]
    lines += ["", "| setting | one of |", "|---|---|"]
    lines += [
        f"| `{key}` | {', '.join(f'`{v}`' for v in allowed)} |"
        for key, allowed in all_choices().items()
    ]
    lines += ["", "| modality | setting | one of |", "|---|---|---|"]
    lines += [
        f"| {entry.name} | `{key}` | {', '.join(f'`{v}`' for v in allowed)} |"
        for entry in MODALITIES.values()
        for key, allowed in sorted(entry.choices.items())
    ]
    lines += ["", "| list setting | fewest entries | most entries |", "|---|---|---|"]
    lines += [
        f"| `{name}` | {MIN_LIST.get(name, 0)} | {MAX_LIST[name]:,} |" for name in sorted(MAX_LIST)
    ]
    lines += ["", "Then, in this order, the rules across settings:", ""]
    lines += [f"{number}. {rule.says}" for number, rule in enumerate(RULES, 1)]
    lines += ["", "and after them, each modality's own:", ""]
    own = [f"{entry.name}: {rule.says}" for entry in MODALITIES.values() for rule in entry.rules]
    lines += [f"{number}. {says}" for number, says in enumerate(own, len(RULES) + 1)]
    return "\n".join(lines) + "\n"


RENAMED: tuple[tuple[str, str, str], ...] = (
    ("audit.reference.", "audit.reference.", "audit.real_nonmembers."),
    ("helper=reference", "helper=reference", "helper=target_recipe"),
    ("audit.attack_side=", "+reference", "+reference_models"),
    ("audit.baseline_side=", "+reference", "+reference_models"),
)
"""Settings renamed so that "reference" means one thing each: (what an override starts with,
the old part, the new part). An old part ending in ``.`` is a prefix of the key, one starting
with ``+`` the end of the value, any other the whole override."""


def check_renamed(overrides: list[str]) -> None:
    """InputError naming the new name when an override uses one renamed in 0.x (the audits on
    real non-members, the reference models' sides, h trained with the target's recipe)."""
    for override in overrides:
        text = override.lstrip("+~")
        for start, old, new in RENAMED:
            if old.startswith("+"):
                used = text.startswith(start) and text.endswith(old)
            elif old.endswith("."):
                used = text.startswith(old)
            else:  # helper=reference, not helper=reference_models (which is no option at all)
                used = text == old
            if used and not text.endswith(new):
                key = text.split("=", 1)[0]
                raise InputError(f"{key}: renamed; write {text.replace(old, new)}")


if __name__ == "__main__":
    print(ranges_markdown(), end="")
