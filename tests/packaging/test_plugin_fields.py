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


def test_no_shared_module_asks_a_job_section_for_a_field_by_name() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "modalities" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and _root(node.args[0]) in SECTION_ROOTS
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    assert not found, f"ask the plug-in through a hook or a declared field instead: {found}"


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
