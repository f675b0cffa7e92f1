"""Taking a contributor's records out of a stored report when the data they came from goes.

A report page marks the parts that show records (the exposure table, example images and
texts: members, or samples of a generator trained on them) with :func:`member_data`;
:func:`without_member_data` replaces them. A document loses its ``exposure`` section
(:func:`document_without_records`). Figures, verdict and loss charts stay.
"""

from __future__ import annotations

import html
import re

from panoramia.measure.jsonable import JSONDict

MEMBER_DATA = re.compile(r"<!--member-data-->.*?<!--/member-data-->", re.S)
"""A page's parts that show records (escaped text never holds ``<!--``)."""


def member_data(part: str, holds: bool = True) -> str:
    """``part`` marked as showing records (nothing to mark when ``part`` is empty)."""
    return f"<!--member-data-->{part}<!--/member-data-->" if holds and part else part


def without_member_data(page: str, note: str) -> str:
    """``page`` with every part marked by :func:`member_data` replaced by ``note`` (once for
    a run of adjacent parts)."""
    note_html = f"<p class=removed>{html.escape(note)}</p>"
    replaced = MEMBER_DATA.sub(note_html, page)
    while note_html + note_html in replaced:
        replaced = replaced.replace(note_html + note_html, note_html)
    return replaced


RECORD_SECTIONS = ("exposure", "examples")
"""A report document's sections that hold records: the exposed records and groups, and a
text audit's example chunks (members and generated)."""


def document_without_records(document: JSONDict, note: str) -> JSONDict:
    """``document`` with each of :data:`RECORD_SECTIONS` it has replaced by
    ``{"removed": note}``."""
    return {
        key: ({"removed": note} if key in RECORD_SECTIONS else value)
        for key, value in document.items()
    }
