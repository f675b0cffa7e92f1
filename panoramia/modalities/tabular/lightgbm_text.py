"""A LightGBM text model checked before LightGBM's own parser reads it.

LightGBM's C++ loader trusts its input: a truncated file makes it read past its buffer (a
segmentation fault), a malformed tree throws inside an OpenMP loop (the process aborts), and
a child index or feature index out of range is read as memory at prediction. So an untrusted
``model.txt`` is first read here, in Python, and refused with one line unless it is the
structure ``Booster.save_model`` writes:

* ``tree``, then the header's ``key=value`` lines: ``num_class``, ``num_tree_per_iteration``,
  ``label_index``, ``max_feature_idx``, ``feature_names`` and ``feature_infos`` (one per
  feature), ``objective``, ``tree_sizes`` (when present, each tree's exact byte length: the
  loader jumps by them);
* one block a tree, ``Tree=<i>`` in order, then only the keys LightGBM writes, each array of
  exactly its length (``num_leaves - 1`` nodes, ``num_leaves`` leaves), ended by a blank line;
  node children that make one binary tree (every node and leaf reached once from the root),
  split features within ``max_feature_idx``, decision types of LightGBM's four bits (the
  categorical flag, the default direction, a missing type of 0–2), categorical splits naming
  one of the tree's ``num_cat`` bitsets, ``cat_boundaries`` non-decreasing from 0 to
  ``cat_threshold``'s length; no linear trees;
* ``end of trees``; the ``parameters:`` section, when there is one, closed by ``end of
  parameters``, each line ``[name: value]`` (LightGBM splits it at the colon without looking,
  and writes the value into JSON as it is: no quote, backslash or brace in it); the
  last line ``pandas_categorical:`` JSON (a list of category lists, or null), read as JSON
  data only.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from panoramia.errors import InputError

MAX_FEATURES = 1_000_000
MAX_CLASSES = 10_000
MAX_LEAVES = 131_072
"""LightGBM's own ceiling on ``num_leaves``."""
TREE_KEYS = frozenset({
    "num_leaves", "num_cat", "split_feature", "split_gain", "threshold", "decision_type",
    "left_child", "right_child", "leaf_value", "leaf_weight", "leaf_count", "internal_value",
    "internal_weight", "internal_count", "cat_boundaries", "cat_threshold", "is_linear",
    "shrinkage",
})  # fmt: skip
"""The keys ``save_model`` writes in a tree's block."""
LINEAR_KEYS = frozenset({"leaf_const", "num_features", "leaf_features", "leaf_coeff"})
"""The keys a linear tree adds (refused: its leaves are models of their own)."""
NODE_INTS = ("split_feature", "left_child", "right_child", "decision_type", "internal_count")
NODE_FLOATS = ("split_gain", "threshold", "internal_value", "internal_weight")
LEAF_FLOATS = ("leaf_value", "leaf_weight")
PANDAS_KEY = "pandas_categorical:"
PARAMETER_LINE = re.compile(r"\[[a-z0-9_]+: [^\"\\{}]*\]")
"""A line of the parameters section as ``save_model`` writes it."""


@dataclass(frozen=True)
class ModelText:
    """What the check read of a LightGBM text model's header (the rest is LightGBM's)."""

    objective: str
    """The objective's name (``binary``, ``multiclass``, ``regression``, …)."""
    num_class: int
    feature_names: tuple[str, ...]
    trees: int
    text: str = field(default="", repr=False)
    """The whole model as checked (LightGBM reads these characters, not the file again)."""
    sha256: str = ""
    """The SHA-256 of the file's bytes."""


class _Refused(Exception):
    """A structural fault, turned into one InputError line naming the file."""


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _Refused(f"{what} is not an integer ({text[:40]!r})") from None


def _ints(text: str, count: int, what: str) -> list[int]:
    values = [_int(token, what) for token in text.split()]
    if len(values) != count:
        raise _Refused(f"{what} holds {len(values)} values, not {count}")
    return values


def _floats(text: str, count: int, what: str) -> list[float]:
    tokens = text.split()
    if len(tokens) != count:
        raise _Refused(f"{what} holds {len(tokens)} values, not {count}")
    try:
        return [float(token) for token in tokens]
    except ValueError:
        raise _Refused(f"{what} holds a value that is not a number") from None


def _check_children(left: list[int], right: list[int], leaves: int, where: str) -> None:
    """Every node 1..leaves-2 and every leaf (~0..~(leaves-1)) is a child exactly once, and
    the root 0 never: one binary tree, so a prediction's walk ends at a leaf."""
    seen_nodes = [False] * (leaves - 1)
    seen_leaves = [False] * leaves
    for child in (*left, *right):
        if child >= 0:
            if child == 0 or child >= leaves - 1 or seen_nodes[child]:
                raise _Refused(f"{where}: its children do not form one tree")
            seen_nodes[child] = True
        else:
            leaf = ~child
            if leaf >= leaves or seen_leaves[leaf]:
                raise _Refused(f"{where}: its children do not form one tree")
            seen_leaves[leaf] = True
    # so each node but the root has one parent, each leaf one: a walk from the root that
    # reaches every node is the whole tree (a cycle would need a node of two parents)
    reached, stack = 0, [0]
    while stack:
        node = stack.pop()
        reached += 1
        if reached > leaves - 1:
            raise _Refused(f"{where}: its children do not form one tree")
        stack.extend(c for c in (left[node], right[node]) if c >= 0)
    if reached != leaves - 1:
        raise _Refused(f"{where}: its children do not form one tree")


