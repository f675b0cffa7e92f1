"""The report's two-sided section (``panoramia.pipeline.reporting.two_sided_section``)."""

from __future__ import annotations

import numpy as np
import pytest

from panoramia.modalities.tabular.config import TabularJobConfig
from panoramia.pipeline.reporting import two_sided_section

LABELS = np.r_[np.ones(100), np.zeros(100)].astype(np.int8)
SCORES = np.r_[np.linspace(0.3, 1, 100), np.linspace(0, 0.7, 100)]


def _job(**audit: object) -> TabularJobConfig:
    job = TabularJobConfig()
    for name, value in audit.items():
        setattr(job.audit, name, value)
    return job


@pytest.mark.parametrize(
    ("audit", "reason"),
    [
        ({"thresholds": "all"}, "grid thresholds, not all"),
        ({"thresholds": "split:0.5"}, "grid thresholds, not split:0.5"),
        ({"thresholds": "grid:2000"}, "K <= 1000"),
        ({"delta": 1e-5}, "no relaxed"),
        ({"gamma": 0.01}, "no relaxed"),
    ],
)
def test_audits_without_a_two_sided_form_say_why(audit: dict, reason: str) -> None:
    section = two_sided_section(_job(**audit), LABELS, SCORES, SCORES, None)
    assert list(section) == ["skipped"]
    assert reason in section["skipped"]


def test_the_default_grid_measures_both_classifiers_and_rmrn() -> None:
    section = two_sided_section(_job(), LABELS, np.full(200, 0.5), SCORES, (SCORES, LABELS))
    assert section["c_lb"] == 0
    assert section["unreliable"] is True
    assert section["c_plus_eps_lb"] > 0
    assert section["rmrn"]["eps_lb"] > section["c_plus_eps_lb"]  # one test, not two
