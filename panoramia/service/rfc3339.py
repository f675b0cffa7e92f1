"""Times in the API as RFC 3339 text, exactly what the OpenAPI formats ``date-time`` and
``date`` say: pydantic alone also reads a number (``0.5``, ``20260101``) as seconds since 1970,
which a client generated from the document would never send and a person never means."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import BeforeValidator, WithJsonSchema

DATE = r"\d{4}-\d{2}-\d{2}"
DATE_TIME = DATE + r"[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
"""RFC 3339's ``date-time``: a date, ``T``, a time with seconds, and an offset."""


def _text_of(pattern: str, what: str) -> BeforeValidator:
    """A validator passing a ``datetime`` or a text matching ``pattern`` on to pydantic's own
    parsing (which then checks the calendar); anything else is refused naming ``what``."""
    shape = re.compile(pattern)

    def check(value: object) -> object:
        if isinstance(value, datetime):
            return value
        if isinstance(value, str) and shape.fullmatch(value):
            return value
        raise ValueError(f"must be an RFC 3339 {what} (e.g. 2026-12-02T09:30:00Z)")

    return BeforeValidator(check)


DateTimeText = Annotated[
    datetime,
    _text_of(DATE_TIME, "date-time"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A time as RFC 3339 ``date-time`` text (with its offset)."""
DateOrDateTimeText = Annotated[
    datetime,
    _text_of(f"{DATE}|{DATE_TIME}", "date or date-time"),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]}
    ),
]
"""A day (its midnight) or a time, as RFC 3339 ``date`` or ``date-time`` text."""
