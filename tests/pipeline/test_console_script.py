"""The installed ``panoramia-audit`` script itself, once per modality: the other audit tests
fork their runs from a server that imported everything (tests/cli_support.py), so this is
where the script's own start (its imports, a lazily loaded plug-in, warnings printed before the
error) is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import run_console_script


@pytest.mark.parametrize(
    ("config", "override", "message"),
    [
        ([], "audit.attack_side=both", "audit.attack_side: 'both' is not one of"),
        (["--config-name", "image"], "target.augment=rotate", "target.augment: 'rotate' is not"),
        (["--config-name", "text"], "target.n_head=3", "is not a multiple of target.n_head 3"),
    ],
)
def test_the_installed_script_refuses_a_bad_setting_in_one_line(
    config: list[str], override: str, message: str, tmp_path: Path
) -> None:
    done = run_console_script([*config, override, f"hydra.run.dir={tmp_path}"])
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("panoramia-audit: error: ")
    assert message in done.stderr
