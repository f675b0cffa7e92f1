"""The JSON Schema of a model's declared guarantee (``ModelRef.claim``), stating what
:func:`panoramia.accounting.claims.claim_from_dict` reads and checks: its kind, the fields each
kind needs and their ranges, and the law of the runs tried (``tuning``,
:mod:`panoramia.accounting.run_count`). An audit's claim is also accounted for
(:func:`panoramia.accounting.dpsgd.check_accountable`): one phase only, σ and the steps within
what is accounted, and a privacy-loss span the schema language cannot state (its description
says it)."""

from __future__ import annotations

from typing import Any

from panoramia.accounting.claims import NEIGHBOURING
from panoramia.accounting.dpsgd import MAX_LOSS_SPAN, MAX_STEPS, NOISE_MULTIPLIER_RANGE
from panoramia.accounting.run_count import MAX_RUNS

Schema = dict[str, Any]

_NUMBER: Schema = {"type": "number"}
_WHOLE: Schema = {"type": "integer"}


def _object(required: list[str], properties: dict[str, Schema], *, closed: bool) -> Schema:
    schema: Schema = {"type": "object", "required": required, "properties": properties}
    if closed:
        schema["additionalProperties"] = False
    return schema


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def tuning_schema() -> Schema:
    """``tuning``: how many runs were tried (:data:`panoramia.accounting.run_count._KINDS`)."""
    runs = {**_WHOLE, "minimum": 1, "maximum": MAX_RUNS}
    kinds = [
        _object(["kind", "runs"], {"kind": {"const": "fixed"}, "runs": runs}, closed=True),
        _object(
            ["kind", "eta", "gamma"],
            {
                "kind": {"const": "tnb"},
                "eta": {**_NUMBER, "exclusiveMinimum": -1},
                "gamma": {**_NUMBER, "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            },
            closed=True,
        ),
        _object(
            ["kind", "rate"],
            {"kind": {"const": "poisson"}, "rate": {**_NUMBER, "exclusiveMinimum": 0}},
            closed=True,
        ),
        _object(
            ["kind", "trials", "probability"],
            {
                "kind": {"const": "binomial"},
                "trials": runs,
                "probability": {**_NUMBER, "exclusiveMinimum": 0, "maximum": 1},
            },
            closed=True,
        ),
    ]
    return {"oneOf": kinds, "description": "The law of the number of runs tried."}


def claim_schema(*, audited: bool) -> Schema:
    """A claim: ``none`` (or no ``kind``), ``eps_delta`` or ``dpsgd``; ``audited``: the
    narrower claim an audit accounts for (one phase, σ in :data:`NOISE_MULTIPLIER_RANGE`, at
    most :data:`MAX_STEPS` steps)."""
    sigma: Schema = {**_NUMBER, "exclusiveMinimum": 0}
    steps: Schema = {**_WHOLE, "minimum": 1}
    phases: Schema = {"type": "array", "minItems": 1}
    if audited:
        low, high = NOISE_MULTIPLIER_RANGE
        sigma = {**_NUMBER, "minimum": low, "maximum": high}
        steps["maximum"] = MAX_STEPS
        phases["maxItems"] = 1
    phases["items"] = _object(
        ["noise_multiplier", "sample_rate", "steps"],
        {"noise_multiplier": sigma, "sample_rate": {**_NUMBER, "exclusiveMinimum": 0,
         "maximum": 1}, "steps": steps},
        closed=True,
    )  # fmt: skip
    tuning = _nullable(tuning_schema())
    dpsgd = _object(
        ["kind", "phases"],
        {"kind": {"const": "dpsgd"}, "phases": phases,
         "neighbouring": {"enum": list(NEIGHBOURING)},
         "dataset_size": _nullable({**_WHOLE, "minimum": 1}), "tuning": tuning},
        closed=True,
    )  # fmt: skip
    if audited:
        dpsgd["description"] = (
            f"Accounted for before the audit is queued: a run whose privacy loss spans more "
            f"than {MAX_LOSS_SPAN:g} nats (ε in the hundreds or more) is refused (422)."
        )
    eps_delta = _object(
        ["kind", "epsilon", "delta"],
        {"kind": {"const": "eps_delta"}, "epsilon": {**_NUMBER, "minimum": 0},
         "delta": {**_NUMBER, "minimum": 0, "exclusiveMaximum": 1}, "tuning": tuning},
        closed=False,
    )  # fmt: skip
    none: Schema = {"type": "object", "properties": {"kind": {"enum": ["none", None]}}}
    return {
        "oneOf": [none, eps_delta, dpsgd],
        "description": "The declared privacy guarantee (panoramia.accounting.claims): none, "
        "a bare (ε, δ), or DP-SGD's phases; kept from the model's first mention.",
    }


def _numeric_keys(node: object) -> set[str]:
    """The names of the number and integer fields anywhere in a schema."""
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending += item
        elif isinstance(item, dict):
            for name, field in (item.get("properties") or {}).items():
                choices = [field, *field.get("anyOf", [])] if isinstance(field, dict) else []
                if any(choice.get("type") in ("number", "integer") for choice in choices):
                    found.add(name)
            pending += list(item.values())
    return found


NUMERIC_KEYS = frozenset(_numeric_keys(claim_schema(audited=False)))
"""The claim's fields that hold numbers (σ, q, T, N, ε, δ and the tuning law's)."""


def check_claim_numbers(claim: object) -> None:
    """ValueError naming the field where a claim's number is given as text or a boolean
    (which ``float()`` and the comparisons of :mod:`panoramia.accounting` would take)."""
    pending: list[tuple[object, str]] = [(claim, "claim")]
    while pending:
        item, where = pending.pop()
        if isinstance(item, list):
            pending += [(child, f"{where}[{i}]") for i, child in enumerate(item)]
        elif isinstance(item, dict):
            for key, value in item.items():
                if (
                    key in NUMERIC_KEYS
                    and value is not None
                    and (isinstance(value, bool) or not isinstance(value, int | float))
                ):
                    raise ValueError(f"{where}.{key}: must be a JSON number")
                pending.append((value, f"{where}.{key}"))
