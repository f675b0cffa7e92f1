"""What a report page holds besides its document: the charts, drawn once by the audit run.

A page is a pure function of ``report.json`` and these parts
(:func:`panoramia.report.html.render_page`): the run writes both (``page_parts.json`` beside
``report.json``), the service stores both and renders a contributor's page from them (her
model's name, her file names, her records taken out) instead of editing a finished page.
Light: pydantic only, no chart or numeric library, so the service can read them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

PAGE_PARTS_FILE = "page_parts.json"
"""The parts' file in a run directory, beside ``report.json`` and ``report.html``."""
MAX_PAGE_PARTS_BYTES = 64 * 2**20
"""The largest ``page_parts.json`` the service reads (the demo's: ~0.4 MB, an image audit's
galleries ~1 MB)."""
MAX_ALT = 4000
"""The longest alt text a chart keeps (the demo's longest: ~400 characters)."""
MAX_CHARTS = 64
"""More charts than any audit draws (the demo draws 9; an image audit with galleries 12)."""

Base64 = Annotated[str, Field(max_length=MAX_PAGE_PARTS_BYTES, pattern=r"^[A-Za-z0-9+/]*={0,2}$")]


class ChartPart(BaseModel):
    """One chart: a PNG (base64), the alt text that says what it shows, and whether it shows
    records (members, or samples of a generator trained on them), which a page that lost
    her records leaves out."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    png: Base64
    alt: Annotated[str, Field(max_length=MAX_ALT)]
    member_data: bool = False


class RemovedChart(BaseModel):
    """Where a chart that showed her records was, once her records were taken out: why."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    removed: Annotated[str, Field(max_length=2000)]


def _kind(part: object) -> str:
    """A part's kind: ``removed`` (it names why), else ``chart``."""
    removed = isinstance(part, RemovedChart) or (isinstance(part, dict) and "removed" in part)
    return "removed" if removed else "chart"


PagePart = Annotated[
    Annotated[ChartPart, Tag("chart")] | Annotated[RemovedChart, Tag("removed")],
    Discriminator(_kind),
]
"""A chart, or where one that showed her records was (a part with ``removed``)."""


class PageParts(BaseModel):
    """A page's charts in the order the page shows them, and the name the page is headed by
    (None: the document's ``target.name``; the service sets the model's name and version as
    the contributor gave them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Literal[1] = 1
    charts: Annotated[list[PagePart], Field(max_length=MAX_CHARTS)]
    heading: Annotated[str, Field(max_length=400)] | None = None


def redacted_parts(stored: str, note: str) -> str:
    """Stored parts (JSON) without the charts that show records (:func:`parts_without_records`);
    parts that cannot be read lose every chart (her records go whatever else does)."""
    try:
        parts = PageParts.model_validate_json(stored)
    except ValueError:
        return PageParts(charts=[RemovedChart(removed=note)]).model_dump_json()
    return parts_without_records(parts, note).model_dump_json()


def parts_without_records(parts: PageParts, note: str) -> PageParts:
    """``parts`` with every chart that shows records replaced by ``note`` (the PNG gone)."""
    return parts.model_copy(
        update={
            "charts": [
                RemovedChart(removed=note)
                if isinstance(chart, ChartPart) and chart.member_data
                else chart
                for chart in parts.charts
            ]
        }
    )
