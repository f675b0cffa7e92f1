"""Embedded text: CPython's own documentation, which ships with every Python interpreter.

* ``pydoc``: ``pydoc_data.topics.topics``, the plain-text help pages of the Python Language
  Reference: 79 topics (``assignment``, ``specialnames``, …), ~465,000 characters of English
  technical prose, one document per topic.
* ``python_docs`` (the demo's default): those topics plus the docstrings of the standard
  library's top-level modules (module, class and function docstrings of at least 8 words,
  one document per module), ~1.3 million characters. The topics alone give only ~1,200
  64-token chunks (at most 50 per document), too few for three disjoint pools (the target's
  members, the negative control's, real non-members) with an audit set of useful size.

* ``austen``: real prose, Jane Austen's six novels (public domain), one document per chapter
  (:func:`load_austen`).

The first two are © Python Software Foundation (PSF License Agreement), installed with the
interpreter itself, so the text audit's demo needs no download and no extra package. The
text is that of the running Python (the data stage hashes it into its key).

Public text for pre-training (never audited): the docstrings of installed packages
(:func:`package_modules`) (numpy, SciPy, scikit-learn, pandas: BSD licences), the
stand-in for the public web text GPT-2 was pre-trained on.
"""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

from panoramia.errors import InputError

MIN_DOCSTRING_WORDS = 8
DOCSTRING_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def load_pydoc_topics() -> list[str]:
    """The documentation topics as documents, one per topic, in sorted topic order."""
    from pydoc_data.topics import topics

    return [topics[name] for name in sorted(topics) if topics[name].strip()]


def module_docstrings(path: Path) -> str | None:
    """A module's docstrings (module, classes, functions; ≥ 8 words each), blank-line joined."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, DOCSTRING_NODES):
            text = ast.get_docstring(node)
            if text and len(text.split()) >= MIN_DOCSTRING_WORDS:
                parts.append(text)
    return "\n\n".join(parts) or None


def load_python_docs() -> list[str]:
    """The documentation topics, then one document per standard-library module (sorted)."""
    library = Path(sysconfig.get_paths()["stdlib"])
    modules = (module_docstrings(path) for path in sorted(library.glob("*.py")))
    return load_pydoc_topics() + [text for text in modules if text]


def package_modules(packages: list[str]) -> list[Path]:
    """The module files of the installed ``packages`` (test modules left out), sorted; their
    docstrings (:func:`module_docstrings`) are public text for pre-training."""
    import importlib.util

    paths = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"base.packages: {package!r} is not an installed package")
        root = Path(next(iter(spec.submodule_search_locations)))
        paths += [
            path for path in sorted(root.rglob("*.py"))
            if "tests" not in path.relative_to(root).parts
        ]  # fmt: skip
    return paths


def load_austen() -> list[str]:
    """Jane Austen's six novels, one document per chapter (269, ~717,000 words; sorted by
    novel, then chapter): ``panoramia/datasets/austen.jsonl.gz``, written from Debian's
    ``r-cran-janeaustenr`` by ``tools/extract_austen.py`` (public domain; PROVENANCE.md)."""
    import gzip
    import json
    from importlib.resources import files

    with gzip.open(str(files("panoramia.datasets") / "austen.jsonl.gz"), "rt") as lines:
        return [json.loads(line)["text"] for line in lines]


EMBEDDED_TEXT = {
    "python_docs": load_python_docs, "pydoc": load_pydoc_topics, "austen": load_austen,
}  # fmt: skip
"""``data.source`` values of the text audit that need no file."""
