"""The shared job reads a plug-in's settings only through what it declares: no module outside
``panoramia/modalities/`` asks a job section for a field with ``getattr``/``hasattr`` (a
plug-in that lacks it would be skipped in silence), and the fields the shared code does read
of every plug-in's sections (:class:`panoramia.pipeline.graph.DeviceSection`) are there."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

from panoramia.plugins import MODALITIES

PACKAGE = Path(__file__).resolve().parents[2] / "panoramia"
SECTION_ROOTS = {"job", "config", "section", "data", "target", "helper", "distinguisher"}
"""The names a job schema or one of its sections goes by in the shared code."""


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        if node.attr in SECTION_ROOTS:
            return node.attr
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _own_fields(tree: ast.AST) -> set[tuple[str, str]]:
    """(loop variable, object) of every loop over ``fields(object)``: reading
    ``getattr(object, variable.name)`` there reads a field the object declares (as
    :func:`dataclasses.asdict` does), never one a plug-in may lack."""
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.comprehension | ast.For)]
    return {
        (loop.target.id, ast.unparse(loop.iter.args[0]))
        for loop in loops
        if isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Name)
        and loop.iter.func.id == "fields"
        and loop.iter.args
    }


def test_no_shared_module_asks_a_job_section_for_a_field_by_name() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "modalities" in path.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(path.read_text())
        own = _own_fields(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and _root(node.args[0]) in SECTION_ROOTS
                and not _reads_own_field(node, own)
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    assert not found, f"ask the plug-in through a hook or a declared field instead: {found}"


def _reads_own_field(call: ast.Call, own: set[tuple[str, str]]) -> bool:
    """Whether ``call`` is ``getattr(object, variable.name)`` inside a loop over
    ``fields(object)`` (:func:`_own_fields`)."""
    if len(call.args) != 2 or not isinstance(call.args[1], ast.Attribute):
        return False
    name = call.args[1]
    return (
        name.attr == "name"
        and isinstance(name.value, ast.Name)
        and (name.value.id, ast.unparse(call.args[0])) in own
    )


def test_a_read_of_a_declared_field_is_told_from_a_field_asked_by_name() -> None:
    read = ast.parse("{e.name: getattr(config, e.name) for e in fields(config)}")
    asked = ast.parse("getattr(config, 'epochs', None)")
    calls = [n for t in (read, asked) for n in ast.walk(t) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "getattr"]  # fmt: skip
    assert _reads_own_field(calls[0], _own_fields(read))
    assert not _reads_own_field(calls[1], _own_fields(asked))


def test_the_plugins_that_say_so_declare_where_target_and_helper_run() -> None:
    from panoramia.pipeline.graph import DeviceSection

    wanted = set(typing.get_type_hints(DeviceSection))
    for name, entry in MODALITIES.items():
        if not entry.pipeline_class().device_sections:
            continue
        hints = typing.get_type_hints(entry.job_schema())
        for section in ("target", "helper"):
            fields = {field.name for field in dataclasses.fields(hints[section])}
            assert wanted <= fields, f"{name}.{section} lacks {sorted(wanted - fields)}"
