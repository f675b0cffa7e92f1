"""Every numeric setting of every config the job composes has a documented range, and every
setting is checked in one module (``panoramia.audit_settings``) by both doors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from panoramia.audit_settings import (
    CHOICE_TYPES,
    SKIPPED,
    all_choices,
    bounds_of,
    check_ranges,
    check_settings,
    choices_of,
    leaves,
    ranges_markdown,
    setting_key,
)
from panoramia.errors import InputError
from panoramia.pipeline.registry import compose_job, group_options
from panoramia.plugins import MODALITIES

CHOICES = all_choices()
"""Every choice setting's values, the shared ones and each plug-in's."""
GROUPS = ("target", "generator", "helper", "distinguisher", "data", "audit", "run")


def _option_lists(primary: str) -> list[list[str]]:
    """The primary config alone, with each experiment, and with each option of each group."""
    lists = [[f"--config-name={primary}"]]
    lists += [
        [f"--config-name={primary}", f"+experiment={name}"]
        for name in sorted(group_options("experiment"))
    ]
    for group in GROUPS:
        lists += [
            [f"--config-name={primary}", f"{group}={name}"] for name in sorted(group_options(group))
        ]
    return lists


def _unranged(config: dict) -> set[str]:
    """The numeric settings of ``config`` whose schema declares no range beside the field."""
    bounds = bounds_of(config["modality"])
    return {
        key
        for key, value in leaves(config, bounds)
        if not key.startswith(SKIPPED)
        and ".grid[" not in key  # xgboost's own parameters: the service's allow-list
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and not any(bound.allowed for bound in bounds.get(setting_key(key), ()))
    }


@pytest.mark.parametrize("primary", [m.primary_config for m in MODALITIES.values()])
def test_every_shipped_config_has_its_ranges_and_keeps_the_rules(primary: str) -> None:
    """Composed once each (~0.3 s a composition): every numeric setting of every experiment
    and every option has a range and lies in it, and every rule holds, unresolved (the
    service) and resolved (the job), once the user gives what is hers to give (a model
    directory)."""
    composed, unranged = 0, set()
    for arguments in _option_lists(primary):
        try:
            config = compose_job([*arguments, "artifacts_dir=/tmp/unused"])
        except InputError:  # another modality's option (image data under the tabular job)
            continue
        if config.data.source not in (choices_of("data.source", config.modality) or ()):
            continue  # another modality's data, which check_settings refuses by name
        composed += 1
        container = OmegaConf.to_container(config, resolve=False)
        unranged |= _unranged(container)
        check_ranges(container)  # the shipped defaults lie in their own ranges
        if config.target.kind == "path":
            config.target.path = "/models/hers"
        check_settings(OmegaConf.to_container(config, resolve=False))
        check_settings(OmegaConf.to_container(config, resolve=True))
    assert composed >= 15, f"only {composed} configs composed for {primary}"
    assert not unranged, (
        f"settings without a range declared beside their field (ranged(…)): {sorted(unranged)}"
    )


def test_a_seed_outside_its_range_names_key_value_and_range() -> None:
    with pytest.raises(InputError, match=r"^seed: -1 is not an integer in \[0, 4294967295\]$"):
        check_ranges({"seed": -1})
    with pytest.raises(InputError, match=r"^generation_seed: 4294967296 is not an integer"):
        check_ranges({"generation_seed": 2**32})


def test_a_setting_is_bounded_by_its_own_declaration_not_by_a_name_it_shares() -> None:
    """Ranges are read by whole key from the modality's schema: ``generator.epochs`` of the
    tabular schema is bounded where it is declared; the same last name at a key the schema
    does not declare (a made-up section) inherits nothing; a list's bound holds its entries
    and their number."""
    with pytest.raises(InputError, match=r"^generator.epochs: 0 is not an integer in \[1, "):
        check_ranges({"modality": "tabular", "generator": {"epochs": 0}})
    check_ranges({"modality": "tabular", "made_up": {"epochs": 0}})
    with pytest.raises(InputError, match=r"^target.hidden\[1\]: 0 is not an integer in \[1, "):
        check_ranges({"modality": "tabular", "target": {"hidden": [8, 0]}})
    with pytest.raises(InputError, match=r"^target.hidden: 33 entries, at most 32$"):
        check_ranges({"modality": "tabular", "target": {"hidden": [8] * 33}})
    assert bounds_of("text")["distinguisher.hidden"][0].most is None  # an int there, not a list
    # a mapping handed to a library names the entries it bounds (sdv's batch_size, epochs)
    with pytest.raises(InputError, match=r"^generator.options.batch_size: 0 is not an integer"):
        check_ranges({"modality": "tabular", "generator": {"options": {"batch_size": 0}}})
    check_ranges({"modality": "tabular", "generator": {"options": {"pac": 0}}})


def _keys(primary_arguments: list[str]) -> set[str]:
    config = compose_job([*primary_arguments, "artifacts_dir=/tmp/unused"])
    return {key for key, _ in leaves(OmegaConf.to_container(config, resolve=False))}


def test_the_engine_holds_only_shared_choices_and_each_plugin_its_own() -> None:
    """A choice setting in ``panoramia.audit_settings`` is in every shipped modality's
    primary config; each plug-in's own (``Modality.choice_types``) is in its own config, and
    none is also a shared one (a plug-in narrows a shared one with ``choices``)."""
    keys = {name: _keys(entry.command_line()) for name, entry in MODALITIES.items()}
    for key in CHOICE_TYPES:
        held_by = sorted(name for name, found in keys.items() if key in found)
        assert held_by == sorted(MODALITIES), f"{key}: only {held_by}, so not a shared choice"
    for name, entry in MODALITIES.items():
        for key in entry.choice_types:
            assert key not in CHOICE_TYPES, key
            assert key in keys[name], f"{name}: {key} is not in its primary config"


def test_a_plugins_choice_and_rule_hold_only_in_its_own_audit() -> None:
    """A value checked by one plug-in's choice is not refused in another modality's config
    (whose schema has its own meaning for the key); a config that names no modality is held
    to every plug-in's."""
    assert choices_of("generator.model", "image") == ("dcgan", "ddpm")
    assert choices_of("generator.model", "tabular") is None
    assert choices_of("generator.model") == ("dcgan", "ddpm")
    check_ranges({"modality": "tabular", "generator": {"model": "anything"}})
    with pytest.raises(InputError, match=r"^generator.model: 'anything' is not dcgan or ddpm"):
        check_ranges({"modality": "image", "generator": {"model": "anything"}})
    bad_heads = {"target": {"kind": "train", "base_model": None, "n_embd": 10, "n_head": 3}}
    check_settings({"modality": "image", **bad_heads})
    with pytest.raises(InputError, match=r"^target.n_embd: 10 is not a multiple"):
        check_settings({"modality": "text", **bad_heads})


