"""The multirun summary's validity check: paired differences against the control, the
control's share of positive ε̃, claims and unreliable runs, for the paper's one-sided game and
the two-sided game (on hand-written reports)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from panoramia.pipeline.summary import summarise, validity, validity_lines


def _report(directory: Path, *, name: str, members: str, seed: int, eps: float, c_lb: float = 1.0,
            claimed: float | None = None, violation: bool = False, eps_2: float | None = None,
            rmrn_2: float = 0.0, unreliable_2: bool = False) -> None:  # fmt: skip
    run = directory / f"{len(list(directory.iterdir()))}-{name}-seed{seed}"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(f"- seed={seed}\n- target={name}\n")
    claim = {"violation": violation}
    if claimed is not None:
        claim["summary"] = {"epsilons": {"1e-05": claimed}}
    report = {
        "target": {"name": name}, "seed": seed, "eps_tilde": eps, "c_lb": c_lb,
        "c_plus_eps_lb": c_lb + eps, "reference_audits": {"o1": {"eps_lb": 2.0}},
        "config": {"generation_seed": 0, "target": {"members": members}}, "claim": claim,
        **({"unreliable": ["c_lb 0"]} if c_lb == 0 else {}),
        **({"two_sided": {"eps_tilde": eps_2, "rmrn": {"eps_lb": rmrn_2},
                          "unreliable": unreliable_2}}
           if eps_2 is not None else {}),
    }  # fmt: skip
    (run / "report.json").write_text(json.dumps(report))


def test_paired_differences_against_the_control(tmp_path: Path) -> None:
    leaks = [0.6, 0.7, 0.5, 0.8, 0.6]
    control = [0.0, 0.1, 0.0, 0.0, 0.05]
    for seed in range(5):
        _report(
            tmp_path,
            name="leaky",
            members="same",
            seed=seed,
            eps=leaks[seed],
            eps_2=2 * leaks[seed],
            rmrn_2=2.0,
        )
        _report(
            tmp_path,
            name="control",
            members="disjoint",
            seed=seed,
            eps=control[seed],
            eps_2=0.3 if seed == 0 else 0.0,
        )
        _report(tmp_path, name="dp", members="same", seed=seed, eps=0.2 if seed else 1.5,
                claimed=1.0, violation=seed == 3, c_lb=0.0 if seed == 4 else 1.0,
                eps_2=0.1, rmrn_2=1.2 if seed == 2 else 0.0, unreliable_2=seed < 2)  # fmt: skip
    checked = validity(tmp_path)
    assert checked is not None
    one = checked["targets"]["leaky"]["one-sided"]
    paired = one["paired_difference"]["control"]
    assert paired["mean"] == pytest.approx(sum(leaks) / 5 - sum(control) / 5)
    assert paired["n"] == 5
    assert paired["ci_low"] > 0
    assert checked["controls"]["control"]["one-sided"]["share_eps_tilde_positive"] == (
        pytest.approx(0.4)
    )
    assert one["eps_tilde_over_o1"] == pytest.approx(0.64 / 2)
    claim = checked["targets"]["dp"]["one-sided"]["claim"]
    assert claim["eps_tilde_above_claim"] == ["2-dp-seed0"]
    assert claim["violations"] == ["11-dp-seed3"]
    assert checked["targets"]["dp"]["one-sided"]["unreliable_runs"] == 1
    assert checked["targets"]["dp"]["two-sided"]["unreliable_runs"] == 2
    assert summarise(tmp_path)["dp"]["unreliable_runs"] == 1
    two = checked["targets"]["leaky"]["two-sided"]
    assert two["paired_difference"]["control"]["mean"] == pytest.approx(2 * 0.64 - 0.06)
    assert checked["controls"]["control"]["two-sided"]["share_eps_tilde_positive"] == 0.2
    two_claim = checked["targets"]["dp"]["two-sided"]["claim"]
    assert two_claim["eps_tilde_above_claim"] == []
    assert summarise(tmp_path)["leaky"]["rmrn_two_sided"]["mean"] == pytest.approx(2.0)
    text = "\n".join(validity_lines(checked))
    assert "[one-sided] leaky − control (paired): 0.610" in text
    assert "[two-sided] leaky − control (paired): 1.220" in text
    assert "[one-sided] dp: claimed ε 1; ε̃ above it in 1 run(s), claim violations in 1" in text
    assert "[two-sided] dp: 2 unreliable run(s)" in text


def test_reports_without_the_two_sided_game_keep_the_one_sided_check(tmp_path: Path) -> None:
    """Reports written before the two-sided game (or with it skipped) still get checked, also
    when only the target's runs have it."""
    for seed in range(3):
        _report(tmp_path, name="leaky", members="same", seed=seed, eps=0.5, eps_2=0.5)
        _report(tmp_path, name="control", members="disjoint", seed=seed, eps=0.0)
    checked = validity(tmp_path)
    assert checked is not None
    assert checked["targets"]["leaky"]["two-sided"]["paired_difference"] == {}
    assert "two-sided" not in checked["controls"]["control"]
    assert checked["targets"]["leaky"]["one-sided"]["paired_difference"]["control"]["mean"] == 0.5
    assert all(line.startswith("[one-sided]") for line in validity_lines(checked))


