"""docs/ARCHITECTURE.md's table of what lies inside ``panoramia/`` is checked against the code,
as the import contracts are: every module and sub-package is named in its package's row, and
every file the table names exists there."""

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
        for inner in sorted(entry.iterdir()):
            if inner.name.startswith("_") or inner.name in ("py.typed",):
                continue
            named = inner.name if inner.suffix == ".py" else f"{inner.name}/"
            if (inner.suffix == ".py" or (inner / "__init__.py").is_file()) and (
                f"`{named}`" not in row and f"`{named.rstrip('/')}" not in row
            ):
                missing.append(f"panoramia/{entry.name}/{named}")
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
