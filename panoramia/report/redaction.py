"""Taking a contributor's records out of a stored report when the data they came from goes.

A document loses its ``exposure`` and ``examples`` sections
(:func:`document_without_records`) and its page's parts the charts that show records
(:func:`panoramia.report.page_parts.parts_without_records`): the page drawn from the two says
where they were. A page stored as HTML before parts were marks the parts that show records
(the exposure table, example images and texts: members, or samples of a generator trained on
them) with :func:`member_data`; :func:`without_member_data` replaces them. Figures, verdict
and loss charts stay.
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


def removed_note(note: str) -> str:
    """The paragraph a page shows where a part that showed records was (``note``: why)."""
    return f"<p class=removed>{html.escape(note)}</p>"


def without_member_data(page: str, note: str) -> str:
    """``page`` with every part marked by :func:`member_data` replaced by ``note`` (once for
    a run of adjacent parts). For pages stored before their parts were
    (:mod:`panoramia.report.page_parts`); a page with parts is rendered again instead
    (:func:`panoramia.report.html.render_page` with ``removed``)."""
    note_html = removed_note(note)
    replaced = MEMBER_DATA.sub(note_html, page)
    while note_html + note_html in replaced:
        replaced = replaced.replace(note_html + note_html, note_html)
    return replaced


RECORD_SECTIONS = ("exposure", "examples")
"""A report document's sections that hold records: the exposed records and groups, and a
text audit's example chunks (members and generated)."""


def document_without_records(document: JSONDict, note: str) -> JSONDict:
    """``document`` with each of :data:`RECORD_SECTIONS` that holds something replaced by
    ``{"removed": note}`` (an empty one stays as it was: it held no record)."""
    return {
        key: ({"removed": note} if key in RECORD_SECTIONS and value else value)
        for key, value in document.items()
    }
