"""The release gate's policy: which verdict levels fail a release, limits on the quoted ε̃'s
interval low end and on the attack's TPR at 0.1 % and 1 % FPR, and whether the declared
guarantee must hold (docs/AUDIT.md, "The release gate"; the shipped ones: ``conf/gates/``).

A policy file is a YAML or JSON mapping of :class:`GatePolicy`'s fields, read with a safe
loader (no tags, no interpolation, no code) and at most :data:`MAX_BYTES`; a field left out
takes its default. Every key and value is checked by :meth:`GatePolicy.check`: an unknown key,
a value of the wrong type or out of range, a malformed file, each is an :class:`InputError` of
one line naming the file and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from panoramia.errors import InputError
from panoramia.report.attacker import LOW_FPRS
from panoramia.report.verdict import WORDS

LEVELS = tuple(WORDS)
"""The verdict levels a policy may fail (docs/SPEC.md §3.1), most severe first. A pooled
verdict (a multirun, repeats: §3.2) reads ``leak_detected``, ``borderline``,
``no_leak_detected`` or ``inconclusive``."""
UNREADABLE = ("fail", "pass")
"""What a rule does where the report cannot give its figure (a null skipped, too few generated
non-members to read TPR at 0.1 % FPR, a claim no game with real non-members could check)."""
MAX_BYTES = 64 * 1024
"""The largest policy file read."""
SUFFIXES = (".yaml", ".yml", ".json")
"""The suffixes of a policy file."""


def _number(value: object) -> float | None:
    """``value`` as a float where it is an int or a float (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _rate_key(key: object) -> str | None:
    """A ``max_tpr_at_fpr`` key as the report writes it (``0.001``, ``0.01``): YAML reads an
    unquoted ``0.001:`` as a float."""
    if isinstance(key, str):
        return key.strip()
    number = _number(key)
    return None if number is None else repr(number)


@dataclass(frozen=True)
class GatePolicy:
    """A release gate's rules (each documented with its reasoning in docs/AUDIT.md).

    Figures are those of ``report.json``: ε̃ in nats, TPRs as shares in [0, 1] of the audited
    members (the positive class), read at the report's false-positive rates on generated
    non-members."""

    fail_levels: tuple[str, ...] = ()
    """Verdict levels (:data:`LEVELS`) that fail the release."""
    max_eps_tilde_low: float | None = None
    """Nats ≥ 0: the release fails where the low end of the quoted ε̃'s interval (this run's
    90 % interval; a multirun's 95 % t-interval over its runs) is above it. None: no limit."""
    max_tpr_at_fpr: Mapping[str, float] = field(default_factory=dict)
    """Per false-positive rate the report reads (:data:`~panoramia.report.attacker.LOW_FPRS`:
    ``"0.001"``, ``"0.01"``), a share in [0, 1]: the release fails where the attack's TPR there
    (less the baseline's, with :attr:`tpr_over_baseline`) is above it. A rate left out: no
    limit."""
    tpr_over_baseline: bool = True
    """True: the TPR limits read the attack's TPR less the baseline's (the members the model
    gives away beyond what the generated data alone gives); False: the attack's TPR itself."""
    claim_must_hold: bool = True
    """The release fails where the audit contradicts the model's declared guarantee (the
    report's claim check); a model that declares none passes this rule."""
    unreadable: str = "fail"
    """``fail`` or ``pass``: what a rule does where the report cannot give its figure."""
    source: str = field(default="policy", compare=False)
    """Where the policy came from (its file), for messages; not a key of the file."""

    def __post_init__(self) -> None:
        limit = self.max_eps_tilde_low
        if isinstance(limit, int) and not isinstance(limit, bool):  # a whole number of nats
            object.__setattr__(self, "max_eps_tilde_low", float(limit))
        if isinstance(self.max_tpr_at_fpr, Mapping):  # read-only, as a frozen field should be
            limits = {
                rate: float(share)
                if isinstance(share, int) and not isinstance(share, bool)
                else share
                for rate, share in self.max_tpr_at_fpr.items()
            }
            object.__setattr__(self, "max_tpr_at_fpr", MappingProxyType(limits))
        self.check()

    def check(self) -> None:
        """Each field's type and range; :class:`InputError` ``"<source>: <field>: …"``."""

        def refuse(name: str, why: str) -> InputError:
            return InputError(f"{self.source}: {name}: {why}")

        if not isinstance(self.fail_levels, tuple) or not all(
            isinstance(level, str) for level in self.fail_levels
        ):
            raise refuse("fail_levels", "a list of verdict levels")
        for level in self.fail_levels:
            if level not in LEVELS:
                raise refuse("fail_levels", f"{level!r} is not one of {', '.join(LEVELS)}")
        if len(set(self.fail_levels)) != len(self.fail_levels):
            raise refuse("fail_levels", "a level is listed twice")
        limit = self.max_eps_tilde_low
        if limit is not None and not (
            isinstance(limit, float) and math.isfinite(limit) and limit >= 0
        ):
            raise refuse("max_eps_tilde_low", f"{limit!r} is not a number of nats ≥ 0 (or null)")
        if not isinstance(self.max_tpr_at_fpr, Mapping):
            raise refuse("max_tpr_at_fpr", "a mapping of false-positive rates to shares")
        for rate, share in self.max_tpr_at_fpr.items():
            if rate not in LOW_FPRS:
                raise refuse("max_tpr_at_fpr", f"{rate!r} is not one of {', '.join(LOW_FPRS)}")
            if not (isinstance(share, float) and 0 <= share <= 1):
                raise refuse(f"max_tpr_at_fpr.{rate}", f"{share!r} is not a share in [0, 1]")
        for name in ("tpr_over_baseline", "claim_must_hold"):
            if not isinstance(getattr(self, name), bool):
                raise refuse(name, f"{getattr(self, name)!r} is not true or false")
        if self.unreadable not in UNREADABLE:
            raise refuse("unreadable", f"{self.unreadable!r} is not one of fail, pass")
        if not (self.fail_levels or limit is not None or self.max_tpr_at_fpr) and not (
            self.claim_must_hold
        ):
            raise InputError(f"{self.source}: the policy sets no rule")

    @classmethod
    def from_mapping(cls, body: object, *, source: str) -> GatePolicy:
        """The policy of a parsed file's ``body``; :class:`InputError` names ``source`` and
        the first key that is unknown or of the wrong type."""
        if not isinstance(body, Mapping):
            raise InputError(f"{source}: a policy is a mapping of its fields, not {_kind(body)}")
        known = [f.name for f in fields(cls) if f.name != "source"]
        values: dict[str, Any] = {}
        for key, value in body.items():
            if key not in known:
                raise InputError(
                    f"{source}: {key}: not a field of a gate policy (one of {', '.join(known)})"
                )
            values[key] = _field_value(str(key), value, source)
        return cls(**values, source=source)


def _kind(value: object) -> str:
    return "nothing" if value is None else f"a {type(value).__name__}"


def _field_value(name: str, value: object, source: str) -> Any:
    """A file's value as the field holds it: lists as tuples, whole numbers as floats, the
    rates' mapping read-only; a value of the wrong kind is refused here, naming the field."""

    def refuse(why: str) -> InputError:
        return InputError(f"{source}: {name}: {why}")

    if name == "fail_levels":
        if not isinstance(value, list):
            raise refuse(f"a list of verdict levels, not {_kind(value)}")
        return tuple(value)
    if name == "max_eps_tilde_low":
        if value is None:
            return None
        number = _number(value)
        if number is None:
            raise refuse(f"a number of nats (or null), not {_kind(value)}")
        return number
    if name == "max_tpr_at_fpr":
        if value is None:
            return MappingProxyType({})
        if not isinstance(value, Mapping):
            raise refuse(f"a mapping of false-positive rates to shares, not {_kind(value)}")
        limits = {}
        for key, share in value.items():
            rate = _rate_key(key)
            if rate is None:
                raise refuse(f"{key!r} is not a false-positive rate ({', '.join(LOW_FPRS)})")
            number = _number(share)
            if number is None:
                raise InputError(f"{source}: {name}.{rate}: a share in [0, 1], not {_kind(share)}")
            limits[rate] = number
        return MappingProxyType(limits)
    return value  # booleans and the unreadable word: checked by GatePolicy.check


def read_policy_file(path: Path, *, shown: str | None = None) -> GatePolicy:
    """The policy in the YAML or JSON file ``path`` (a suffix of :data:`SUFFIXES`), named
    ``shown`` (default: the path) in messages; :class:`InputError` for a missing, unreadable,
    over-large or malformed file, or a bad field."""
    source = shown or str(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(f"{source}: a policy file ends in {', '.join(SUFFIXES)}")
    try:
        if not path.is_file():
            raise InputError(f"{source}: no such policy file")
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"{source}: larger than {MAX_BYTES // 1024} KiB; not a policy")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source}: not UTF-8 text") from None
    except OSError as error:
        raise InputError(f"{source}: cannot be read ({error.strerror or error})") from None
    return GatePolicy.from_mapping(_parsed(text, path.suffix.lower(), source), source=source)


def _parsed(text: str, suffix: str, source: str) -> object:
    """The file's body: JSON for ``.json``, else YAML (the safe loader: plain data only)."""
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(
                f"{source}: not valid JSON (line {error.lineno}: {error.msg})"
            ) from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{source}: not valid YAML ({where}{problem})") from None
