"""A stored report's page is rendered from its document and its charts (the page's parts),
never edited: the worker heads it with the model's name as the contributor gave it and puts
her file names in its words; taking her records out replaces the parts that showed them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from panoramia.report.html import render_page
from panoramia.report.page_head import page_heading, page_title
from panoramia.report.page_parts import ChartPart, PageParts, RemovedChart, parts_without_records
from panoramia.report.redaction import document_without_records, without_member_data
from panoramia.service.worker.record import ContributorView, model_heading
from panoramia.store.repository import ReportContent

STAGED = "/srv/panoramia/audits/a1/inputs/members.csv"


@pytest.fixture(scope="module")
def drawn() -> tuple[dict, PageParts]:
    """A document with exposed records and text examples, and its charts with an image
    gallery (records), as an audit run writes them (``report.json``, ``page_parts.json``)."""
    from panoramia.measure import measure
    from panoramia.report.attacker import attacker_section
    from panoramia.report.charts import page_parts
    from panoramia.report.document import report_document
    from panoramia.report.exposure import exposure_section
    from tests.conftest import simulated_scores

    rng = np.random.default_rng(0)
    membership, attack = simulated_scores(rng, 400, shift=1.0)
    baseline = np.clip(attack + rng.normal(0, 0.1, attack.size), 0, 1)
    result = measure(membership, baseline_scores=baseline, attack_scores=attack, seed=0)
    document = report_document(
        modality="image", measurement=result, o1=None, rmrn=None, seed=0, config={},
        timings={}, target={"name": "census-3"}, data={"members_path": STAGED},
        distinguishers={},
    )  # fmt: skip
    document["attacker"] = attacker_section(result, membership, attack, baseline)
    members = pd.DataFrame({"occupation": rng.choice(["a", "b"], membership.size),
                            "label": rng.integers(0, 3, membership.size),
                            "age": rng.integers(17, 90, membership.size)})  # fmt: skip
    document["exposure"] = exposure_section(
        members, ["label"], membership, attack, baseline_scores=baseline, draws=99
    )
    document["examples"] = {"members (audit set)": ["a secret chunk"],
                            "synthetic non-members (audit set)": ["made up"]}  # fmt: skip
    curves = {"baseline": (baseline, membership), "attack": (attack, membership)}
    losses = {"f (target)": {"members": rng.exponential(0.5, 200)}}
    galleries = {
        "members": rng.integers(0, 255, (8, 8, 8, 1), dtype=np.uint8),
        "generated": rng.integers(0, 255, (8, 8, 8, 1), dtype=np.uint8),
    }
    parts = page_parts(document, result, curves, losses, galleries)
    stored = json.loads(json.dumps(document))  # as the run writes and the store keeps it
    return stored, PageParts.model_validate_json(parts.model_dump_json())


def test_the_page_is_a_function_of_the_document_and_its_parts(
    drawn: tuple[dict, PageParts],
) -> None:
    document, parts = drawn
    page = render_page(document, parts)
    assert [c.member_data for c in parts.charts if isinstance(c, ChartPart)][-2:] == [True] * 2
    for chart in parts.charts:
        assert isinstance(chart, ChartPart)
        assert chart.png in page
    assert page_title("census-3") in page
    assert page_heading("census-3") in page
    assert "a secret chunk" in page
    assert page == render_page(json.loads(json.dumps(document)), parts)


def test_the_page_does_not_depend_on_the_order_a_store_keeps_keys_in(
    drawn: tuple[dict, PageParts],
) -> None:
    """PostgreSQL's JSONB gives a document's keys back shortest first: the page read from it
    is the page the run rendered (the records' columns in the audit's order)."""
    document, parts = drawn

    def jsonb(node: object) -> object:
        if isinstance(node, dict):
            order = sorted(node, key=lambda key: (len(key.encode()), key.encode()))
            return {key: jsonb(node[key]) for key in order}
        return [jsonb(child) for child in node] if isinstance(node, list) else node

    assert render_page(jsonb(document), parts) == render_page(document, parts)  # type: ignore[arg-type]


def test_no_value_of_the_document_reaches_the_page_as_markup(
    drawn: tuple[dict, PageParts],
) -> None:
    """The service draws pages from documents that audit children and uploaders wrote: each
    value of the document (its verdict's words included; lists' first entries) replaced by
    markup either stops the page being drawn (the document is refused) or shows escaped."""
    from panoramia.report.digest import with_own_verdict

    document, parts = drawn
    document = with_own_verdict(document)
    mark = "<b>markup</b>"

    def leaves(node: object, path: tuple = ()) -> list[tuple]:
        if isinstance(node, dict):
            return [leaf for key, child in node.items() for leaf in leaves(child, (*path, key))]
        if isinstance(node, list):
            return [leaf for i, child in enumerate(node[:3]) for leaf in leaves(child, (*path, i))]
        return [path]

    drawn_with_mark, raw = 0, []
    for path in leaves(document):
        changed = json.loads(json.dumps(document))
        node = changed
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = mark
        try:
            page = render_page(changed, parts)
        except Exception:  # refused at the door (undrawable) and by the worker
            continue
        drawn_with_mark += 1
        if mark in page:
            raw.append(path)
    assert drawn_with_mark > 200
    assert raw == []


def test_taking_her_records_out_leaves_a_note_where_they_were_and_drops_their_images(
    drawn: tuple[dict, PageParts],
) -> None:
    """The page rendered from the redacted document and parts is the page the stored-page
    edit made of the whole one (the same notes in the same places), and the redacted parts
    no longer hold the images of records."""
    document, parts = drawn
    note = "Removed: <her data was deleted>"
    gone = parts_without_records(parts, note)
    member_pngs = [c.png for c in parts.charts if isinstance(c, ChartPart) and c.member_data]
    assert member_pngs
    assert not any(png in gone.model_dump_json() for png in member_pngs)
    assert sum(isinstance(c, RemovedChart) for c in gone.charts) == len(member_pngs)
    page = render_page(document_without_records(document, note), gone)
    assert page == without_member_data(render_page(document, parts), note)
    assert "a secret chunk" not in page
    assert page.count("Removed: &lt;her data was deleted&gt;") == 3  # records, charts, examples


def test_the_worker_heads_her_page_and_puts_her_file_names_in_its_words(
    drawn: tuple[dict, PageParts], tmp_path: Path
) -> None:
    document, parts = drawn
    named = parts.model_copy(
        update={"charts": [*parts.charts[:1], ChartPart(png="AAAA", alt=f"rows of {STAGED}")]}
    )
    view = ContributorView({STAGED: "census <2024>.csv"}, tmp_path / "a1", tmp_path)
    heading = model_heading({"name": "<script>x</script>", "version": "3"})
    stored = view.report(ReportContent(document=document, parts=named), "a1", heading)
    assert stored.html is None
    assert stored.parts is not None
    assert stored.document["data"]["members_path"] == "census <2024>.csv"
    assert stored.parts.charts[-1] == ChartPart(png="AAAA", alt="rows of census <2024>.csv")
    page = render_page(stored.document, stored.parts)
    assert "<script>" not in page
    assert "<h1>Privacy audit of &lt;script&gt;x&lt;/script&gt; version 3</h1>" in page
    assert "<title>PANORAMIA audit — &lt;script&gt;x&lt;/script&gt; version 3</title>" in page
    assert "census &lt;2024&gt;.csv" in page
    assert STAGED not in page
    assert stored.artifact_location == "audits/a1"
    # her names can be longer than the copies' paths: the parts stay within their bounds
    long = parts.model_copy(update={"charts": [ChartPart(png="AAAA", alt=STAGED * 60)]})
    view = ContributorView({STAGED: "x" * 400}, tmp_path / "a1", tmp_path)
    kept = view.report(ReportContent(document=document, parts=long), "a1", None).parts
    assert kept is not None
    assert PageParts.model_validate_json(kept.model_dump_json()) == kept
    assert len(kept.charts[0].alt) == 4000  # type: ignore[union-attr]


def test_a_page_is_headed_by_her_name_and_version_or_the_runs() -> None:
    assert model_heading({"name": "census", "version": "3"}) == "census version 3"
    assert model_heading({"name": "census", "version": ""}) == "census"
    assert model_heading({"name": ""}) is None
    assert model_heading(None) is None
    parts = PageParts(charts=[])
    document = {"target": {"name": "census-3"}}
    assert parts.heading is None
    assert page_heading("census-3") in render_page(document | _minimal(), parts)


def _minimal() -> dict:
    """The sections a page needs besides the target, from a real document."""
    from panoramia.measure import measure
    from panoramia.report.document import report_document
    from tests.conftest import simulated_scores

    rng = np.random.default_rng(1)
    membership, attack = simulated_scores(rng, 200, shift=0.5)
    result = measure(membership, baseline_scores=attack, attack_scores=attack, seed=0)
    document = report_document(
        modality="tabular", measurement=result, o1=None, rmrn=None, seed=0, config={},
        timings={}, target={"name": "ignored"}, data={}, distinguishers={},
    )  # fmt: skip
    document.pop("target")
    return document


def test_parts_refuse_what_is_not_a_chart() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        PageParts.model_validate({"charts": [{"png": "<script>", "alt": "x"}]})
    with pytest.raises(ValidationError):
        PageParts.model_validate({"charts": [], "html": "<p>a page</p>"})
    with pytest.raises(ValidationError):
        PageParts.model_validate({"charts": [], "version": 2})


def test_the_worker_refuses_page_parts_a_child_planted_in_one_line(tmp_path: Path) -> None:
    """A confined child may leave ``page_parts.json`` as a link to another contributor's file,
    a hard link, a FIFO (a read that would stall) or a file past the bound: the unconfined
    worker reads none of them and the audit fails with one line naming the file."""
    from panoramia.report.page_parts import MAX_PAGE_PARTS_BYTES, PAGE_PARTS_FILE
    from panoramia.service.worker.record import finished_report
    from tests.service_support import report_document_for_test

    secret = tmp_path / "bob" / "members.csv"
    secret.parent.mkdir()
    secret.write_text("bob's rows\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps(report_document_for_test()))
    parts = run_dir / PAGE_PARTS_FILE
    planted = {
        "link": lambda: parts.symlink_to(secret),
        "hard link": lambda: os.link(secret, parts),
        "fifo": lambda: os.mkfifo(parts),
        "too large": lambda: os.truncate(parts.open("w").name, MAX_PAGE_PARTS_BYTES + 1),
    }
    for kind, plant in planted.items():
        parts.unlink(missing_ok=True)
        plant()
        line = finished_report(0, run_dir, run_dir / "attempt-1.log")
        assert isinstance(line, str), kind
        assert line.startswith(f"{PAGE_PARTS_FILE}: "), (kind, line)
        assert "\n" not in line
        assert line.count(PAGE_PARTS_FILE) == 1  # named once, and not by the server's path
    assert secret.read_text() == "bob's rows\n"
    parts.unlink()
    parts.write_text(PageParts(charts=[]).model_dump_json())
    assert not isinstance(finished_report(0, run_dir, run_dir / "attempt-1.log"), str)
