"""The report's reading side (``panoramia.report.reading.parse_report``): every schema version
the service still reads parses into the same typed sections, an older document's missing
sections read as absent, its verdict is read anew from its own figures where it has none, and
nothing written is lost."""

from __future__ import annotations

import copy

import pytest

from panoramia.errors import InputError
from panoramia.report import SCHEMA_VERSIONS
from panoramia.report.reading import parse_report
from panoramia.report.verdict import verdict
from tests.service_support import report_document_for_test

ADDED = {"1.1": ("verdict",), "1.2": ("detectable",), "1.3": ("gdp",), "1.4": ("null",),
         "1.5": ("attacker", "exposure")}  # fmt: skip
"""Top-level sections each schema version added (the later ones add keys inside sections)."""


def _as_written_by(version: str) -> dict:
    """The test document as schema ``version`` wrote it: without the sections added later."""
    document = copy.deepcopy(report_document_for_test(0, shift=2.0))
    document["schema_version"] = version
    document["verdict"] = verdict(document)  # as the writer adds it
    for added, keys in ADDED.items():
        if SCHEMA_VERSIONS.index(added) > SCHEMA_VERSIONS.index(version):
            for key in keys:
                document.pop(key, None)
    return document


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_every_schema_version_reads_into_the_same_figures(version: str) -> None:
    document = _as_written_by(version)
    report = parse_report(document)
    assert report.schema_version == version
    assert (report.c_lb, report.eps_tilde, report.seed) == (
        document["c_lb"], document["eps_tilde"], document["seed"],
    )  # fmt: skip
    assert report.verdict.level is not None
    assert report.verdict.quote.value == pytest.approx(verdict(document)["quote"]["value"])
    if version == "1.0":  # no verdict written: read anew from its own figures
        assert report.verdict.level == verdict(document)["level"]
    else:
        assert report.verdict.level == document["verdict"]["level"]
    if "gdp" not in document:
        assert report.gdp.mu_tilde is None


def test_a_verdict_written_without_detected_reads_it_from_its_level() -> None:
    document = _as_written_by("1.2")
    written = document["verdict"]
    written.pop("detected", None)
    assert parse_report(document).verdict.detected == (
        written["level"] in ("leak_detected", "clear_leak")
    )


def test_a_sections_keys_the_reader_does_not_name_are_kept() -> None:
    document = _as_written_by(SCHEMA_VERSIONS[-1])
    document["reference_audits"] = {
        "rmia": {"eps_lb": 1.2, "p_value": 0.001, "tpr_at_fpr": {"0.001": None, "0.01": 0.31},
                 "offline_a": 0.3},
        "o1": None,
    }  # fmt: skip
    rmia = parse_report(document).reference_audits.rmia
    assert rmia is not None
    assert rmia.tpr_at_fpr == {"0.001": None, "0.01": 0.31}
    assert rmia.model_extra == {"offline_a": 0.3}
    assert parse_report(document).reference_audits.o1 is None


@pytest.mark.parametrize(
    ("change", "message"),
    [({"eps_tilde": "a lot"}, r"^report: eps_tilde: Input should be a valid number"),
     ({"two_sided": {"eps_tilde": [1]}}, r"^report: two_sided\.eps_tilde: "),
     ({"seed": None}, r"^report: seed: ")],
)  # fmt: skip
def test_a_field_that_does_not_hold_is_named_in_one_line(change: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_report(_as_written_by(SCHEMA_VERSIONS[-1]) | change)


def test_a_null_reads_as_its_default_as_the_readers_before_took_it() -> None:
    document = _as_written_by(SCHEMA_VERSIONS[-1]) | {
        "claim": {"violation": None}, "unreliable": True,
        "two_sided": {"eps_tilde": 0.2, "unreliable": None},
    }  # fmt: skip
    document["verdict"] = document["verdict"] | {"caveats": None, "headline": None}
    report = parse_report(document)
    assert report.claim.violation is False
    assert report.unreliable is True
    assert report.two_sided.unreliable is False
    assert (report.verdict.caveats, report.verdict.headline) == ([], "")
