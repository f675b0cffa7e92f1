"""The release gate's parts without an audit (docs/AUDIT.md, "The release gate"): every bad
policy is one line and exit 2 (``panoramia gate`` and ``panoramia-audit gate=…``); each rule
on small figures; a report document read and pooled; the JUnit and step-summary outputs."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panoramia.cli import app as cli
from panoramia.errors import InputError
from panoramia.pipeline.gate_policies import load_policy, shipped_policies
from panoramia.pipeline.release_gate import GateResult, gate_documents, path_outcomes
from panoramia.report.gate import FAILED, PASSED, evaluate
from panoramia.report.gate_figures import ClaimReading, GateFigures, TprReading
from panoramia.report.gate_output import junit_xml, step_summary
from panoramia.report.gate_policy import GatePolicy
from tests.cli_support import run_command
from tests.service_support import report_document_for_test

BAD_POLICIES = [
    ("policy.yaml", "fail_levels: [leak_detected]\nextra: 1\n",
     "policy.yaml: extra: not a field of a gate policy (one of fail_levels, "),
    ("policy.yaml", "fail_levels: leak_detected\n",
     "policy.yaml: fail_levels: a list of verdict levels, not a str"),
    ("policy.yaml", "fail_levels: [leaky]\n",
     "policy.yaml: fail_levels: 'leaky' is not one of leak_beyond_claim, clear_leak, "),
    ("policy.yaml", "fail_levels: [borderline, borderline]\n",
     "policy.yaml: fail_levels: a level is listed twice"),
    ("policy.yaml", "max_eps_tilde_low: -0.1\n",
     "policy.yaml: max_eps_tilde_low: -0.1 is not a number of nats ≥ 0 (or null)"),
    ("policy.yaml", "max_eps_tilde_low: .nan\n",
     "policy.yaml: max_eps_tilde_low: nan is not a number of nats ≥ 0 (or null)"),
    ("policy.yaml", "max_eps_tilde_low: high\n",
     "policy.yaml: max_eps_tilde_low: a number of nats (or null), not a str"),
    ("policy.yaml", "max_tpr_at_fpr: {0.05: 0.1}\n",
     "policy.yaml: max_tpr_at_fpr: '0.05' is not one of 0.001, 0.01"),
    ("policy.yaml", "max_tpr_at_fpr: {0.01: 1.5}\n",
     "policy.yaml: max_tpr_at_fpr.0.01: 1.5 is not a share in [0, 1]"),
    ("policy.yaml", "max_tpr_at_fpr: [0.01]\n",
     "policy.yaml: max_tpr_at_fpr: a mapping of false-positive rates to shares, not a list"),
    ("policy.yaml", "claim_must_hold: maybe\n",
     "policy.yaml: claim_must_hold: 'maybe' is not true or false"),
    ("policy.yaml", "unreadable: skip\n",
     "policy.yaml: unreadable: 'skip' is not one of fail, pass"),
    ("policy.yaml", "claim_must_hold: false\n", "policy.yaml: the policy sets no rule"),
    ("policy.yaml", "", "policy.yaml: a policy is a mapping of its fields, not nothing"),
    ("policy.yaml", "fail_levels: [leak_detected\n", "policy.yaml: not valid YAML (line 2: "),
    ("policy.yaml", "!!python/object:os.system {}\n", "policy.yaml: not valid YAML ("),
    ("policy.json", '{"fail_levels": ["leak_detected"],}',
     "policy.json: not valid JSON (line 1: "),
    ("policy.txt", "fail_levels: [leak_detected]\n",
     "policy.txt: a policy file ends in .yaml, .yml, .json"),
]  # fmt: skip
"""A policy file's name, its text, and the start of the one line that refuses it."""


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    """A real report document (the measurement of simulated scores) in a run directory."""
    run = tmp_path / "run"
    run.mkdir()
    path = run / "report.json"
    path.write_text(json.dumps(report_document_for_test(shift=3.0)))
    return path