def _check_tree(fields: dict[str, str], features: int, where: str) -> None:
    """One tree's block (see the module docstring)."""
    if fields.get("is_linear", "0") != "0" or set(fields) & LINEAR_KEYS:
        raise _Refused(f"{where}: a linear tree (linear_tree=true) is not audited")
    unknown = sorted(set(fields) - TREE_KEYS)
    if unknown:
        raise _Refused(f"{where}: unknown key {unknown[0][:40]!r}")
    for needed in ("num_leaves", "num_cat", "leaf_value"):
        if needed not in fields:
            raise _Refused(f"{where}: no {needed}")
    leaves = _int(fields["num_leaves"], f"{where} num_leaves")
    if not 1 <= leaves <= MAX_LEAVES:
        raise _Refused(f"{where}: num_leaves {leaves} outside 1..{MAX_LEAVES}")
    _floats(fields["leaf_value"], leaves, f"{where} leaf_value")
    _floats(fields.get("shrinkage", "1"), 1, f"{where} shrinkage")
    if leaves == 1:  # LightGBM reads nothing else of a one-leaf tree
        return
    nodes = leaves - 1
    for key in ("split_feature", "threshold", "left_child", "right_child"):
        if key not in fields:
            raise _Refused(f"{where}: no {key}")
    ints = {k: _ints(fields[k], nodes, f"{where} {k}") for k in NODE_INTS if k in fields}
    for key in NODE_FLOATS:
        if key in fields:
            _floats(fields[key], nodes, f"{where} {key}")
    for key in LEAF_FLOATS:
        if key in fields:
            _floats(fields[key], leaves, f"{where} {key}")
    if "leaf_count" in fields:
        _ints(fields["leaf_count"], leaves, f"{where} leaf_count")
    _check_children(ints["left_child"], ints["right_child"], leaves, where)
    if any(not 0 <= f < features for f in ints["split_feature"]):
        raise _Refused(f"{where}: a split on a feature past max_feature_idx")
    decisions = ints.get("decision_type", [0] * nodes)
    if any(not 0 <= d <= 15 or (d >> 2) & 3 == 3 for d in decisions):
        raise _Refused(f"{where}: a decision_type LightGBM does not write")
    categories = _int(fields["num_cat"], f"{where} num_cat")
    if not 0 <= categories <= nodes:
        raise _Refused(f"{where}: num_cat {categories} outside 0..{nodes}")
    thresholds = _floats(fields["threshold"], nodes, f"{where} threshold")
    for decision, threshold in zip(decisions, thresholds, strict=True):
        if decision & 1 and not (threshold.is_integer() and 0 <= threshold < categories):
            raise _Refused(f"{where}: a categorical split names no category bitset")
    if categories > 0:
        for key in ("cat_boundaries", "cat_threshold"):
            if key not in fields:
                raise _Refused(f"{where}: no {key}")
        bounds = _ints(fields["cat_boundaries"], categories + 1, f"{where} cat_boundaries")
        if bounds[0] != 0 or any(b > a for b, a in itertools.pairwise(bounds)):
            raise _Refused(f"{where}: cat_boundaries do not rise from 0")
        bitsets = _ints(fields["cat_threshold"], bounds[-1], f"{where} cat_threshold")
        if any(not 0 <= word < 2**32 for word in bitsets):
            raise _Refused(f"{where}: a cat_threshold word outside 32 bits")


def _key_values(lines: list[str], where: str, bare: tuple[str, ...] = ()) -> dict[str, str]:
    """The ``key=value`` lines as a dict (a key in ``bare`` may stand alone); each key once."""
    fields: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not key or not (sep or key in bare):
            raise _Refused(f"{where}: the line {line[:40]!r} is not key=value")
        if key in fields:
            raise _Refused(f"{where}: {key[:40]!r} given twice")
        fields[key] = value
    return fields


def _parameters(lines: list[str]) -> None:
    """The ``parameters:`` section among the lines after the trees (see the module docstring)."""
    if "parameters:" not in lines:
        return
    start = lines.index("parameters:") + 1
    if "end of parameters" not in lines[start:]:
        raise _Refused("its parameters section does not end (the file is cut short)")
    for line in lines[start : lines.index("end of parameters", start)]:
        if line and not PARAMETER_LINE.fullmatch(line):
            raise _Refused(f"the parameter line {line[:40]!r} is not [name: value]")