def test_no_control_no_validity(tmp_path: Path) -> None:
    _report(tmp_path, name="leaky", members="same", seed=0, eps=0.6)
    assert validity(tmp_path) is None


def test_the_summary_headline_never_rests_on_unreliable_runs_alone(tmp_path: Path) -> None:
    """A target whose every run has c_lb 0 shows no ε̃ number in the summary table; one with
    some such runs says how many; the counts are in summary.json for both games."""
    from panoramia.pipeline.summary import _cell

    for seed in range(3):
        _report(tmp_path, name="blind", members="same", seed=seed, eps=0.5, c_lb=0.0,
                eps_2=0.4, unreliable_2=True)  # fmt: skip
        _report(tmp_path, name="mixed", members="same", seed=seed, eps=0.3,
                c_lb=0.0 if seed == 0 else 1.0, eps_2=0.2)  # fmt: skip
    summary = summarise(tmp_path)
    blind, mixed = summary["blind"], summary["mixed"]
    assert (blind["unreliable_runs"], blind["unreliable_runs_two_sided"]) == (3, 3)
    assert (mixed["unreliable_runs"], mixed["unreliable_runs_two_sided"]) == (1, 0)
    assert _cell(blind, "eps_tilde") == "unreliable (3/3 runs: baseline c_lb 0)"
    assert _cell(blind, "eps_tilde_two_sided").startswith("unreliable (3/3")
    assert _cell(mixed, "eps_tilde").endswith("(1/3 unreliable)")
    assert _cell(mixed, "eps_tilde_two_sided") == "0.200 [0.200, 0.200]"
    assert "unreliable" not in _cell(blind, "c_lb")


def test_the_printed_summary_never_cuts_a_name_or_an_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Piped (not a terminal), the table keeps every name and interval whole, and the same
    table goes to summary.md and summary.csv beside summary.json."""
    from omegaconf import OmegaConf

    from panoramia.pipeline.summary import MultirunSummary

    names = ("mlp-e100-overfitted-on-adult", "mlp-e10")
    for seed in range(3):
        for name, eps in zip(names, (0.612345, 0.0123), strict=True):
            _report(tmp_path, name=name, members="same", seed=seed, eps=eps + seed / 100,
                    eps_2=2 * eps)  # fmt: skip
    MultirunSummary().on_multirun_end(
        OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}})
    )
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    interval = summary[names[0]]["eps_tilde"]
    whole = f"{interval['mean']:.3f} [{interval['ci_low']:.3f}, {interval['ci_high']:.3f}]"
    for shown in (printed, (tmp_path / "summary.md").read_text()):
        assert names[0] in shown
        assert names[1] in shown
        assert whole in shown
        assert "…" not in shown
    rows = (tmp_path / "summary.csv").read_text().splitlines()
    assert rows[0] == "target,runs,leak_called,quantity,game,mean,ci_low,ci_high,unreliable"
    assert any(row.startswith(f"{names[0]},3,0,eps_tilde,one_sided,") for row in rows)


def test_rows_follow_the_sweeps_job_numbers() -> None:
    from pathlib import Path

    from panoramia.pipeline.summary import _job_order

    runs = [Path(f"sweep/{n}-mlp-seed0/report.json") for n in (10, 2, 1, 0, 11, 9)]
    ordered = [path.parent.name.split("-")[0] for path in sorted(runs, key=_job_order)]
    assert ordered == ["0", "1", "2", "9", "10", "11"]


def test_mu_tilde_is_summarised_and_checked_against_the_claimed_mu(tmp_path: Path) -> None:
    """μ̃ and RM;RN's μ_lb (docs/SPEC.md §2.8) are aggregated, and a DP target's runs whose
    μ̃ or RM;RN μ exceed the claimed μ are listed under the paper's game only."""
    for seed in range(3):
        _report(tmp_path, name="control", members="disjoint", seed=seed, eps=0.0)
        _report(tmp_path, name="dp", members="same", seed=seed, eps=0.1, claimed=1.0)
    for seed, run in enumerate(sorted(tmp_path.iterdir())):
        document = json.loads((run / "report.json").read_text())
        document["gdp"] = {"mu_tilde": 0.1 * seed, "rmrn": {"mu_lb": 0.3 if seed == 5 else 0.0},
                           "claimed_mu": 0.25 if "dp" in run.name else None}  # fmt: skip
        (run / "report.json").write_text(json.dumps(document))
    summary = summarise(tmp_path)
    assert summary["dp"]["mu_tilde"]["n"] == 3
    assert summary["dp"]["rmrn_mu"]["mean"] == pytest.approx(0.1)
    checked = validity(tmp_path)
    claim = checked["targets"]["dp"]["one-sided"]["claim_mu"]
    assert claim["claimed_mu"] == 0.25
    assert claim["mu_tilde_above_claim"] == ["3-dp-seed1", "5-dp-seed2"]
    assert claim["rmrn_mu_above_claim"] == ["5-dp-seed2"]
    assert "claim_mu" not in checked["targets"]["dp"].get("two-sided", {})
    text = "\n".join(validity_lines(checked))
    assert "[one-sided] dp: claimed μ 0.25; μ̃ above it in 2 run(s), RM;RN μ above it in 1" in text


