"""Each plug-in's configs live in its own folder, searched after the shared ``conf/``
(``panoramia.pipeline.registry.config_folders``): the shared folder holds only what every
modality uses, no option is in two folders, and a registered plug-in's folder joins."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from panoramia import plugins
from panoramia.pipeline.registry import (
    compose_job,
    config_dir,
    config_file,
    config_folders,
    plugin_config_dir,
    plugin_config_folders,
)
from tests.toy_modality.plugin import PLUGIN as TOY

SHARED_GROUPS = {"audit", "run", "hydra", "logger", "gates", "helper"}


def _options(folder: Path) -> list[str]:
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


def test_her_own_config_folder_joins_the_search_path(tmp_path: Path) -> None:
    """A user's ``hydra.searchpath`` adds her folder beside the shared and the plug-ins' own."""
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "mine.yaml").write_text("name: mine\nkind: path\npath: /models/mine\n")
    composed = compose_job([f"hydra.searchpath=[file://{tmp_path}]", "target=mine"])
    assert composed.target.name == "mine"
    assert composed.data.source == "adult"  # the tabular plug-in's primary config still found


def _searched_after(configs: Path) -> list[str]:
    """The search path Hydra builds for an app whose main config folder is ``configs``, as
    ``panoramia_configs`` leaves it."""
    from hydra._internal.config_search_path_impl import ConfigSearchPathImpl

    from hydra_plugins.panoramia_configs.panoramia_configs import PanoramiaConfigs

    search_path = ConfigSearchPathImpl()
    search_path.append("main", f"file://{configs}")
    PanoramiaConfigs().manipulate_search_path(search_path)
    return [element.path or "" for element in search_path.get_path()]


def test_the_search_path_plugin_serves_panoramia_alone_and_never_fails_another_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _searched_after(config_dir())
    assert ours[1:] == [f"file://{folder}" for folder in plugin_config_folders()]
    assert _searched_after(tmp_path) == [f"file://{tmp_path}"]  # another Hydra app
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("PANORAMIA_CONF_DIR", str(tmp_path / "a_file"))  # a broken setting
    assert _searched_after(tmp_path) == [f"file://{tmp_path}"]


def test_the_confined_child_reads_the_plugins_namespace_and_no_path_hook() -> None:
    """Hydra lists ``hydra_plugins`` to find the search-path plug-in: the confined child must
    read its folders (an editable install keeps one beside the checkout), and nothing that is
    not an absolute folder is granted (an editable install's path hook is a name)."""
    import hydra_plugins.panoramia_configs as ours
    from panoramia.sandbox import _project_packages

    granted = _project_packages()
    assert Path(ours.__file__).resolve().parents[1] in [p.resolve() for p in granted]
    assert all(path.is_absolute() and path.is_dir() for path in granted)


def test_the_audit_child_never_imports_from_its_run_directory(tmp_path: Path) -> None:
    """The worker starts the audit in its run directory, which the audit writes: with ``-P``
    a module an earlier attempt left there (a Hydra plug-in here) is never imported."""
    from panoramia.service.submission.command import job_command

    (tmp_path / "hydra_plugins").mkdir()
    (tmp_path / "hydra_plugins" / "planted.py").write_text('print("PLANTED RAN")\n')
    command = job_command([], run_dir=tmp_path, artifacts_dir=tmp_path / "a", threads=1)
    done = subprocess.run(
        [*command[:4], "--info", "plugins"], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PLANTED RAN" not in done.stdout + done.stderr
    assert "PanoramiaConfigs" in done.stdout
