"""The verdict rule (docs/SPEC.md §3.1) on report documents: the level, the figure quoted,
the caveats; a schema-1.0 document gets its verdict from its own figures."""

from __future__ import annotations

import pytest

from panoramia.report.html import _verdict_html
from panoramia.report.verdict import TOLERANCE, verdict
from tests.service_support import report_document_for_test


def _document(one: tuple[float, float], two: tuple[float, float] | None = None, **more) -> dict:
    """A real report document with the games' (c_lb, {c+ε}_lb) set to ``one`` / ``two``."""
    document = report_document_for_test()
    document["c_lb"], document["c_plus_eps_lb"] = one
    document["eps_tilde"] = max(0.0, one[1] - one[0])
    if two is not None:
        document["two_sided"] = {
            "c_lb": two[0], "c_plus_eps_lb": two[1], "eps_tilde": max(0.0, two[1] - two[0]),
            "saturated": False, "unreliable": two[0] == 0,
        }  # fmt: skip
    return document | more


@pytest.mark.parametrize(
    ("one", "two", "level", "quoted"),
    [
        ((1.0, 1.05), (0.8, 0.85), "no_leak_detected", 0.05),
        ((1.0, 1.05), (0.8, 1.5), "leak_detected", 0.7),  # the two-sided game sees it
        ((1.0, 1.4), None, "leak_detected", 0.4),  # a game not played counts for nothing
        ((1.0, 0.99 + TOLERANCE), None, "no_leak_detected", TOLERANCE - 0.01),
        ((0.0, 0.9), (0.0, 1.2), "inconclusive", 1.2),  # no baseline measured the generator
        ((0.0, 0.9), (0.5, 0.55), "no_leak_detected", 0.05),  # only reliable games are quoted
    ],
)
def test_the_level_and_the_quoted_figure(one, two, level: str, quoted: float) -> None:  # type: ignore[no-untyped-def]
    found = verdict(_document(one, two))
    assert found["level"] == level
    assert found["quote"]["value"] == pytest.approx(quoted)
    assert found["sentence"].endswith(".")
    if level == "no_leak_detected":
        assert "does not show the model is private" in found["sentence"]
    if one[0] == 0:
        assert any("c_lb is 0" in caveat for caveat in found["caveats"])


def test_a_violated_claim_comes_first_and_the_claim_is_in_words() -> None:
    claim = {
        "violation": True,
        "banner": "The measured points contradict (ε = 1, δ = 1e-5).",
        "statements": ["The owner declares (ε = 1, δ = 1e-5)-DP."],
        "inconclusive": [],
    }
    found = verdict(_document((1.0, 1.02), claim=claim))
    assert found["level"] == "leak_beyond_claim"
    assert "contradict" in found["sentence"]
    assert found["claim"] == ["The owner declares (ε = 1, δ = 1e-5)-DP."]


def test_caveats_of_the_run_and_what_the_figures_mean() -> None:
    document = _document((2.0, 2.5), saturated=True)
    document["data"] = {"synthetic": {"real_vs_synthetic_auc": 0.9}}
    found = verdict(document)
    assert any("saturated" in caveat for caveat in found["caveats"])
    assert any("AUC 0.90" in caveat for caveat in found["caveats"])
    assert found["meaning"][0].startswith("ε̃ is not a lower bound on ε")
    assert any("O(1)" in line for line in found["meaning"])


def test_a_schema_1_0_document_gets_its_verdict_from_its_figures() -> None:
    document = _document((1.0, 2.0), schema_version="1.0")  # as stored before 1.1
    assert "verdict" not in document
    page = _verdict_html(document)
    assert "Leak detected" in page
    assert "ε̃ = 1.00" in page
    assert "<script" not in page


def test_a_leak_real_non_members_show_is_a_caveat_of_a_quiet_run() -> None:
    found = verdict(_document((1.0, 1.02), reference_audits={"o1": {"eps_lb": 0.15}}))
    assert found["level"] == "no_leak_detected"
    assert any("O(1) audit reads ε_lb = 0.15" in caveat for caveat in found["caveats"])
    quiet = verdict(_document((1.0, 1.02), reference_audits={"o1": {"eps_lb": 0.05}}))
    assert not any("O(1)" in caveat for caveat in quiet["caveats"])


def test_a_quiet_run_says_how_much_its_size_could_show() -> None:
    document = _document((1.0, 1.02))
    assert document["detectable"]["members"] > 0  # schema 1.2
    found = verdict(document)
    reach = [caveat for caveat in found["caveats"] if caveat.startswith("At this size")]
    assert len(reach) == 1
    expected = document["detectable"]["eps_tilde_max"]
    assert f"cannot show ε̃ above {expected:.2f}" in reach[0]
    loud = verdict(_document((1.0, 1.6)))
    assert not any(caveat.startswith("At this size") for caveat in loud["caveats"])
    older = {k: v for k, v in _document((1.0, 1.02)).items() if k != "detectable"}
    assert not any(caveat.startswith("At this size") for caveat in verdict(older)["caveats"])


def test_the_reach_is_logit_of_alpha_to_the_one_over_r() -> None:
    import math

    document = report_document_for_test()
    reach, alpha = document["detectable"], document["alpha_per_test"]
    q = alpha ** (1 / reach["members"])
    assert reach["c_plus_eps_max"] == pytest.approx(math.log(q / (1 - q)))
    assert reach["eps_tilde_max"] == pytest.approx(
        max(0.0, reach["c_plus_eps_max"] - document["c_lb"])
    )
    assert reach["c_plus_eps_max_doubled"] > reach["c_plus_eps_max"]


@pytest.mark.parametrize(
    "reach", [{"members": "many"}, ["x"], {"eps_tilde_max": float("nan")}, None]
)
def test_a_malformed_reach_section_never_costs_the_verdict(reach: object) -> None:
    found = verdict(_document((1.0, 1.02), detectable=reach))
    assert found["level"] == "no_leak_detected"
    assert not any(caveat.startswith("At this size") for caveat in found["caveats"])