def test_the_documented_table_is_the_checked_one() -> None:
    documented = (Path(__file__).parents[2] / "docs" / "RANGES.md").read_text()
    assert documented == ranges_markdown(), (
        "run: python -m panoramia.audit_settings > docs/RANGES.md"
    )


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
    with pytest.raises(InputError, match=rf"^{key}: '{re.escape(value)}' is not "):
        check_ranges(config)
    for allowed in CHOICES[key]:
        node[parts[-1]] = allowed
        check_ranges(config)
    node[parts[-1]] = "${oc.env:X}"  # the service never resolves: checked once resolved
    check_ranges(config)


def test_the_choices_are_the_ones_the_code_takes() -> None:
    from panoramia.modalities.image.generator import MODELS
    from panoramia.modalities.image.helper import HELPER_DATA
    from panoramia.modalities.image.images import AUGMENTATIONS
    from panoramia.modalities.image.nets import ARCHITECTURES
    from panoramia.modalities.tabular.generator import SYNTHESIZERS

    assert CHOICES["generator.synthesizer"] == SYNTHESIZERS
    assert CHOICES["generator.model"] == MODELS
    assert CHOICES["helper.training_data"] == HELPER_DATA
    assert CHOICES["target.augment"] == CHOICES["helper.augment"] == AUGMENTATIONS
    assert CHOICES["target.arch"] == CHOICES["helper.arch"] == tuple(ARCHITECTURES)
    for entry in MODALITIES.values():  # each plug-in narrows choices to values they have
        for key, allowed in entry.choices.items():
            assert set(allowed) <= set(CHOICES[key]), key
    for key, allowed in CHOICES.items():  # plain strings, as the composed config holds
        assert all(type(value) is str for value in allowed), key
    from panoramia.modalities.image.datasets import EMBEDDED
    from panoramia.modalities.text.datasets import EMBEDDED_TEXT

    # data.source: declared once; the text plug-in's embedded loaders are the declared ones
    text, image = MODALITIES["text"], MODALITIES["image"]
    assert set(text.choices["data.source"]) == {*EMBEDDED_TEXT, *text.file_source_values}
    assert set(image.choices["data.source"]) == {*EMBEDDED, *image.file_source_values}
    for entry in MODALITIES.values():
        assert set(entry.file_source_values) <= set(entry.choices["data.source"]), entry.name


