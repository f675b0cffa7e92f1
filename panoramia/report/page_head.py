"""The report page's title and heading, made of the audited model's name: the renderer
(:mod:`panoramia.report.html`) writes them, and the service, which names the model as the
contributor gave it, swaps the very strings these make (``service/worker/record.py``'s
``titled``) instead of searching the page. Light: no chart or numeric library."""

from __future__ import annotations

import html


def page_title(name: str) -> str:
    """The page's ``<title>`` for the audited model ``name`` (escaped here)."""
    return f"<title>PANORAMIA audit — {html.escape(name)}</title>"


def page_heading(name: str) -> str:
    """The page's ``<h1>`` for the audited model ``name`` (escaped here)."""
    return f"<h1>Privacy audit of {html.escape(name)}</h1>"
