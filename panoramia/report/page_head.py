"""The report page's title and heading, made of the audited model's name (the run's
``target.name``, or the name and version the contributor gave, which the service keeps with
the page's parts, :class:`panoramia.report.page_parts.PageParts`). Light: no chart or
numeric library."""

from __future__ import annotations

import html


def shown_name(name: str, version: str) -> str:
    """A model as the contributor gave it, as the console names it: ``census version 3``
    (``census`` where she gave no version)."""
    return f"{name} version {version}" if version else name


def page_title(name: str) -> str:
    """The page's ``<title>`` for the audited model ``name`` (escaped here)."""
    return f"<title>PANORAMIA audit — {html.escape(name)}</title>"


def page_heading(name: str) -> str:
    """The page's ``<h1>`` for the audited model ``name`` (escaped here)."""
    return f"<h1>Privacy audit of {html.escape(name)}</h1>"
