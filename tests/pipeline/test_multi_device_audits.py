"""An audit whose models train on two devices (two CPU processes over gloo) runs every
stage once and writes one report: the ranks live only inside each training's ``fit``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_support import run_audit
from tests.conftest import SMALL_NULL, shared_store

TWO_DEVICES = [
    "target.strategy=ddp", "target.devices=2", "target.accelerator=cpu", "audit.ensemble=1",
]  # fmt: skip
"""The target on two CPU processes over gloo, and one distinguisher per side. Text's one
stand-in takes the target's recipe, so a second two-rank fit follows the target's in the same
process (three stand-ins took ~15 s more, each fit spawning ranks that import the stack
anew); image's stand-in takes h's recipe, on one process."""
AUDITS = {
    "image": ["--config-name", "image", "+experiment=digits_tiny", "threads=1", SMALL_NULL],
    "text": ["--config-name", "text", "+experiment=text_tiny", "threads=1", SMALL_NULL],
}  # fmt: skip
"""The tiny audits. In text, the generator, the public base and h fit with the same
``fit_causal_lm`` as the target and stand-in, so those two cover it on two processes (each
more fit there spawns ranks that import the stack anew)."""


def finished_stages(log: str) -> list[int]:
    """The stage numbers of the log's "[k/N] …: done in" and "…: reused" lines, in order."""
    pattern = re.compile(r"^\[(\d+)/(\d+)\] .*: (?:done in|reused)", re.M)
    return [int(match.group(1)) for match in pattern.finditer(log)]


@pytest.mark.parametrize("modality", sorted(AUDITS))
def test_a_two_process_audit_runs_each_stage_once(
    modality: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    artifacts = shared_store(tmp_path_factory, f"{modality}-artifacts")
    done = run_audit(
        AUDITS[modality], *TWO_DEVICES, artifacts=artifacts, run_dir=tmp_path / "run",
        console_script=True,  # Lightning spawns its ranks from a real interpreter's __main__
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    stages = finished_stages(log)
    assert stages == list(range(1, len(stages) + 1))  # each stage once, in order
    assert log.count("report: ") == 1
    assert len(re.findall(r"seed 0: ", log)) == 1
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["config"]["target"]["devices"] == "2"
    # No rank left half a stage behind (this run's stages: the store is shared with the
    # single-process audits, which may be writing their own at this moment).
    keys = {n: t["key"] for n, t in report["timings"].items() if isinstance(t, dict) and "key" in t}
    assert len(keys) == len(stages)
    for name, key in keys.items():
        assert (artifacts / name / key).is_dir(), name
        assert not list((artifacts / name).glob(f".partial-{key}-*")), name
        assert not list((artifacts / name / key).rglob(".partial-*")), name


@pytest.mark.gpu
@pytest.mark.parametrize("modality", sorted(AUDITS))
def test_a_tiny_audit_runs_on_cuda(
    modality: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    on_gpu = [f"{section}.accelerator=gpu" for section in ("target", "helper", "generator")]
    config = [part for part in AUDITS[modality] if not part.startswith("generator.")]
    done = run_audit(
        config, *on_gpu, artifacts=shared_store(tmp_path_factory, f"{modality}-gpu"),
        run_dir=tmp_path / "run", console_script=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "report.json").read_text())["modality"] == modality