def _pandas_categorical(lines: list[str]) -> None:
    """The ``pandas_categorical`` JSON among the file's last ``lines`` (where LightGBM's reader
    looks for it): null or a list of lists of scalars."""
    tail = [line for line in lines if line.startswith(PANDAS_KEY)]
    if not tail:
        return
    try:
        stored = json.loads(tail[-1][len(PANDAS_KEY) :])
    except (ValueError, RecursionError):
        raise _Refused("its pandas_categorical line is not JSON") from None
    if stored is None:
        return
    scalar = (str, int, float, bool)
    if not isinstance(stored, list) or not all(
        isinstance(values, list) and all(isinstance(v, scalar) for v in values) for values in stored
    ):
        raise _Refused("its pandas_categorical line is not a list of category lists")


def check_model_text(path: Path) -> ModelText:
    """The header of the LightGBM text model at ``path`` once its whole structure is checked
    (the module docstring); one-line InputError naming ``path`` otherwise."""
    shown = str(path)
    data = path.read_bytes()
    try:
        header = _check(data)
    except _Refused as fault:
        raise InputError(f"model {shown!r}: not a LightGBM text model ({fault})") from None
    except UnicodeDecodeError:
        raise InputError(f"model {shown!r}: not a LightGBM text model (not UTF-8)") from None
    text = data.decode("utf-8")
    return replace(header, text=text, sha256=hashlib.sha256(data).hexdigest())


def _check(data: bytes) -> ModelText:
    if not data.startswith((b"tree\n", b"tree\r\n")):
        raise _Refused("it does not start with 'tree'; save one with save_model(\"model.txt\")")
    raw_lines = data.split(b"\n")
    offsets = [0]
    for raw in raw_lines[:-1]:
        offsets.append(offsets[-1] + len(raw) + 1)
    lines = [raw.rstrip(b"\r").decode("utf-8") for raw in raw_lines]
    first_tree = next((i for i, line in enumerate(lines) if line.startswith("Tree=")), None)
    if first_tree is None:
        raise _Refused("no tree")
    header = _key_values(
        [line for line in lines[1:first_tree] if line], "its header", bare=("average_output",)
    )
    for needed in ("num_class", "label_index", "max_feature_idx", "feature_names",
                   "feature_infos", "objective"):  # fmt: skip
        if needed not in header:
            raise _Refused(f"its header has no {needed}")
    num_class = _int(header["num_class"], "num_class")
    per_iteration = _int(header.get("num_tree_per_iteration", str(num_class)), "trees")
    _int(header["label_index"], "label_index")
    features = _int(header["max_feature_idx"], "max_feature_idx") + 1
    if not 1 <= features <= MAX_FEATURES or not 1 <= num_class <= MAX_CLASSES:
        raise _Refused("max_feature_idx or num_class out of range")
    if per_iteration not in (1, num_class):
        raise _Refused(f"num_tree_per_iteration {per_iteration} for {num_class} classes")
    names = header["feature_names"].split(" ")
    if len(names) != features or len(header["feature_infos"].split(" ")) != features:
        raise _Refused(f"feature_names or feature_infos do not list {features} features")
    if "monotone_constraints" in header:
        _ints(header["monotone_constraints"], features, "monotone_constraints")
    objective = header["objective"].split(" ")
    if (objective[0] == "binary" and num_class != 1) or (
        objective[0] == "multiclass" and f"num_class:{num_class}" not in objective[1:]
    ):
        raise _Refused(f"objective {header['objective'][:60]!r} for {num_class} classes")
    trees, at = 0, first_tree
    starts: list[int] = []
    while at < len(lines) and lines[at].startswith("Tree="):
        where = f"tree {trees}"
        if lines[at] != f"Tree={trees}":
            raise _Refused(f"{where} is named {lines[at][:40]!r}")
        starts.append(offsets[at])
        end = at + 1
        while end < len(lines) and lines[end]:
            end += 1
            if end - at > len(TREE_KEYS | LINEAR_KEYS) + 1:
                raise _Refused(f"{where}: more lines than a tree holds")
        if end >= len(lines):
            raise _Refused(f"{where} does not end (the file is cut short)")
        _check_tree(_key_values(lines[at + 1 : end], where), features, where)
        trees += 1
        at = end
        while at < len(lines) and not lines[at]:
            at += 1
    if at >= len(lines) or lines[at] != "end of trees":
        raise _Refused("no 'end of trees' after its trees (the file is cut short)")
    if trees % per_iteration:
        raise _Refused(f"{trees} trees for {per_iteration} a boosting round")
    if "tree_sizes" in header:
        sizes = _ints(header["tree_sizes"], trees, "tree_sizes")
        bounds = [*starts, offsets[at]]
        if any(b - a != s for (a, b), s in zip(itertools.pairwise(bounds), sizes, strict=True)):
            raise _Refused("its tree_sizes do not match its trees")
    _parameters(lines[at + 1 :])
    _pandas_categorical(lines[-3:])
    return ModelText(objective[0], num_class, tuple(names), trees)