@pytest.mark.parametrize(("name", "text", "line"), BAD_POLICIES)
def test_a_bad_policy_is_one_line_and_exit_2(
    name: str, text: str, line: str, report_file: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    done = CliRunner().invoke(cli, ["gate", str(report_file), "--policy", name])
    assert done.exit_code == 2, done.output
    assert done.output.startswith(f"panoramia: error: {line}"), done.output
    assert len(done.output.splitlines()) == 1


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("nope", "--policy: 'nope' is not a shipped policy (lenient, strict); give a policy "),
        ("${oc.env:POLICY}", "--policy: an interpolation is not accepted; name a shipped "),
        ("missing.yaml", "missing.yaml: no such policy file"),
    ],
)
def test_a_policy_that_names_nothing_is_one_line_and_exit_2(
    value: str, line: str, report_file: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["gate", str(report_file), "--policy", value])
    assert done.exit_code == 2
    assert done.output == f"panoramia: error: {line}" + done.output.split(line, 1)[1]
    assert len(done.output.splitlines()) == 1


def test_a_path_without_a_report_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "report.json").write_text('{"c_lb": 0.1}')
    for path, line in (
        (tmp_path / "nothing", "no such file or directory"),
        (tmp_path / "notes.txt", "a report.json, a run directory or a multirun's summary.json"),
        (tmp_path / "report.json", "not a report document ("),
        (tmp_path / "empty", "holds no report.json, summary.json or runs' reports"),
    ):
        if path.name == "empty":
            path.mkdir()
        done = CliRunner().invoke(cli, ["gate", str(path), "--policy", "strict"])
        assert done.exit_code == 2, done.output
        assert done.output.startswith(f"panoramia: error: {path}: {line}"), done.output
        assert len(done.output.splitlines()) == 1


def test_a_sweep_with_an_unfinished_job_or_only_controls_is_not_gated(tmp_path: Path) -> None:
    named = load_policy("lenient")
    document = report_document_for_test(shift=3.0)
    (tmp_path / "0-test-seed0").mkdir()
    (tmp_path / "0-test-seed0" / "report.json").write_text(json.dumps(document))
    (outcome,) = path_outcomes(named, tmp_path)[0]
    assert (outcome.subject, outcome.passed) == ("test", True)
    (tmp_path / "1-test-seed1" / ".hydra").mkdir(parents=True)  # a job that left no report
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(InputError, match=r"run 1-test-seed1 has no report.json \(1 unfinished"):
        path_outcomes(named, tmp_path / "summary.json")
    (tmp_path / "1-test-seed1" / ".hydra").rmdir()
    control = document | {"config": {"target": {"members": "disjoint"}}}
    (tmp_path / "0-test-seed0" / "report.json").write_text(json.dumps(control))
    with pytest.raises(InputError, match="every run is a negative control; nothing to gate"):
        path_outcomes(named, tmp_path)