@pytest.mark.parametrize(
    ("modality", "key", "value", "message"),
    [("image", "target.members", "disjoint+generator_data",
      "target.members: 'disjoint+generator_data' is not same or disjoint"),
     ("text", "target.kind", "mlp", "target.kind: 'mlp' is not train or path"),
     ("tabular", "target.kind", "train", "target.kind: 'train' is not one of mlp, xgboost, path"),
     ("image", "target.arch", "foo", "target.arch: 'foo' is not cnn or resnet"),
     ("image", "helper.augment", "rotate", "helper.augment: 'rotate' is not one"),
     ("image", "target.optimizer", "lbfgs", "target.optimizer: 'lbfgs' is not adam or sgd"),
     ("text", "base.source", "web", "base.source: 'web' is not package_docs or none"),
     ("tabular", "data.source", "mnist", "data.source: 'mnist' is not adult or csv"),
     ("image", "data.source", "csv", "data.source: 'csv' is not one of mnist, digits, files")],
)  # fmt: skip
def test_a_modality_allows_its_own_choices(
    modality: str, key: str, value: str, message: str
) -> None:
    section, name = key.split(".")
    with pytest.raises(InputError, match=f"^{re.escape(message)}"):
        check_settings({"modality": modality, section: {name: value}})


def _composed(primary: str, *overrides: str) -> dict:
    return OmegaConf.to_container(
        compose_job([f"--config-name={primary}", *overrides]), resolve=False
    )


