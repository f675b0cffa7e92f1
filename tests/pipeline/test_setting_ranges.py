"""Every numeric setting of every config the job composes has a documented range."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from panoramia.errors import InputError
from panoramia.pipeline.registry import MODALITIES, compose_job, config_dir
from panoramia.ranges import CHOICES, RANGES, SKIPPED, _leaves, check_ranges, ranges_markdown

GROUPS = ("target", "generator", "helper", "distinguisher", "data", "audit", "run")


def _option_lists(primary: str) -> list[list[str]]:
    """The primary config alone, with each experiment, and with each option of each group."""
    root = config_dir()
    lists = [[f"--config-name={primary}"]]
    lists += [
        [f"--config-name={primary}", f"+experiment={path.stem}"]
        for path in sorted((root / "experiment").glob("*.yaml"))
    ]
    for group in GROUPS:
        lists += [
            [f"--config-name={primary}", f"{group}={path.stem}"]
            for path in sorted((root / group).glob("*.yaml"))
        ]
    return lists


def _unranged(config: dict) -> set[str]:
    return {
        key
        for key, name, value in _leaves(config)
        if not key.startswith(SKIPPED)
        and ".grid[" not in key  # xgboost's own parameters: the service's allow-list
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and name not in RANGES
    }


@pytest.mark.parametrize("primary", [m.primary_config for m in MODALITIES.values()])
def test_every_numeric_setting_of_every_composable_config_has_a_range(primary: str) -> None:
    composed, unranged = 0, set()
    for arguments in _option_lists(primary):
        try:
            config = compose_job(arguments)
        except InputError:  # another modality's option (image data under the tabular job)
            continue
        composed += 1
        container = OmegaConf.to_container(config, resolve=False)
        unranged |= _unranged(container)
        check_ranges(container)  # the shipped defaults lie in their own ranges
    assert composed >= 15, f"only {composed} configs composed for {primary}"
    assert not unranged, f"settings without a range in panoramia/ranges.py: {sorted(unranged)}"


def test_a_seed_outside_its_range_names_key_value_and_range() -> None:
    with pytest.raises(InputError, match=r"^seed: -1 is not an integer in \[0, 4294967295\]$"):
        check_ranges({"seed": -1})
    with pytest.raises(InputError, match=r"^generation_seed: 4294967296 is not an integer"):
        check_ranges({"generation_seed": 2**32})


def test_the_documented_table_is_the_checked_one() -> None:
    documented = (Path(__file__).parents[2] / "docs" / "RANGES.md").read_text()
    assert documented == ranges_markdown(), "run: python -m panoramia.ranges > docs/RANGES.md"


@pytest.mark.parametrize(
    ("key", "value"),
    [("generator.synthesizer", "nope"), ("audit.attack_side", "evil"),
     ("audit.baseline_side", "bogus+x"), ("target.members", "everyone"),
     ("audit.stand_in.recipe", "mine"), ("audit.stand_in.training_data", "/etc")],
)  # fmt: skip
def test_a_choice_outside_its_list_names_key_value_and_choices(key: str, value: str) -> None:
    config: dict = {}
    node = config
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    with pytest.raises(InputError, match=rf"^{key}: '{re.escape(value)}' is not one of "):
        check_ranges(config)
    for allowed in CHOICES[key]:
        node[parts[-1]] = allowed
        check_ranges(config)
    node[parts[-1]] = "${oc.env:X}"  # the service never resolves: checked once resolved
    check_ranges(config)


def test_the_choices_are_the_ones_the_code_takes() -> None:
    from generators.tabular import SYNTHESIZERS
    from panoramia.pipeline.tabular.config import TabularTargetConfig

    assert CHOICES["generator.synthesizer"] == SYNTHESIZERS
    assert set(TabularTargetConfig.TRAINED_KINDS) <= set(CHOICES["target.kind"])
    assert set(TabularTargetConfig.CONTROL_MEMBERS) <= set(CHOICES["target.members"])
