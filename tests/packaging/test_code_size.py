"""The house's size rules (docs/ARCHITECTURE.md): no function over 100 lines and no class over
300 in ``panoramia/``, counted from its ``def``/``class`` line to its last line, nested
functions (router factories' routes) each counted on their own too. Alembic's migrations, which
are history and never edited, are left out."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "panoramia"
LIMITS = {ast.FunctionDef: 100, ast.AsyncFunctionDef: 100, ast.ClassDef: 300}


def test_no_function_over_100_lines_and_no_class_over_300() -> None:
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            limit = LIMITS.get(type(node))
            if limit is None:
                continue
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                relative = path.relative_to(PACKAGE.parent)
                over.append(f"{relative}:{node.lineno} {node.name}: {length} lines > {limit}")
    assert not over, "split these:\n" + "\n".join(over)