@pytest.mark.parametrize(
    ("primary", "overrides", "message"),
    [("config", ["target=path"], "target.path: a target directory is required"),
     ("config", ["data=csv", "target.members=disjoint"],
      "target.members=disjoint needs embedded data with a control pool, not data.source=csv"),
     ("config", ["target=xgboost", "target.dp_epsilon=1"],
      "target.dp_epsilon: DP-SGD trains mlp targets, not xgboost"),
     ("text", ["target.n_head=3"], "target.n_embd: 128 is not a multiple of target.n_head 3"),
     ("image", ["generator=ddpm", "generator.width=12"], "generator.width: 12 is not a multiple"),
     ("image", ["generator=ddpm", "generator.sampling_steps=2000"],
      "generator.sampling_steps: 2000 is not in [1, diffusion_steps=1000]"),
     ("config", ["data.split.audit=0.6"], "data.split: the fractions add up to more than 1"),
     ("config", ["audit.attack_side=target+helper+reference_models"],
      "audit.attack_side=target+helper+reference_models goes with audit.baseline_side=stand_in+"),
     ("config", ["audit.attack_side=target+helper+reference_models",
                 "audit.baseline_side=stand_in+helper+reference_models", "audit.ensemble=1"],
      "and audit.ensemble ≥ 2"),
     ("config", ["audit.null.draws=19", "audit.null.false_alarm_rate=0.01"],
      "audit.null.draws: 19 draws cannot reach a p-value of 0.01"),
     ("config", ["audit.thresholds=grid:1"], "audit.thresholds: 'grid:1' is not one of grid:K"),
     ("config", ["distinguisher.selection_thresholds=nope"],
      "distinguisher.selection_thresholds: 'nope' is not one of"),
     ("config", ["claim.kind=dpsgd"], "claim.noise_multiplier: required for a dpsgd claim"),
     ("config", ["claim.tuning.kind=dice"], "claim.tuning.kind: must be"),
     ("config", ["claim.kind=dpsgd", "claim.noise_multiplier=0.01", "claim.sample_rate=0.01",
                 "claim.steps=100"], "claim: noise multiplier σ = 0.01 is outside"),
     ("config", ["audit.slices=[a,b,c,d,e,f,g,h,i]"], "audit.slices: 9 entries, at most 8"),
     ("config", ["distinguisher.grid=[]"], "distinguisher.grid: 0 entries, at least 1")],
)  # fmt: skip
def test_a_rule_across_settings_names_the_key(
    primary: str, overrides: list[str], message: str
) -> None:
    container = _composed(primary, *overrides)
    with pytest.raises(InputError, match=re.escape(message)):
        check_settings(container)


def test_a_rule_skips_what_is_still_an_interpolation() -> None:
    """The service checks the unresolved config: a rule reading an interpolation waits for
    the job, which checks the resolved one."""
    config = {
        "modality": "text",
        "target": {"kind": "train", "base_model": None, "n_embd": "${x}", "n_head": 3},
        "audit": {"attack_side": "target+helper+reference_models", "baseline_side": "${y}",
                  "ensemble": 1},
    }  # fmt: skip
    check_settings(config)
    config["target"]["n_embd"] = 32
    with pytest.raises(InputError, match=r"^target\.n_embd: 32 is not a multiple"):
        check_settings(config)


@pytest.mark.parametrize(
    ("primary", "override", "message"),
    [("image", "target.arch=foo", "target.arch: 'foo' is not cnn or resnet"),
     ("text", "base.source=nope", "base.source: 'nope' is not package_docs or none"),
     ("config", "audit.attack_side=target+helper+reference_models",
      "audit.attack_side=target+helper+reference_models goes with audit.baseline_side=")],
)  # fmt: skip
def test_the_job_refuses_before_any_stage(
    primary: str,
    override: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``panoramia-audit`` runs the same checks as the service's door, with exit status 2
    and one line, before it builds the pipeline (so before any stage)."""
    from panoramia.modality_plugin import Modality
    from panoramia.pipeline.app import _task

    def no_pipeline(self: Modality) -> type:
        raise AssertionError("the pipeline was built")

    monkeypatch.setattr(Modality, "pipeline_class", no_pipeline)
    config = compose_job([f"--config-name={primary}", override, f"artifacts_dir={tmp_path}"])
    with pytest.raises(SystemExit) as exited:
        _task(config)
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith(f"panoramia-audit: error: {message}")


def test_an_unknown_slice_of_a_csv_without_its_label_is_one_line(tmp_path: Path) -> None:
    """A CSV's declared columns with no ``data.label`` yet: the unknown slice is refused in
    one line naming the columns known so far (the missing label is the data stage's line)."""
    from panoramia.modalities.tabular.pipeline import TabularPipeline

    config = compose_job(["--config-name=config", "data=csv", "data.categorical=[colour]",
                          "data.continuous=[height]", "audit.slices=[nope]",
                          f"artifacts_dir={tmp_path}"])  # fmt: skip
    pipeline = TabularPipeline.__new__(TabularPipeline)
    pipeline.job = config
    assert pipeline.slice_columns() == ("colour", "height")
    with pytest.raises(InputError, match=re.escape("audit.slices: ['nope'] not among the data's "
                                                   "columns (colour, height)")):  # fmt: skip
        pipeline.check_slices()