def test_ones_own_control_is_named_and_pairs_across_paths(tmp_path: Path) -> None:
    """Two brought models, ``target.path=…/mine,…/mine_control`` with ``control=mine_control``:
    the control is the named one, and the differing paths do not split the pairs; the quoted
    entry counts the runs that called a leak."""
    for seed in range(3):
        for name, eps in (("mine", 1.5 + seed / 10), ("mine_control", 0.0)):
            run = tmp_path / f"{len(list(tmp_path.iterdir()))}-{name}-seed{seed}"
            (run / ".hydra").mkdir(parents=True)
            (run / ".hydra" / "overrides.yaml").write_text(
                f"- seed={seed}\n- target=path\n- target.path=models/{name}\n"
                "- control=mine_control\n- data=csv\n"
            )
            report = {
                "target": {"name": name}, "seed": seed, "eps_tilde": eps, "c_lb": 0.5,
                "c_plus_eps_lb": 0.5 + eps, "confidence": 0.95, "reference_audits": {},
                "config": {"generation_seed": None, "control": "mine_control",
                           "target": {"members": "same"}}, "claim": {},
                "null": {"game": "one_sided", "observed": eps, "draws": 999,
                         "exceed": 0 if eps else 600, "false_alarm_rate": 0.05,
                         "threshold": 0.2, "interval": [max(0.0, eps - 0.2), eps + 0.2]},
            }  # fmt: skip
            (run / "report.json").write_text(json.dumps(report))
    checked = validity(tmp_path)
    assert checked is not None
    assert list(checked["controls"]) == ["mine_control"]
    quoted = checked["targets"]["mine"]["quoted"]
    assert quoted["paired_difference"]["mine_control"]["n"] == 3
    assert quoted["detected_runs"] == 3
    assert checked["controls"]["mine_control"]["quoted"]["detected_runs"] == 0
    summary = summarise(tmp_path)
    assert summary["mine"]["detected_runs"] == 3
    assert summary["mine"]["levels"] == {"clear_leak": 3}
    assert summary["mine"]["quoted"]["mean"] == pytest.approx(1.6)
    lines = validity_lines(checked)
    assert any(line.endswith("leak called in 0 of 3") for line in lines)


def test_the_reference_attack_is_summarised_in_attacker_terms(tmp_path: Path) -> None:
    """RMIA's ε lower bound and its share of members caught at 1 % false positives are
    summarised per target beside O(1); a run without the attack counts in neither."""
    for seed, (bound, caught) in enumerate(((1.0, 0.2), (2.0, 0.4), (None, None))):
        _report(tmp_path, name="mlp-e100", members="same", seed=seed, eps=1.0)
        path = sorted(tmp_path.glob("*/report.json"))[-1]
        document = json.loads(path.read_text())
        if bound is not None:
            document["reference_audits"]["rmia"] = {
                "eps_lb": bound, "tpr_at_fpr": {"0.001": None, "0.01": caught},
            }  # fmt: skip
        path.write_text(json.dumps(document))
    entry = summarise(tmp_path)["mlp-e100"]
    assert entry["rmia"]["n"] == 2
    assert entry["rmia"]["mean"] == pytest.approx(1.5)
    assert entry["rmia_tpr_1pct"]["mean"] == pytest.approx(0.3)
    assert entry["o1"]["n"] == 3
