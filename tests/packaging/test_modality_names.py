"""Outside ``panoramia/modalities/``, no module compares against a modality's name or keys a
table by it: the service, the CLI, the job, the report and the settings ask the plug-in
(:mod:`panoramia.plugins`, the registry, is the one module that names the shipped ones)."""

from __future__ import annotations

import ast
from pathlib import Path

from panoramia.plugins import BUILT_IN

PACKAGE = Path(__file__).resolve().parents[2] / "panoramia"
REGISTRY = PACKAGE / "plugins.py"


def _named(node: ast.AST | None) -> list[ast.Constant]:
    """The modality names among ``node`` and, for a tuple, list or set, its elements."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [found for element in node.elts for found in _named(element)]
    if isinstance(node, ast.Constant) and node.value in BUILT_IN:
        return [node]
    return []


def _uses(tree: ast.AST) -> list[ast.Constant]:
    """The names used as a modality: compared against, a table's key or index, or the value
    given to a ``modality`` (a variable, an attribute, a keyword or a dict's field)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += _named(side)
        elif isinstance(node, ast.Dict):
            found += [c for key in node.keys for c in _named(key)]
            found += [
                c
                for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Constant) and key.value == "modality"
                for c in _named(value)
            ]
        elif isinstance(node, ast.Subscript):
            found += _named(node.slice)
        elif isinstance(node, ast.keyword) and node.arg == "modality":
            found += _named(node.value)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", getattr(t, "attr", None)) == "modality" for t in targets):
                found += _named(node.value)
    return found


def test_no_module_outside_the_plug_ins_uses_a_modality_name() -> None:
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "modalities" in path.relative_to(PACKAGE).parts or path == REGISTRY:
            continue
        for constant in _uses(ast.parse(path.read_text())):
            offending.append(
                f"{path.relative_to(PACKAGE.parent)}:{constant.lineno} {constant.value!r}"
            )
    assert not offending, offending


def test_the_check_finds_a_comparison_and_a_table() -> None:
    code = 'if modality == "text": pass\nWORDS = {"image": 1}\nx = SOURCES["tabular"]\n'
    assert [c.value for c in _uses(ast.parse(code))] == ["text", "image", "tabular"]


def test_no_page_template_compares_a_modality_name() -> None:
    import re

    pattern = re.compile(r"(==|!=)\s*[\"'](" + "|".join(BUILT_IN) + r")[\"']")
    templates = sorted(PACKAGE.rglob("templates/*.html"))
    assert templates
    offending = [str(t) for t in templates if pattern.search(t.read_text())]
    assert not offending, offending


def test_the_registry_and_the_plug_ins_prices_load_no_deep_learning_stack() -> None:
    """The service reads every plug-in's declaration and cost estimate in its own process:
    that loads none of the libraries that train or open models."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from panoramia.plugins import MODALITIES\n"
        "from panoramia.service.submission.cost import estimate_cost\n"
        "assert all(estimate_cost({'modality': name}).total > 0 for name in MODALITIES)\n"
        "heavy = ('torch', 'lightning', 'transformers', 'sdv', 'sklearn', 'xgboost', 'peft',\n"
        "         'lightgbm', 'catboost')\n"
        "print(','.join(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_console_and_the_door_word_a_modality_as_its_plug_in_says() -> None:
    from panoramia.service.audit_submission import _noun
    from panoramia.service.console.pages import _shows_examples

    assert [_shows_examples(name) for name in ("tabular", "image", "text", "other")] == [
        False, True, True, False,
    ]  # fmt: skip
    assert [_noun(name) for name in ("tabular", "image", "other")] == ["a table", "images", "other"]


def test_a_plug_in_can_be_imported_first() -> None:
    """A plug-in's declaration imports the declaration's type, not the registry: importing it
    before anything else (a plug-in's own test, ``python -m``) loads it once, whole."""
    import subprocess
    import sys

    for name in BUILT_IN:
        code = (
            f"import panoramia.modalities.{name}.plugin as declared\n"
            "from panoramia.plugins import MODALITIES\n"
            f"assert MODALITIES[{name!r}] is declared.PLUGIN\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
