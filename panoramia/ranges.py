"""The range of every setting a user or contributor can reach, checked on the composed config
before any work (the CLI: one line, exit 2; the service: 422). The schemas give the types;
this gives the values: a setting is known by its last name (``epochs``, ``real_quantile``),
as the service's resource limits are (``panoramia/service/resource_limits.py``, which stay on
top). Values still holding an interpolation of the project's own configs are checked once
resolved (the job) and skipped unresolved (the service, which never resolves); ``claim.*`` is
the claim's own to check (``panoramia/accounting/claims.py``). The table is documented in
SECURITY.md ("Settings and their ranges").
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from panoramia.errors import InputError


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
    ("epochs min_leaf head_epochs labeler_epochs batch_size labeler_batch_size bins chunk_length "
     "max_chunks_per_document samples_per_prompt sampling_steps diffusion_steps d_model "
     "n_embd n_head n_layer heads layers latent width widen blocks n_estimators max_depth "
     "top_k generation_batch pool_size pool_chunks chunks max_members max_examples n_jobs "
     "threads hidden", COUNT),
    ("ensemble", Range(1, 64, integer=True)),
    ("draws", Range(19, 10_000, integer=True)),
    ("false_alarm_rate", Range(0.001, 0.5, open_high=True)),
    ("vocab_size", Range(256, 10**7, integer=True)),
    ("num_workers", Range(0, 256, integer=True)),
    ("n_rows n_images n_chunks", AMOUNT),
    ("real_quantile support_novelty point_mass offset_noise prompt_fraction generator "
     "attack_train attack_val audit", FRACTION),
    ("max_drop", Range(0, 0.99)),
    ("dropout label_dropout ema_decay validation_fraction gamma delta", BELOW_ONE),
    ("confidence selection_confidence dp_delta", LEVEL),
    ("learning_rate xgb_learning_rate", RATE),
    ("weight_decay", Range(0, 10)),
    ("extra_fraction temperature", Range(0, 100, open_low=True)),
    ("guidance", Range(0, 100)),
    ("dp_max_grad_norm", Range(0, 10**6, open_low=True)),
    ("dp_epsilon", Range(0, math.inf, open_low=True)),
    ("seed generation_seed train_seed pool_seed", Range(0, 2**32 - 1, integer=True)),
)  # fmt: skip
RANGES: dict[str, Range] = {name: allowed for names, allowed in _TABLE for name in names.split()}
"""Each setting's range, by its last name; a list's entries (``hidden``) each."""
MAX_LIST = {"hidden": 32, "packages": 64, "categorical": 10_000, "continuous": 10_000,
            "grid": 1_000, "trusted_modules": 100}  # fmt: skip
"""The most entries a list setting may hold."""
SKIPPED = ("claim.", "hydra.")
CHOICES: dict[str, tuple[str, ...]] = {
    "audit.attack_side": ("target", "target+helper", "target+helper+reference"),
    "audit.baseline_side": ("helper", "stand_in", "stand_in+helper", "stand_in+helper+reference"),
    "audit.stand_in.recipe": ("helper", "target"),
    "audit.stand_in.training_data": (
        "real_nonmembers", "generator_data", "real_nonmembers+generator_data",
    ),
    "generator.synthesizer": ("cart", "gaussian_copula", "ctgan", "tvae"),
    "target.members": ("same", "disjoint", "disjoint+generator_data"),
    "target.kind": ("train", "mlp", "xgboost", "path"),
}  # fmt: skip
"""Settings that take one of a list of values, by their whole key, checked with the ranges;
a modality may allow fewer (``target.members=disjoint+generator_data`` is the tables' only,
said by its wing's check)."""


def ranges_markdown() -> str:
    """The table of every setting's range (``docs/RANGES.md`` holds it; a test keeps it so)."""
    lines = [
        "# Settings and their ranges",
        "",
        "Generated from `panoramia/ranges.py` (`python -m panoramia.ranges > docs/RANGES.md`).",
        "A setting is known by its last name (`target.epochs`, `helper.epochs`: `epochs`); every",
        "numeric setting of every config the job composes has a row here (a test composes them",
        "all). The CLI refuses a value outside its range with one line and exit 2, the service",
        "with 422, before any work; the service's own limits (SECURITY.md) apply on top.",
        "",
        "| setting | range |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {RANGES[name]} |" for name in sorted(RANGES)]
    lines += ["", "| setting | one of |", "|---|---|"]
    lines += [
        f"| `{key}` | {', '.join(f'`{v}`' for v in CHOICES[key])} |" for key in sorted(CHOICES)
    ]
    lines += ["", "| list setting | most entries |", "|---|---|"]
    lines += [f"| `{name}` | {MAX_LIST[name]:,} |" for name in sorted(MAX_LIST)]
    return "\n".join(lines) + "\n"


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
        for position, child in enumerate(node):
            if isinstance(child, dict | list):
                yield from _leaves(child, f"{where}[{position}]")
            else:
                yield f"{where}[{position}]", name, child
    else:
        yield where, where.rsplit(".", 1)[-1], node


def check_ranges(config: dict) -> None:
    """Raise InputError ``"<key>: <value> is not in <range>"`` for the first setting of the
    config ``config`` (a plain container) outside its range; NaN and infinities are refused in
    every float setting but those whose range reaches infinity."""
    for key, name, value in _leaves(config):
        if key.startswith(SKIPPED) or isinstance(value, bool) or value is None:
            continue
        if ".grid[" in key:  # xgboost's own parameters: the service's allow-list bounds them
            name = ""
        if isinstance(value, str):
            choices = CHOICES.get(key)
            if choices is not None and value not in choices and "${" not in value:
                shown = value if len(value) <= 40 else f"{value[:37]}..."
                raise InputError(f"{key}: {shown!r} is not one of {', '.join(choices)}")
            continue  # another text, or an unresolved interpolation (the service's)
        allowed = RANGES.get(name)
        if allowed is None:
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError(f"{key}: {value} is not a finite number")
            continue
        if allowed.integer and isinstance(value, float) and not value.is_integer():
            raise InputError(f"{key}: {value} is not {allowed}")
        if not allowed.holds(value):
            shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:37]}..."
            raise InputError(f"{key}: {shown} is not in {allowed}".replace("in an", "an"))


if __name__ == "__main__":
    print(ranges_markdown(), end="")
