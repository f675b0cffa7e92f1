"""Each plug-in's configs live in its own folder, searched after the shared ``conf/``
(``panoramia.pipeline.registry.config_folders``): the shared folder holds only what every
modality uses, no option is in two folders, and a registered plug-in's folder joins."""

from __future__ import annotations

from collections import Counter

from panoramia import plugins
from panoramia.pipeline.registry import (
    compose_job,
    config_dir,
    config_file,
    config_folders,
    plugin_config_dir,
)
from tests.toy_modality.plugin import PLUGIN as TOY

SHARED_GROUPS = {"audit", "run", "hydra", "logger", "gates", "helper"}


def _options(folder) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(path.relative_to(folder)) for path in folder.rglob("*.yaml")]


def test_each_plugin_holds_its_primary_config_and_options_and_none_is_in_two_folders() -> None:
    folders = config_folders()
    assert folders[0] == config_dir()
    shared = _options(folders[0])
    assert {option.split("/")[0] for option in shared} <= SHARED_GROUPS
    for entry in plugins.MODALITIES.values():
        own = plugin_config_dir(entry)
        assert own is not None, entry.name
        assert own in folders, entry.name
        assert (own / f"{entry.primary_config}.yaml").is_file()
        for source in entry.data_sources:
            assert config_file(f"data/{source}.yaml") == own / "data" / f"{source}.yaml"
        assert (own / "target" / f"{entry.path_target}.yaml").is_file()
    counts = Counter(option for folder in folders for option in _options(folder))
    assert not [option for option, count in counts.items() if count > 1]


def test_a_registered_plugin_brings_its_own_folder_and_composes_from_it() -> None:
    assert plugin_config_dir(TOY) not in config_folders()
    plugins.register(TOY)
    try:
        assert plugin_config_dir(TOY) in config_folders()
        composed = compose_job(["--config-name=toy", "target=toy_overfit"])
        assert composed.modality == "toy"
        assert composed.target.name == "toy-overfit"
    finally:
        plugins.unregister(TOY.name)


def test_her_own_config_folder_joins_the_search_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A user's ``hydra.searchpath`` adds her folder beside the shared and the plug-ins' own."""
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "mine.yaml").write_text("name: mine\nkind: path\npath: /models/mine\n")
    composed = compose_job([f"hydra.searchpath=[file://{tmp_path}]", "target=mine"])
    assert composed.target.name == "mine"
    assert composed.data.source == "adult"  # the tabular plug-in's primary config still found