def test_the_job_refuses_a_bad_gate_before_any_stage(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_eps_tilde_low: -1\n")
    done = run_command([f"gate={bad}", f"hydra.run.dir={tmp_path / 'run'}",
                        f"artifacts_dir={tmp_path / 'store'}"])  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == (
        f"panoramia-audit: error: {bad}: max_eps_tilde_low: -1.0 is not a number of nats ≥ 0 "
        "(or null)"
    )
    assert not (tmp_path / "store").exists()  # no stage ran
    swept = run_command(["-m", "gate=strict,lenient", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                         f"artifacts_dir={tmp_path / 'store'}"])  # fmt: skip
    assert swept.returncode == 2
    assert swept.stderr.strip() == "panoramia-audit: error: gate: one policy per multirun; it is "\
        "not swept"  # fmt: skip
    assert not (tmp_path / "store").exists()
    unapplied = run_command(["gate=strict", "~hydra.callbacks.gate",
                             f"hydra.run.dir={tmp_path / 'run'}",
                             f"artifacts_dir={tmp_path / 'store'}"])  # fmt: skip
    assert unapplied.returncode == 2
    assert unapplied.stderr.strip().startswith(
        "panoramia-audit: error: gate: set, but hydra.callbacks holds no "
    )
    assert not (tmp_path / "store").exists()


def test_the_shipped_policies_read() -> None:
    assert set(shipped_policies()) == {"strict", "lenient"}
    strict, lenient = load_policy("strict").policy, load_policy("lenient").policy
    assert strict.unreadable == "fail"
    assert lenient.unreadable == "pass"
    assert set(lenient.fail_levels) < set(strict.fail_levels)
    assert strict.max_eps_tilde_low is not None
    assert lenient.max_eps_tilde_low is not None
    assert strict.max_eps_tilde_low < lenient.max_eps_tilde_low
    assert lenient.max_eps_tilde_low == pytest.approx(math.log(2), abs=1e-3)  # the clear bar
    assert strict.max_tpr_at_fpr["0.01"] < lenient.max_tpr_at_fpr["0.01"]


def _figures(**changes: object) -> GateFigures:
    base: dict = {
        "subject": "m seed 0",
        "level": "no_leak_detected",
        "headline": "No leak detected",
        "game": "two_sided",
        "eps_tilde": 0.05,
        "interval": (0.0, 0.3),
        "interval_words": "this run's 90% interval",
        "tpr": {"0.01": TprReading(attack=0.04, baseline=0.01, negatives=300),
                "0.001": TprReading(negatives=300)},
    } | changes  # fmt: skip
    return GateFigures(**base)


def _rules(policy: GatePolicy, figures: GateFigures) -> dict[str, tuple[bool, str]]:
    return {r.rule: (r.passed, r.line) for r in evaluate(policy, figures).results}


def test_each_rule_reads_its_figure() -> None:
    policy = GatePolicy(
        fail_levels=("leak_detected",), max_eps_tilde_low=0.1, max_tpr_at_fpr={"0.01": 0.03}
    )
    quiet = _rules(policy, _figures())
    assert list(quiet) == ["claim_must_hold", "fail_levels", "max_eps_tilde_low",
                           "max_tpr_at_fpr.0.01"]  # fmt: skip
    assert all(passed for passed, _ in quiet.values())
    assert quiet["max_tpr_at_fpr.0.01"][1] == (
        "max_tpr_at_fpr.0.01: at 1% FPR the attack's TPR is 4.0% and the baseline's 1.0%: "
        "3.0 points over the baseline, within the limit 3.0 points"
    )
    loud = _rules(policy, _figures(level="leak_detected", headline="Leak detected",
                                   interval=(0.11, 0.9), eps_tilde=0.5,
                                   tpr={"0.01": TprReading(0.05, 0.01, 300)}))  # fmt: skip
    assert not loud["fail_levels"][0]
    assert loud["max_eps_tilde_low"] == (False, (
        "max_eps_tilde_low: the quoted ε̃ (the two-sided game) is 0.50 nats, this run's 90% "
        "interval 0.11–0.90: its low end 0.11 is above the limit 0.10"
    ))  # fmt: skip
    assert not loud["max_tpr_at_fpr.0.01"][0]
    # the low end at the limit passes; the TPR itself without the baseline
    edge = _rules(
        GatePolicy(max_eps_tilde_low=0.11, max_tpr_at_fpr={"0.01": 0.04},
                   tpr_over_baseline=False, claim_must_hold=False),
        _figures(interval=(0.11, 0.9)),
    )  # fmt: skip
    assert edge["max_eps_tilde_low"][0]
    assert edge["max_tpr_at_fpr.0.01"] == (True, (
        "max_tpr_at_fpr.0.01: at 1% FPR the attack's TPR is 4.0%, within the limit 4.0%"
    ))  # fmt: skip


def test_an_unreadable_figure_follows_the_policy() -> None:
    figures = _figures(interval=None, claim=ClaimReading(declared=True, checked=False))
    limits = {"max_eps_tilde_low": 0.1, "max_tpr_at_fpr": {"0.001": 0.01}}
    failing = _rules(GatePolicy(**limits), figures)  # type: ignore[arg-type]
    assert not any(passed for passed, _ in failing.values())
    assert failing["max_tpr_at_fpr.0.001"][1] == (
        "max_tpr_at_fpr.0.001: the report cannot read TPR at 0.1% FPR (300 generated "
        "non-members; it takes at least 1,000); an unreadable figure fails under this policy"
    )
    assert failing["claim_must_hold"][1].startswith(
        "claim_must_hold: the declared guarantee was not checked: no game with real non-members"
    )
    passing = evaluate(GatePolicy(**limits, unreadable="pass"), figures)  # type: ignore[arg-type]
    assert passing.passed
    assert all(not result.readable for result in passing.results)
    violated = _rules(GatePolicy(), _figures(claim=ClaimReading(True, True, ("m seed 0",))))
    assert violated["claim_must_hold"] == (False, (
        "claim_must_hold: the audit contradicts the declared guarantee (a game with real "
        "non-members beats its trade-off curve)"
    ))  # fmt: skip


def test_a_report_document_is_read_anew_and_repeats_are_pooled(report_file: Path) -> None:
    named = load_policy("strict")
    (outcome,), folder = path_outcomes(named, report_file.parent)
    assert folder == report_file.parent
    assert outcome.subject == "test seed 0"
    rules = {r.rule: r for r in outcome.results}
    assert not rules["fail_levels"].passed  # the verdict read from its figures: a leak
    assert "(leak_detected)" in rules["fail_levels"].line
    assert not rules["max_eps_tilde_low"].readable  # schema 1.3: no null, no interval
    document = json.loads(report_file.read_text())
    quiet = report_document_for_test(1, shift=0.0)
    single = gate_documents(named, [("census", quiet)], subject="census", source="r1")
    assert [r.rule for r in single.outcomes[0].failures] == ["max_eps_tilde_low",
                                                              "max_tpr_at_fpr.0.01"]  # fmt: skip
    pooled = gate_documents(named, [("seed 0", document), ("seed 1", quiet), ("seed 2", None)],
                            subject="census (3 repeats)", source="g")  # fmt: skip
    fail_levels = next(r for r in pooled.outcomes[0].results if r.rule == "fail_levels")
    assert fail_levels.line.startswith('fail_levels: the verdict reads "Inconclusive (pooled)')
    with pytest.raises(InputError, match=r"^r2: census: not a report document \("):
        gate_documents(named, [("census", {"c_lb": 1})], subject="census", source="r2")


def test_the_junit_document_and_the_step_summary() -> None:
    policy = GatePolicy(fail_levels=("leak_detected",), max_tpr_at_fpr={"0.001": 0.01},
                        unreadable="pass")  # fmt: skip
    loud = evaluate(policy, _figures(subject="a", level="leak_detected", headline="Leak"))
    quiet = evaluate(policy, _figures(subject="b | c"))
    result = GateResult(load_policy("strict"), (loud, quiet))
    assert (result.passed, result.status) == (False, FAILED)
    assert GateResult(load_policy("strict"), (quiet,)).status == PASSED
    root = ET.fromstring(junit_xml("p", [loud, quiet]).split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("6", "1", "2")
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message", "").startswith("fail_levels: ")
    markdown = step_summary("p", [loud, quiet])
    assert markdown.startswith("### Release gate `p`: failed\n")
    assert "| a | `fail_levels` | **failed** |" in markdown
    assert "| b \\| c | `max_tpr_at_fpr.0.001` | passed (unreadable) |" in markdown
