"""docs/ARCHITECTURE.md's table of what lies inside ``panoramia/`` is checked against the code,
as the import contracts are: every module and sub-package, at every depth, is named in its
top-level package's row, every file the table names exists there, and every dotted name a
docstring cites exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "panoramia"


def _rows() -> dict[str, str]:
    """The table under "Inside `panoramia/`": its first cell → the whole row's text."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("### Inside `panoramia/`", 1)[1].split("\n\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 3 and "`" in cells[1]:
            rows[cells[1].strip()] = line
    return rows


def _row_of(name: str, rows: dict[str, str]) -> str | None:
    return next((line for first, line in rows.items() if f"`{name}`" in first), None)


def test_every_module_and_package_of_panoramia_is_on_the_architecture_page() -> None:
    rows = _rows()
    missing = []
    for entry in sorted(PACKAGE.iterdir()):
        if entry.name.startswith(("_", ".")) or entry.name == "py.typed":
            continue
        if entry.is_file() and entry.suffix == ".py":
            if _row_of(entry.name, rows) is None:
                missing.append(f"panoramia/{entry.name}")
            continue
        if not (entry / "__init__.py").is_file():
            continue
        row = _row_of(f"{entry.name}/", rows)
        if row is None:
            missing.append(f"panoramia/{entry.name}/")
            continue
        for inner in sorted(entry.rglob("*")):
            relative = inner.relative_to(entry)
            if any(part.startswith("_") for part in relative.parts) or relative.parts[:2] == (
                "migrations",
                "versions",
            ):  # alembic's revisions are named by their folder
                continue
            named = inner.name if inner.suffix == ".py" else f"{inner.name}/"
            if (inner.suffix == ".py" or (inner / "__init__.py").is_file()) and not any(
                (f"{form}`" in row and f"`{form}" in row) or f"/{named}`" in row
                for form in (named, named.rstrip("/"))
            ):
                missing.append(f"panoramia/{entry.name}/{relative}")
    assert not missing, f"not on docs/ARCHITECTURE.md's table: {missing}"


def test_every_file_the_architecture_page_names_exists() -> None:
    absent = []
    for first, line in _rows().items():
        packages = re.findall(r"`(\w+)/`", first)
        where = [PACKAGE / name for name in packages] or [PACKAGE]
        for named in re.findall(r"`([\w/]+\.py)`", line):
            if not any(list(folder.rglob(Path(named).name)) for folder in where):
                absent.append(f"{first}: {named}")
    assert not absent, f"named on docs/ARCHITECTURE.md but not in the code: {absent}"


def _defined_names(module: Path) -> set[str]:
    """The names a module defines or imports at any depth (classes, functions, assignments)."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _module_file(parts: list[str]) -> Path | None:
    path = ROOT.joinpath(*parts)
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def test_every_dotted_name_a_docstring_cites_exists() -> None:
    """A ``panoramia.…`` name in backticks (``:mod:``, ``:func:``, ``` `` ```) names a module
    that exists and, after it, a name that module defines: a moved or renamed module cannot
    leave its old name behind in the prose."""
    cited = re.compile(r"(?<=[`~])panoramia(?:\.\w+)+")
    stale = []
    for source in sorted(PACKAGE.rglob("*.py")):
        for match in cited.finditer(source.read_text()):
            parts = match.group(0).split(".")
            depth = next((k for k in range(len(parts), 0, -1) if _module_file(parts[:k])), 0)
            module = _module_file(parts[:depth]) if depth else None
            rest = parts[depth:]
            if module is None or (rest and rest[0] not in _defined_names(module)):
                stale.append(f"{source.relative_to(ROOT)}: {match.group(0)}")
    assert not stale, f"docstrings cite names that do not exist: {stale}"
