"""Stage keys declared once (``StageKey``) and a stage's reads of the settings held against
them: what a stage reads but does not declare fails the suite, since a change to it would
reuse a stale artifact."""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pytest
from rich.console import Console

from panoramia.pipeline import stage_reads
from panoramia.pipeline.settings_reads import recording
from panoramia.pipeline.stage_reads import CHECK_READS, UndeclaredSetting, check_declared
from panoramia.pipeline.stages import StageRunner, stage_key
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, SEED, StageKey, covered
from panoramia.pipeline.store import ArtifactStore


@dataclass
class Split:
    train: float = 0.5
    audit: float = 0.5


@dataclass
class Data:
    split: Split = field(default_factory=Split)
    rows: int = 100


@dataclass
class Generator:
    epochs: int = 3
    device: str = "cpu"
    temperature: float = 1.0


@dataclass
class Job:
    data: Data = field(default_factory=Data)
    generator: Generator = field(default_factory=Generator)
    seed: int = 0
    generation_seed: int = 7


def _runner(root: Path, job: Job) -> StageRunner:
    runner = StageRunner(ArtifactStore(root), console=Console(quiet=True))
    runner.bind(job, {SEED: job.seed, GENERATION_SEED: job.generation_seed})
    return runner


def test_recording_counts_this_jobs_field_reads_and_leaves_the_classes_as_they_were() -> None:
    job, other = Job(), Job()
    with recording(job) as reads:
        assert job.data.rows == 100
        assert asdict(job.data.split) == {"train": 0.5, "audit": 0.5}
        assert other.generator.temperature == 1.0  # another job: not recorded
    assert reads == {"data.rows", "data.split.train", "data.split.audit"}
    with recording(job) as copied:
        copy = replace(job.generator, epochs=5)  # reads every field it copies
        copied.clear()
        assert copy.temperature == 1.0  # the copy: not recorded
    assert copied == set()
    assert pickle.loads(pickle.dumps(job)) == job  # the objects kept their class
    assert "__getattribute__" not in vars(Generator)  # the classes' own lookup is back
    assert job.generator.epochs == 3
    with recording(job) as again:
        pass
    assert again == set()


def test_a_key_derives_its_settings_and_seeds_and_keeps_what_the_caller_computed() -> None:
    job = Job()
    spec = StageKey("split", settings={"fractions": "data.split"}, seeds=(GENERATION_SEED, SEED))
    config = spec.config(job, {SEED: 3, GENERATION_SEED: 7}, {"sizes": [1, 2]})
    assert config == {
        "fractions": {"train": 0.5, "audit": 0.5}, "generation_seed": 7, "seed": 3,
        "sizes": [1, 2],
    }  # fmt: skip
    # The key is the one the hand-written config had (json sorts the entries).
    written = {"seed": 3, "fractions": asdict(job.data.split), "generation_seed": 7,
               "sizes": [1, 2]}  # fmt: skip
    assert stage_key("split", 1, config, []) == stage_key("split", 1, written, [])
    with pytest.raises(ValueError, match="derived"):
        spec.config(job, {SEED: 3, GENERATION_SEED: 7}, {"seed": 3})
    with pytest.raises(ValueError, match="not seeds"):
        StageKey("x", seeds=("train_seed",))
    assert spec.reads() == frozenset({"data.split", "generation_seed", "seed"})
    assert covered("data.split.train", {"data.split"})
    assert not covered("data.rows", {"data.split"})


def test_a_stage_that_reads_an_undeclared_setting_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = Job()
    runner = _runner(tmp_path, job)
    data = runner.run(
        StageKey("data", also_reads=("data.rows",)),
        lambda d: {"rows": job.data.rows}, config={"rows": job.data.rows}, inputs=[],
    )  # fmt: skip
    generator = StageKey("generator", seeds=(GENERATION_SEED,), also_reads=("generator.epochs",))

    def build(directory: Path) -> dict:
        # epochs is declared, the device is where it runs, data.rows is the input's: all
        # held; the temperature is read but in no key.
        return {"e": job.generator.epochs, "d": job.generator.device, "r": job.data.rows,
                "t": job.generator.temperature}  # fmt: skip

    monkeypatch.setenv(CHECK_READS, "1")
    before = len(runner.results)
    with recording(job) as reads:
        runner.run(generator, build, inputs=[data])
    with pytest.raises(UndeclaredSetting, match="temperature"):
        check_declared("generator", reads, runner.results[before:], runner.declared)
    assert reads == {
        "generator.epochs", "generator.device", "data.rows", "generator.temperature"
    }  # fmt: skip

    declared = StageKey(
        "generator", seeds=(GENERATION_SEED,),
        also_reads=("generator.epochs", "generator.temperature"),
    )  # fmt: skip
    before = len(runner.results)
    with recording(job) as reads:
        runner.run(declared, build, inputs=[data])
    check_declared("generator", reads, runner.results[before:], runner.declared)  # holds

    monkeypatch.delenv(CHECK_READS)  # an audit outside the suite logs it instead
    logged: list[str] = []
    monkeypatch.setattr(stage_reads.log, "warning", logged.append)
    check_declared("generator", {"data.split.audit"}, runner.results[-1:], runner.declared)
    assert len(logged) == 1
    assert "data.split.audit, which its key does not declare" in logged[0]
