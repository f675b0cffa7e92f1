"""The worker heads a stored report's page with the model's name as the contributor gave it,
by swapping the title and heading the renderer made of the run's ``target.name`` (no pattern
search of the page)."""

from __future__ import annotations

from panoramia.report.page_head import page_heading, page_title
from panoramia.service.worker.record import titled
from panoramia.store.repository import ReportContent


def _content(run_name: str, body: str = "") -> ReportContent:
    page = f"<html><head>{page_title(run_name)}</head><body>{page_heading(run_name)}{body}</body>"
    return ReportContent(document={"target": {"name": run_name}}, html=page)


def test_the_title_and_heading_name_her_model_and_version() -> None:
    shown = titled(_content("census-3"), "census", "3")
    assert shown.html is not None
    assert "<title>PANORAMIA audit — census version 3</title>" in shown.html
    assert "<h1>Privacy audit of census version 3</h1>" in shown.html
    assert "census-3" not in shown.html
    assert shown.document == {"target": {"name": "census-3"}}


def test_her_name_is_escaped_and_the_rest_of_the_page_is_kept() -> None:
    body = "<p>Privacy audit of census-3 appears in the text too</p>"
    shown = titled(_content("census-3", body), "<script>x</script>", "")
    assert shown.html is not None
    assert "<script>" not in shown.html
    assert "<h1>Privacy audit of &lt;script&gt;x&lt;/script&gt;</h1>" in shown.html
    assert body in shown.html  # only the title and the heading change


def test_a_page_without_them_or_no_name_is_kept_as_it_is() -> None:
    plain = ReportContent(document={"target": {"name": "m"}}, html="<p>no head</p>")
    assert titled(plain, "census", "3").html == "<p>no head</p>"
    content = _content("census-3")
    assert titled(content, "", "3") is content
