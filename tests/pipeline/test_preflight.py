"""The preflight's reading of the command line (``panoramia.pipeline.preflight``)."""

from __future__ import annotations

import re
import sys
import threading
import time

import pytest

from panoramia.pipeline.preflight import config_name


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([], "config"),
        (["seed=3"], "config"),
        (["--config-name", "image", "seed=3"], "image"),
        (["-cn", "text"], "text"),
        (["--config-name=image"], "image"),
        (["--config-n", "text"], "text"),  # argparse takes an unambiguous abbreviation
    ],
)
def test_config_name_reads_every_form_hydra_takes(arguments: list[str], expected: str) -> None:
    assert config_name(arguments) == expected


@pytest.mark.parametrize("arguments", [["-cn"], ["--config-name"], ["--version"], ["--help"]])
def test_config_name_prints_nothing_where_argparse_would(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A flag without its value (or one that prints and exits) leaves the answer to Hydra."""
    assert config_name(arguments) == "config"
    assert capsys.readouterr() == ("", "")


def test_config_name_leaves_the_process_streams_alone() -> None:
    """The service calls this from request and audit threads: swapping ``sys.stderr`` there
    would hide other threads' output, and restoring a stale stream would undo what another
    thread set meanwhile (how a CLI test's captured stream once got closed under it)."""
    stop = threading.Event()

    def parse_forever() -> None:
        while not stop.is_set():
            config_name(["-cn"])

    parser = threading.Thread(target=parse_forever, daemon=True)
    saved = sys.stderr
    parser.start()
    try:
        for attempt in range(300):
            mine = type("Stream", (), {"write": lambda self, text: len(text), "flush": id})()
            sys.stderr = mine
            time.sleep(0)  # let the parsing thread run
            assert sys.stderr is mine, f"sys.stderr replaced by another thread (try {attempt})"
    finally:
        stop.set()
        parser.join(timeout=10)
        sys.stderr = saved


@pytest.mark.parametrize(
    "addition", ["+nonexistent=1", "+audit.extra=1", "+generator.filter.typo=0.5", "+seeds=1"]
)
def test_an_added_key_nothing_reads_is_refused(addition: str) -> None:
    from panoramia.errors import InputError
    from panoramia.pipeline.preflight import check_command_line
    from panoramia.pipeline.registry import config_folders, register_schemas

    register_schemas(["tabular"])
    key = addition.split("=")[0]
    with pytest.raises(InputError, match=rf"{key.replace('+', '[+]')}: not a setting"):
        check_command_line(config_folders(), [addition])
    check_command_line(config_folders(), ["+experiment=validity", "seed=1"])  # a group is fine


@pytest.mark.parametrize(
    ("override", "message"),
    [("audit.reference.o1=false", "audit.reference.o1: renamed; write audit.real_nonmembers.o1"),
     ("audit.baseline_side=stand_in+helper+reference",
      "audit.baseline_side: renamed; write audit.baseline_side=stand_in+helper+reference_models")],
)  # fmt: skip
def test_a_renamed_setting_names_its_new_name(override: str, message: str) -> None:
    from panoramia.errors import InputError
    from panoramia.pipeline.preflight import check_command_line
    from panoramia.pipeline.registry import config_folders, register_schemas

    register_schemas(["tabular"])
    with pytest.raises(InputError, match=re.escape(message)):
        check_command_line(config_folders(), [override])
