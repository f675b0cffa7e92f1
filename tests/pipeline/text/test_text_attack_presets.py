"""The text_attack presets compose into the settings they name
(``panoramia/modalities/text/conf/text_attack/``)."""

from __future__ import annotations

import pytest

from tests.cli_support import run_command


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        ("paper", ["attack_side: target\n", "baseline_side: stand_in\n", "features: sequence",
                   "blind: false"]),
        ("calibrated", ["attack_side: target+helper+reference_models",
                        "baseline_side: stand_in+helper+reference_models", "features: calibrated",
                        "blind: true"]),
    ],
)  # fmt: skip
def test_a_text_attack_preset_sets_both_sides_alike(preset: str, expected: list[str]) -> None:
    done = run_command(["--config-name", "text", f"text_attack={preset}", "--cfg", "job"])
    assert done.returncode == 0, done.stderr
    for line in expected:
        assert line in done.stdout, line


def test_a_setting_given_beside_the_preset_wins() -> None:
    done = run_command(
        ["--config-name", "text", "text_attack=calibrated", "distinguisher.blind=false", "--cfg",
         "job"]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "blind: false" in done.stdout
    assert "features: calibrated" in done.stdout
