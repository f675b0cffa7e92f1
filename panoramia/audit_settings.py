"""The one module where audit settings are checked: the range of every numeric setting and
the entries of every list (:func:`bounds_of`: each declared beside its field in the schema
that holds it, :mod:`panoramia.setting_bounds`), the values of every setting that takes one of
a list (:data:`CHOICES`, one :class:`~enum.StrEnum` each, narrowed by each modality plug-in's
``choices``, :mod:`panoramia.plugins`) and the rules that tie settings together (:data:`RULES`).

:func:`check_settings` runs them in that order on the composed config, a plain container,
before any work: the CLI's job (``panoramia/pipeline/app.py::run_job``: one line, exit 2) and
the service's door (``panoramia/service/submission/command.py::check_composes``: 422) both
call it. The schemas give the types and, beside each field, its bounds; this checks the
values. A setting is known by its whole key (``target.epochs``), a list's entries by the
list's; the service's resource limits (``panoramia/service/resource_limits.py``, which stay
on top) read the limit kind the same declarations give.
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

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from panoramia.errors import InputError
from panoramia.setting_bounds import Bound, Range, declared_bounds
from panoramia.settings_rule import Rule

if TYPE_CHECKING:
    from panoramia.modality_plugin import Modality


def bounds_of(modality: object = None) -> dict[str, tuple[Bound, ...]]:
    """Every setting's bounds as its schema declares them beside its field
    (:mod:`panoramia.setting_bounds`), by whole key (a list's under the list's key):
    ``modality``'s plug-in's schema, or every registered plug-in's where ``modality`` names
    none (a key several schemas bound is held to each of their bounds)."""
    found: dict[str, tuple[Bound, ...]] = {}
    for entry in _plugins(modality):
        for key, bound in _schema_bounds(entry.job_schema()).items():
            held = found.get(key, ())
            found[key] = held if bound in held else (*held, bound)
    return found


@functools.cache
def _schema_bounds(schema: type) -> dict[str, Bound]:
    return declared_bounds(schema)


def setting_key(key: str) -> str:
    """``key`` with its list positions taken out (``target.hidden[0]`` → ``target.hidden``):
    the key its bound is declared under."""
    return _POSITION.sub("", key)


_POSITION = re.compile(r"\[\d+\]")
NO_BOUNDS: Mapping[str, tuple[Bound, ...]] = MappingProxyType({})
"""No bounds: :func:`leaves` only walks the container."""
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
def leaves(
    node: object, bounds: Mapping[str, tuple[Bound, ...]] = NO_BOUNDS, where: str = ""
) -> Iterator[tuple[str, object]]:
    """``(dotted.key, value)`` of every leaf of a plain container, a list's entries as
    ``key[i]``; a list whose ``bounds`` (:func:`bounds_of`; none by default) allow fewer or
    more entries raises InputError."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from leaves(child, bounds, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for bound in bounds.get(setting_key(where), ()):
            if bound.most is not None and len(node) > bound.most:
                raise InputError(f"{where}: {len(node)} entries, at most {bound.most}")
            if len(node) < bound.fewest:
                raise InputError(f"{where}: {len(node)} entries, at least {bound.fewest}")
        for position, child in enumerate(node):
            yield from leaves(child, bounds, f"{where}[{position}]")
    else:
        yield where, node


def check_ranges(config: dict) -> None:
    """Raise InputError ``"<key>: <value> is not in <range>"`` for the first setting of the
    config ``config`` (a plain container) outside the range its schema declares
    (:func:`bounds_of` the config's ``modality``), or ``"<key>: '<value>' is not one of …"``
    for the first choice outside its values (narrowed by the config's ``modality``); NaN and
    infinities are refused in every float setting but those whose range reaches infinity."""
    modality = config.get("modality")
    bounds = bounds_of(modality)
    for key, value in leaves(config, bounds):
        if key.startswith(SKIPPED) or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str):
            allowed = choices_of(key, modality)
            if allowed is not None and value not in allowed and "${" not in value:
                raise not_one_of(key, value, allowed)
            continue  # another text, or an unresolved interpolation (the service's)
        ranges = [bound.allowed for bound in bounds.get(setting_key(key), ()) if bound.allowed]
        if not ranges:
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError(f"{key}: {value} is not a finite number")
            continue
        for allowed_range in ranges:
            _check_range(key, cast(float, value), allowed_range)


def _check_range(key: str, value: float, allowed_range: Range) -> None:
    """A number (texts, booleans and None are handled by the caller) in its range."""
    if allowed_range.integer and isinstance(value, float) and not value.is_integer():
        raise InputError(f"{key}: {value} is not {allowed_range}")
    if not allowed_range.holds(value):
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
        "Generated from the schemas' declarations, `panoramia/audit_settings.py` and each modality "
        "plug-in's `settings.py` "
        "(`python -m panoramia.audit_settings > docs/RANGES.md`).",
        "Each range is declared beside its field in the schema that holds it (`ranged(…)` in",
        "`panoramia/pipeline/config.py` and each plug-in's config modules,",
        "`panoramia/setting_bounds.py`); a setting is known by its whole key, and a test holds",
        "that every numeric setting of every config the job composes has one. A choice is known",
        "by its whole key too, and some modalities allow fewer of its values. The CLI refuses a",
        "value outside its range or its choices, or settings that break a rule across settings",
        "(the list at the end), with one line and exit 2, the service with 422, before any",
        "work; the service's own limits (SECURITY.md; the last column: which of them bounds the",
        "setting, an integer without one is a count) apply on top.",
        "",
        "| setting | range | modalities | service limit |",
        "|---|---|---|---|",
    ]
    lines += _bound_rows(
        lambda bound: bound.allowed is not None or bound.limit is not None,
        lambda bound: f"{bound.allowed or 'any'} | {{}} | {bound.limit or ''}",
    )
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
    lines += [
        "",
        "| list setting | fewest entries | most entries | modalities |",
        "|---|---|---|---|",
    ]
    lines += _bound_rows(
        lambda bound: bound.most is not None,
        lambda bound: f"{bound.fewest} | {bound.most:,} | {{}}",
    )
    lines += ["", "Then, in this order, the rules across settings:", ""]
    lines += [f"{number}. {rule.says}" for number, rule in enumerate(RULES, 1)]
    lines += ["", "and after them, each modality's own:", ""]
    own = [f"{entry.name}: {rule.says}" for entry in MODALITIES.values() for rule in entry.rules]
    lines += [f"{number}. {says}" for number, says in enumerate(own, len(RULES) + 1)]
    return "\n".join(lines) + "\n"


def _bound_rows(shown: Callable[[Bound], bool], cells: Callable[[Bound], str]) -> list[str]:
    """One table row per setting and bound (``cells``, whose ``{}`` takes the modalities that
    declare it) of every bound ``shown`` picks, by key."""
    from panoramia.plugins import MODALITIES

    holders: dict[tuple[str, str], list[str]] = {}
    for name, entry in MODALITIES.items():
        for key, bound in _schema_bounds(entry.job_schema()).items():
            if shown(bound):
                holders.setdefault((key, cells(bound)), []).append(name)
    every = len(MODALITIES)
    return [
        f"| `{key}` | {row.format('all' if len(names) == every else ', '.join(names))} |"
        for (key, row), names in sorted(holders.items())
    ]


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
