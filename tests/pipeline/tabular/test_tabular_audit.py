"""``panoramia-audit`` end to end on a tiny Adult configuration (real Lightning, sdv, xgboost)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from panoramia.pipeline.graph import STAGE_GRAPH
from panoramia.report.html import render_page
from panoramia.report.page_parts import PAGE_PARTS_FILE, PageParts
from tests.cli_support import run_audit, run_command
from tests.conftest import SMALL_NULL, TINY_AUDIT, shared_store
from tests.conftest import stage as stage_directory

BIN = Path(sys.executable).parent
TINY = [*TINY_AUDIT, "threads=1"]
HEADLINE = ("c_lb", "c_plus_eps_lb", "eps_tilde")


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's tabular artifact store, shared by every test and worker."""
    return shared_store(tmp_path_factory, "tabular-artifacts")


def audit(
    *args: str, artifacts: Path, run_dir: Path | None = None, console_script: bool = False
) -> subprocess.CompletedProcess:
    return run_audit(
        TINY, *args, artifacts=artifacts, run_dir=run_dir, console_script=console_script
    )


def test_audit_writes_a_full_report(artifacts: Path, tmp_path: Path) -> None:
    default_null = [o for o in TINY if o != SMALL_NULL]  # the shipped 999 draws
    done = run_audit(default_null, "audit.slices=[sex,age]", artifacts=artifacts,
                     run_dir=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    for key in (
        "c_lb",
        "c_plus_eps_lb",
        "eps_tilde",
        "confidence",
        "m",
        "baseline",
        "attack",
        "reference_audits",
        "seed",
        "config",
        "timings",
        "target",
        "data",
        "versions",
    ):
        assert key in report, key
    assert report["schema_version"] == "1.10"
    attacker = report["attacker"]  # what an attacker gains, beside what the data alone gives
    for side in ("attack", "baseline"):
        terms = attacker[side]
        assert terms["auc"] == report[side]["roc"]["auc"]
        # the false-positive side: the audit's ~100 generated non-members (m = 200 slots) and
        # the pool drawn beside them up to audit.fpr_negatives=200 (x 1.1): 1 % is read, 0.1 %
        # cannot be
        negatives = report["m"] - report["data"]["game"]["members_in_audit"]
        pool = report["data"]["synthetic"]["pool"]
        assert pool == 220 - 100  # 1.1 x 200, less half the audit's 200 synthetic rows
        assert terms["fpr_negatives"] == negatives + pool
        assert terms["tpr_at_fpr"]["0.001"] is None
        assert terms["tpr_at_fpr_interval"]["0.001"] is None
        low, high = terms["tpr_at_fpr_interval"]["0.01"]
        assert low <= terms["tpr_at_fpr"]["0.01"] <= high
        assert terms["auc_interval"][0] <= terms["auc"] <= terms["auc_interval"][1]
        assert 0 <= terms["advantage"] <= 1
        assert 0 <= terms["top_precision"] <= 1
    assert attacker["flagged"] == min(report["attack"]["r"], 20)  # at most 10 % of m = 200
    assert attacker["sentence"].startswith("Flagging the ")
    assert "two-sided game" in attacker["sentence"]
    exposure = report["exposure"]  # her most exposed records and groups
    assert exposure["members"] == report["data"]["game"]["members_in_audit"]
    assert len(exposure["records"]) == 10
    scores = [record["score"] for record in exposure["records"]]
    assert scores == sorted(scores, reverse=True)
    assert set(exposure["records"][0]["values"]) >= {"income", "sex", "age"}
    assert {g["column"] for g in exposure["groups"]} == {"income", "sex", "age"}
    assert (
        sum(g["members"] for g in exposure["groups"] if g["column"] == "sex")
        == (exposure["members"])
    )
    assert all(g["small"] == (g["members"] < 20) for g in exposure["groups"])
    for group in exposure["groups"]:  # each tested against the baseline's share
        assert {"column", "value", "members", "share", "baseline_share", "interval", "p",
                "stands_out"} <= set(group)  # fmt: skip
        assert (group["p"] is None) == group["small"]
        assert group["stands_out"] == (group["p"] is not None and group["p"] <= 0.05)
    assert report["detectable"]["members"] == report["data"]["game"]["members_in_audit"]
    assert report["detectable"]["eps_tilde_max"] > 0
    found = report["verdict"]
    assert found["level"] in ("no_leak_detected", "borderline", "leak_detected", "clear_leak")
    assert found["sentence"].endswith(".")
    null = report["null"]  # the in-audit null of the quoted game (docs/SPEC.md §3.1)
    assert null["game"] == found["quote"]["game"] == "two_sided"
    assert null["draws"] == 999
    assert null["ensemble"] == 3
    assert null["detected"] == (null["observed"] > null["threshold"])
    decision = found["decision"]  # the null and the held-out rows' tests, at one α (§3.1, 8)
    # RM;RN reads content: not in the decision; RMIA joins O(1) on tables (RESULTS §28)
    assert decision["tests"] == ["null", "o1", "rmia"]
    assert found["detected"] == (decision["p_value"] <= 0.05)
    assert set(found["quote"]["calls"]) == {"member", "nonmember"}
    assert found["next_steps"]
    assert all(isinstance(step, str) and step for step in found["next_steps"])
    assert found["quote"]["interval"] == null["interval"]
    assert found["quote"]["value"] == pytest.approx(report["two_sided"]["eps_tilde"])
    assert found["false_alarm_rate"] == 0.05
    assert report["eps_tilde"] == pytest.approx(max(0.0, report["c_plus_eps_lb"] - report["c_lb"]))
    assert report["m"] == 200
    assert report["data"]["game"]["m"] == 200
    assert report["reference_audits"]["o1"]["n"] == 200
    assert report["reference_audits"]["rmrn"]["eps_lb"] >= 0
    assert len(report["target"]["identity"]["sha256"]["weights"]) == 64
    assert len(report["attack"]["table"]["tau"]) == 100
    assert report["attack"]["distinguisher"]["chosen"]["validation_theta_lb"] >= 0
    assert set(report["timings"]) >= {"data", "target", "generator", "helper", "attack"}
    page = (tmp_path / "report.html").read_text()
    # the page is a pure function of what the service stores: the document and its charts
    parts = PageParts.model_validate_json((tmp_path / PAGE_PARTS_FILE).read_text())
    assert render_page(report, parts) == page
    # one chart an image: the null, the two-sided game's two sides, precision, θ_lb, ROC, and
    # the losses under f, h and the first stand-in
    assert page.count('<img src="data:image/png;base64,') == 9
    assert page.count('" alt="') == 9  # each image says what it shows
    assert page.index("What an attacker gains") < page.index("Which of your records")
    assert page.index("Which of your records") < page.index("Charts that back the figure")
    assert "Words on this page" in page
    assert "<dl id=words>" in page  # the glossary link opens its closed <details>
    assert "What to do next" in page
    assert page.index("Finding your records") < page.index("Flagging the ")  # member side first
    assert 'aria-label="scrollable table"' not in page  # each region named after its table
    lead = "No group stands out" if not exposure["standing_out"] else "stand"
    assert lead in page
    assert '<html lang="en">' in page
    assert "not a lower bound on ε" in page
    assert "figure to quote" in page
    # results on stdout, progress on stderr
    assert str(tmp_path / "report.html") in done.stdout
    quoted = f"ε̃ = {found['quote']['value']:.2f} (two-sided game, this run's 90% interval"
    assert quoted in done.stdout
    assert "ε̃ = " not in done.stderr
    assert "Epoch" not in done.stdout
    assert report["claim"]["summary"]["claim"] == {"kind": "none"}
    assert report["claim"]["violation"] is False
    two_sided = report["two_sided"]  # the game with non-member guesses, beside the paper's
    assert two_sided["n_pairs"] == 5050
    assert two_sided["eps_tilde"] == pytest.approx(
        max(0.0, two_sided["c_plus_eps_lb"] - two_sided["c_lb"])
    )
    assert two_sided["rmrn"]["eps_lb"] >= 0
    assert "two-sided game" in page
    # The fair baseline (docs/SPEC.md §2.7): 3 stand-ins on real examples no game sees, and
    # 3 distinguishers averaged per side.
    assert report["sides"] == {"attack": "target+helper", "baseline": "stand_in+helper"}
    assert [s["training_data"] for s in report["stand_ins"]] == ["real non-members + D_G"] * 3
    assert len(report["baseline"]["distinguisher"]["ensemble"]) == 3

    def table(name: str, file: str) -> pd.DataFrame:
        return pd.read_parquet(stage_directory(artifacts, report, name) / f"{file}.parquet")

    training = table("stand_in_1", "stand_in_training")
    assert len(training) == report["stand_ins"][0]["examples"] == 800  # as many as the members
    known = pd.concat([table("generator_data", "member_generator"), table("data", "nonmembers")])
    parts = ("audit", "attack_train", "attack_val")
    audited = pd.concat(table("split", f"member_{part}") for part in parts)
    columns = list(training.columns)
    assert len(training.merge(known.drop_duplicates(), on=columns)) == len(training)
    # no stand-in row is an audited or distinguisher member (beyond rows Adult holds twice)
    shared = training.merge(audited.drop_duplicates(), on=columns)
    assert len(shared) <= len(known.merge(audited.drop_duplicates(), on=columns))
    # The reference attack (docs/SPEC.md §2.4): the members outside D_G against the reserved
    # half of the held-out rows, which no stand-in trained on
    from panoramia.pipeline.stages.reference_rows import reserved_nonmembers

    rmia = report["reference_audits"]["rmia"]
    nonmembers = table("data", "nonmembers")
    reserved = reserved_nonmembers(report["config"]["generation_seed"] or 0, len(nonmembers))
    assert rmia["members"] == 800 - len(table("generator_data", "member_generator"))
    assert rmia["nonmembers"] == reserved.size == len(nonmembers) // 2
    assert rmia["references"] == 3
    assert rmia["offline_a"] == 0.3
    assert rmia["decides"] is True  # tables: RMIA joins the decision (RESULTS §28)
    assert rmia["realised_fpr"]["0.01"] <= 0.01
    low, high = rmia["tpr_at_fpr_interval"]["0.01"]
    assert low <= rmia["tpr_at_fpr"]["0.01"] <= high
    assert rmia["test"]["n"] == min(rmia["members"], rmia["nonmembers"])  # one slot a pair
    assert report["reference_audits"]["lira"]["members"] == rmia["members"]
    scored = nonmembers.iloc[reserved].drop_duplicates()
    unscored = nonmembers.drop(index=nonmembers.index[reserved]).drop_duplicates()
    in_training = training.merge(scored, on=columns)
    assert len(in_training) <= len(scored.merge(pd.concat([unscored, known]), on=columns))
    rows = np.load(stage_directory(artifacts, report, "reference_rows") / "reference_rows.npz")
    assert rows["stand_ins"].shape == (3, rmia["members"] + rmia["nonmembers"])
    assert not list(stage_directory(artifacts, report, "reference_rows").glob("*.parquet"))
    reference_first = page.index("An attacker with reference models (RMIA")
    assert reference_first < page.index("Finding your records")
    by_group = report["exposure"]["reference_groups"]  # RMIA by group, family-wise (§2.4)
    assert by_group["tested"] is True
    assert {g["column"] for g in by_group["groups"]} == {"income", "sex", "age"}
    sexes = [g for g in by_group["groups"] if g["column"] == "sex"]
    assert sum(g["members"] + g["nonmembers"] for g in sexes) == len(rows["member"])
    assert by_group["standing_out"] == sum(g["stands_out"] for g in by_group["groups"])
    assert "With reference models" in page
    attack = stage_directory(artifacts, report, "attack")
    scores = [np.load(attack / f"scores_{k}.npz")["scores"] for k in range(3)]
    mean = np.load(attack / "scores.npz")["scores"]
    assert np.allclose(np.mean(scores, axis=0), mean)
    assert 0.4 <= report["data"]["synthetic"]["real_vs_synthetic_auc"] <= 1.0
    assert "real-vs-synthetic AUC" in page
    assert "two-sided game (docs/SPEC.md §2.6" in done.stdout


def test_declared_claims_beside_the_audit(artifacts: Path, tmp_path: Path) -> None:
    """A strong claim is beaten by games of generated non-members, which are listed as
    inconclusive, never as a violation (the tiny copula's rows, which the baseline separates
    as the attack does; CART's are not separable at this size); a tuned DP-SGD claim is
    summarised with its trade-off plane, reusing the audit's finished stages."""
    strong = audit("claim.kind=eps_delta", "claim.epsilon=0.01", "claim.delta=0",
                   "generator=gaussian_copula", artifacts=artifacts,
                   run_dir=tmp_path / "strong")  # fmt: skip
    assert strong.returncode == 0, strong.stderr[-3000:]
    section = json.loads((tmp_path / "strong" / "report.json").read_text())["claim"]
    assert section["consistency"]["attack"]["consistent"] is False
    assert section["consistency"]["attack"]["empirical_epsilon"] > 0.01
    # The baseline separates the copula's rows too: the attack is no evidence.
    assert section["consistency"]["baseline"]["consistent"] is False
    assert section["inconclusive"] == ["attack", "baseline"]
    assert section["violated_by"] in ([], ["rmrn"])  # real non-members alone can contradict it
    page = (tmp_path / "strong" / "report.html").read_text()
    assert "<p class=note>The attack and baseline operating points beat the claimed" in page
    assert ("<p class=banner>" in page) is section["violation"]
    assert page.count('<img src="data:image/png;base64,') == 10  # and the claim's trade-off plane
    tuned = audit("claim.kind=dpsgd", "claim.noise_multiplier=1.0", "claim.sample_rate=0.01",
                  "claim.epochs=2", "claim.tuning.kind=geometric", "claim.tuning.mean=10",
                  artifacts=artifacts, run_dir=tmp_path / "tuned")  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    section = json.loads((tmp_path / "tuned" / "report.json").read_text())["claim"]
    summary = section["summary"]
    assert summary["claim"]["phases"][0]["steps"] == 200
    assert summary["tuned"][0]["tuned_epsilon"] > summary["tuned"][0]["single_run_epsilon"]
    assert set(section["consistency"]) == {"attack", "baseline", "rmrn"}
    assert any("No membership attack exceeds TPR" in line for line in section["statements"])
    assert any(line.startswith("Tuning (") for line in section["statements"])


def test_rerun_reuses_every_stage_and_gives_the_same_report(
    artifacts: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert audit(artifacts=artifacts, run_dir=first).returncode == 0
    # The installed script, in an interpreter with its own hash seed: the keys must match.
    done = audit(artifacts=artifacts, run_dir=second, console_script=True)
    assert done.returncode == 0
    assert done.stderr.count(": reused (") == 21
    assert ": running" not in done.stderr
    reports = [json.loads((d / "report.json").read_text()) for d in (first, second)]
    assert [r[k] for k in HEADLINE for r in reports[:1]] == [reports[1][k] for k in HEADLINE]


def test_killed_during_the_attack_resumes_from_finished_stages(
    artifacts: Path, tmp_path: Path
) -> None:
    # Seed 13 (no other test's) with the default audit's generator: the generation stages
    # are reused, the attack is this test's own.
    own = ("generation_seed=0", "seed=13")
    command = [
        str(BIN / "panoramia-audit"),
        *TINY,
        f"artifacts_dir={artifacts}",
        *own,
        f"hydra.run.dir={tmp_path / 'killed'}",
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stderr is not None
    for line in process.stderr:
        if "attack: running" in line:
            os.killpg(process.pid, signal.SIGKILL)
            break
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed" / "report.json").exists()
    # Its own half-written attack (named with its pid; other workers' may be there too).
    leftovers = [
        d for d in (artifacts / "attack").glob(".partial-*") if f"-{process.pid}-" in d.name
    ]
    assert all(not (d / "_done.json").exists() for d in leftovers)  # never published
    resumed = audit(*own, artifacts=artifacts, run_dir=tmp_path / "resumed")
    assert resumed.returncode == 0
    assert not any(d.exists() for d in leftovers)  # swept: its process is gone
    assert (
        resumed.stderr.count(": reused (") == 19
    )  # everything before the attack (stand-ins, their losses and the reference rows included)
    fresh = audit(*own, artifacts=tmp_path / "fresh", run_dir=tmp_path / "clean")
    reports = [json.loads((tmp_path / d / "report.json").read_text()) for d in ("resumed", "clean")]
    assert [reports[0][k] for k in HEADLINE] == [reports[1][k] for k in HEADLINE]
    assert fresh.returncode == 0


def test_a_fixed_generation_seed_reuses_the_generator_and_resplits_the_rest(
    artifacts: Path, tmp_path: Path
) -> None:
    """seed=3 with generation_seed=0 keeps D_G, the generator, the synthetic pool and h of the
    seed-0 audit, and draws other members and other pooled synthetic rows for the attack,
    the validation and the audit (disjoint from D_G)."""
    runs = {"seed0": (), "seed3": ("generation_seed=0", "seed=3")}
    reports, stderr = {}, {}
    for name, overrides in runs.items():
        done = audit(*overrides, artifacts=artifacts, run_dir=tmp_path / name)
        assert done.returncode == 0, done.stderr[-3000:]
        reports[name] = json.loads((tmp_path / name / "report.json").read_text())
        stderr[name] = done.stderr
    keys = {name: {s: t["key"] for s, t in r["timings"].items()} for name, r in reports.items()}
    for stage in ("generator_data", "generator", "synthetic", "helper"):
        assert keys["seed0"][stage] == keys["seed3"][stage], stage
    for stage in ("split", "synthetic_split", "game", "attack", "baseline"):
        assert keys["seed0"][stage] != keys["seed3"][stage], stage
    assert (
        stderr["seed3"].count(": running") == 11
    )  # split … attack_rmrn, the 3 stand-ins' losses included

    def rows(stage: str, run: str, name: str) -> set[tuple]:
        frame = pd.read_parquet(artifacts / stage / keys[run][stage] / f"{name}.parquet")
        return set(frame.itertuples(index=False, name=None))

    generator_rows = rows("generator_data", "seed0", "member_generator")
    for run in runs:
        audited = rows("split", run, "member_audit")
        assert audited.isdisjoint(generator_rows)
        assert audited.isdisjoint(rows("split", run, "member_attack_train"))
    assert rows("split", "seed0", "member_audit") != rows("split", "seed3", "member_audit")
    pooled = {
        run: {n: rows("synthetic_split", run, f"synthetic_{n}") for n in ("attack_train", "audit")}
        for run in runs
    }
    assert pooled["seed0"]["audit"] != pooled["seed3"]["audit"]
    pool = rows("synthetic", "seed0", "synthetic_audit") | rows(
        "synthetic", "seed0", "synthetic_attack_train"
    )
    assert pooled["seed3"]["audit"] <= pool | rows("synthetic", "seed0", "synthetic_attack_val")
    assert pooled["seed3"]["audit"].isdisjoint(rows("synthetic", "seed0", "synthetic_helper"))


def test_attack_with_the_helpers_losses_too(artifacts: Path, tmp_path: Path) -> None:
    """audit.attack_side=target+helper (the default: f's and h's losses) and target (the
    paper's: f's only) differ in the attacks only; the baseline and every earlier stage are
    shared."""
    runs = {"target": ("audit.attack_side=target",), "both": ()}
    keys, stderr = {}, {}
    for name, overrides in runs.items():
        done = audit(*overrides, artifacts=artifacts, run_dir=tmp_path / name)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads((tmp_path / name / "report.json").read_text())
        keys[name] = {stage: timing["key"] for stage, timing in report["timings"].items()}
        stderr[name] = done.stderr
    changed = {stage for stage in keys["target"] if keys["target"][stage] != keys["both"][stage]}
    assert changed == {"attack", "attack_rmrn"}
    # Nothing but the attacks re-runs (they may be reused too: the store is the session's).
    assert stderr["both"].count(": reused (") >= 12
    record = json.loads((artifacts / "attack" / keys["both"]["attack"] / "_done.json").read_text())
    assert set(record["inputs"]) >= {"losses_target", "losses_helper"}


def test_a_control_that_knows_d_g_trains_on_the_pool_and_d_g_only(
    artifacts: Path, tmp_path: Path
) -> None:
    """target.members=disjoint+generator_data (docs/SPEC.md §1.1): the control's training set
    is the control pool and D_G, never a member the distinguishers or the game see; its stage
    key follows the generation seed, and the summary counts it as a control."""
    from panoramia.pipeline.summary import _records

    sweep = tmp_path / "sweep"
    done = run_command(
        ["-m", *TINY, f"artifacts_dir={artifacts}", "target.members=disjoint+generator_data",
         "target.name=knows-dg", "generation_seed=0,1", f"hydra.sweep.dir={sweep}"]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [json.loads(path.read_text()) for path in sorted(sweep.glob("*/report.json"))]
    assert len(reports) == 2
    assert reports[0]["timings"]["target"]["key"] != reports[1]["timings"]["target"]["key"]
    for report in reports:
        pool = pd.read_parquet(stage_directory(artifacts, report, "data") / "control_pool.parquet")
        d_g = pd.read_parquet(
            stage_directory(artifacts, report, "generator_data") / "member_generator.parquet"
        )
        assert report["target"]["trained_on"] == len(pool) + len(d_g)
    assert all(record["control"] for record in _records(sweep))


def test_reference_models_on_both_sides(artifacts: Path, tmp_path: Path) -> None:
    """audit.attack_side=target+helper+reference_models (docs/SPEC.md §2.7): each distinguisher of
    the attack and of the baseline also sees the other stand-ins' losses; only the
    distinguisher stages change."""
    done = audit("audit.attack_side=target+helper+reference_models",
                 "audit.baseline_side=stand_in+helper+reference_models",
                 artifacts=artifacts, run_dir=tmp_path / "reference")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "reference" / "report.json").read_text())
    assert report["sides"]["attack"] == "target+helper+reference_models"
    # the stand-ins saw the data's real non-members: no RM;RN with them as references
    assert report["reference_audits"]["rmrn"] is None
    assert "attack_rmrn" not in report["timings"]
    plain = audit(artifacts=artifacts, run_dir=tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr[-3000:]
    other = json.loads((tmp_path / "plain" / "report.json").read_text())
    # the baseline's inputs are the same stages; its key still tells the layouts apart
    assert other["timings"]["baseline"]["key"] != report["timings"]["baseline"]["key"]
    stand_ins = {f"losses_stand_in_{i}" for i in (1, 2, 3)}
    for stage in ("attack", "baseline"):
        record = json.loads((stage_directory(artifacts, report, stage) / "_done.json").read_text())
        assert set(record["inputs"]) >= stand_ins | {"losses_helper"}
    assert (
        "losses_target"
        in json.loads((stage_directory(artifacts, report, "attack") / "_done.json").read_text())[
            "inputs"
        ]
    )
    # Every stage read only stages its entry of the declared graph names, in the graph's order.
    assert list(report["timings"]) == [n for s in STAGE_GRAPH for n in _planned(s, report)]
    for name in report["timings"]:
        record = json.loads((stage_directory(artifacts, report, name) / "_done.json").read_text())
        declared = set(SPECS[_spec_of(name)].inputs)
        assert {_spec_of(i) for i in record["inputs"]} <= declared, name


SPECS = {spec.name: spec for spec in STAGE_GRAPH}


def _spec_of(stage: str) -> str:
    """The graph entry that makes ``stage`` (``stand_in_2``: ``stand_in``)."""
    head, _, index = stage.rpartition("_")
    return head if index.isdigit() and head in SPECS else stage


def _planned(spec, report: dict) -> list[str]:  # type: ignore[no-untyped-def]
    return [name for name in report["timings"] if _spec_of(name) == spec.name]


def test_a_tree_target_is_attacked_with_reference_models_of_its_recipe(
    artifacts: Path, tmp_path: Path
) -> None:
    """A gradient-boosted target's reference attack reads reference models of its own recipe
    (docs/SPEC.md §2.4), one per stand-in, each trained on its own half of the stand-ins'
    examples, never on a scored row; the stand-ins, the game and its figures are those of
    the same audit without them, and an MLP target keeps the stand-ins as references."""
    from panoramia.pipeline.stages.reference_rows import reserved_nonmembers

    trees = ["target=xgboost", "target.n_estimators=30", "target.max_depth=3"]
    done = audit(*trees, artifacts=artifacts, run_dir=tmp_path / "trees")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "trees" / "report.json").read_text())
    models = [f"reference_model_{i}" for i in (1, 2, 3)]
    assert set(models) <= set(report["timings"])
    rows_stage = stage_directory(artifacts, report, "reference_rows")
    record = json.loads((rows_stage / "_done.json").read_text())
    assert set(record["inputs"]) >= set(models)
    assert not {f"stand_in_{i}" for i in (1, 2, 3)} & set(record["inputs"])
    assert record["info"]["reference_recipe"] == "target"
    nonmembers = pd.read_parquet(stage_directory(artifacts, report, "data") / "nonmembers.parquet")
    scored = nonmembers.iloc[reserved_nonmembers(report["config"]["generation_seed"] or 0,
                                                 len(nonmembers))]  # fmt: skip
    halves = []
    for name in models:
        directory = stage_directory(artifacts, report, name)
        manifest = json.loads((directory / "target.json").read_text())
        assert manifest["format"] == "xgboost-json"
        training = pd.read_parquet(directory / "reference_training.parquet")
        halves.append(training)
        # no scored held-out row is among its examples but as a duplicate of an unscored one
        unscored = nonmembers.drop(index=scored.index)
        assert len(training.merge(scored.drop_duplicates())) <= len(
            scored.drop_duplicates().merge(pd.concat([unscored, training]).drop_duplicates())
        )
    assert len({len(h) for h in halves}) == 1
    assert not halves[0].equals(halves[1])  # each its own half
    rmia = report["reference_audits"]["rmia"]
    assert rmia["references"] == 3
    rows = np.load(rows_stage / "reference_rows.npz")
    assert rows["stand_ins"].shape == (3, rmia["members"] + rmia["nonmembers"])
    assert not np.allclose(rows["stand_ins"][0], rows["stand_ins"][1])
    # an MLP target's reference rows read the stand-ins, as before
    plain = audit(artifacts=artifacts, run_dir=tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr[-3000:]
    mlp = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert not any(name.startswith("reference_model") for name in mlp["timings"])
    inputs = json.loads(
        (stage_directory(artifacts, mlp, "reference_rows") / "_done.json").read_text()
    )
    assert {f"stand_in_{i}" for i in (1, 2, 3)} <= set(inputs["inputs"])


def test_multirun_ends_with_a_summary(artifacts: Path, tmp_path: Path) -> None:
    done = run_command(
        ["-m", *TINY, f"artifacts_dir={artifacts}", "seed=0,7", f"hydra.sweep.dir={tmp_path}"]
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["mlp-e10"]["runs"] == 2
    assert summary["mlp-e10"]["generation_seeds"] == [0, 7]  # unset: it follows seed
    assert len(list(tmp_path.glob("*/report.json"))) == 2
    stats = summary["mlp-e10"]["eps_tilde"]
    assert stats["ci_low"] <= stats["mean"] <= stats["ci_high"]
    assert "multirun summary" in done.stdout


def test_multirun_summarises_each_setting_apart(artifacts: Path, tmp_path: Path) -> None:
    """A sweep over a setting (not only seeds) keeps every run and summarises each value."""
    done = run_command(
        ["-m", *TINY, f"artifacts_dir={artifacts}", "seed=0,7",
         "audit.attack_side=target,target+helper", f"hydra.sweep.dir={tmp_path}"]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list(tmp_path.glob("*/report.json"))) == 4
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == {
        "mlp-e10 [audit.attack_side=target]",
        "mlp-e10 [audit.attack_side=target+helper]",
    }
    assert all(row["runs"] == 2 for row in summary.values())


def test_launcher_configs_compose() -> None:
    for launcher, target in (("local_parallel", "joblib"), ("slurm", "submitit")):
        done = run_command([f"hydra/launcher={launcher}", "--cfg", "hydra"])
        assert done.returncode == 0, done.stderr
        assert target in done.stdout


def test_own_csv_and_own_target_directory(artifacts: Path, tmp_path: Path) -> None:
    from panoramia.modalities.tabular.adult import SCHEMA, load_adult
    from panoramia.modalities.tabular.training import MlpConfig, train_mlp_directory

    train, test = load_adult()
    members = train.iloc[:800]
    members.to_csv(tmp_path / "members.csv", index=False)
    test.iloc[:400].to_parquet(tmp_path / "nonmembers.parquet")
    train_mlp_directory(
        members, SCHEMA, MlpConfig(epochs=3, hidden=[16, 8]), tmp_path / "model", seed=0
    )
    columns = [
        "data=csv", f"data.members_path={tmp_path / 'members.csv'}",
        f"data.nonmembers_path={tmp_path / 'nonmembers.parquet'}", "data.label=income",
        f"data.categorical=[{','.join(SCHEMA.categorical)}]",
        f"data.continuous=[{','.join(SCHEMA.continuous)}]",
        "target=path", f"target.path={tmp_path / 'model'}",
    ]  # fmt: skip
    done = audit(*columns, artifacts=artifacts, run_dir=tmp_path / "run")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["target"]["kind"] == "path"
    assert report["target"]["name"] == "model"  # a brought model is called by its folder
    assert report["target"]["identity"]["format"] == "torch-safetensors"
    assert report["data"]["source"] == "csv"
    o1 = report["reference_audits"]["o1"]  # her own held-out rows: a figure (SPEC §3.1 l. 8)
    assert (o1["unit"], o1["randomised"]) == ("example", False)
    assert report["verdict"]["decision"]["tests"] == ["null"]

    # the same audit with a data file missing a declared column: one line, exit 2
    members.drop(columns=["age"]).to_csv(tmp_path / "broken.csv", index=False)
    broken = [
        c
        if not c.startswith("data.members_path")
        else f"data.members_path={tmp_path / 'broken.csv'}"
        for c in columns
    ]
    done = audit(*broken, artifacts=artifacts, run_dir=tmp_path / "run")
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "has: workclass, education, "
            "marital-status, occupation, "
            "relationship, race, sex, "
            "native-country, fnlwgt, "
            "education-num, capital-gain, "
            "capital-loss, hours-per-week, income"
        )
    )
    assert "missing declared column(s) 'age'" in done.stderr
    assert (tmp_path / "run" / "report.json").exists()  # the earlier report is intact

    # a pickle where safetensors is required
    weights = tmp_path / "model" / "model.safetensors"
    weights.write_bytes(b"\x80\x04\x95" + b"\x00" * 64)
    done = audit(*columns, artifacts=artifacts, run_dir=tmp_path / "run")
    assert done.returncode == 2
    assert "not a safetensors file" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("foo=1", "Key 'foo' not in 'TabularJobConfig'"),
        ("audit.confidence=high", "could not be converted to Float"),
        ("target=nope", "Could not find 'target/nope'"),
        ("data=csv", "data.members_path: required"),
        ("claim.kind=dpsgd", "claim.noise_multiplier: required"),
        ("claim.tuning.kind=dice", "claim.tuning.kind: must be"),
        ("audit.attack_side=both", "audit.attack_side: 'both' is not one of"),
        ("audit.baseline_side=f", "audit.baseline_side: 'f' is not one of"),
        ("audit.stand_in.training_data=audit", "audit.stand_in.training_data: 'audit' is not"),
        # every setting has a range, checked before any work (panoramia/audit_settings.py)
        ("generator.filter.real_quantile=7", "real_quantile: 7.0 is not in [0, 1]"),
        ("target.epochs=-5", "target.epochs: -5 is not an integer in [1,"),
        ("helper.epochs=-1", "helper.epochs: -1 is not an integer in [1,"),
        ("generator.point_mass=-2", "generator.point_mass: -2.0 is not in [0, 1]"),
        ("generator.filter.max_drop=0.9999999", "max_drop: 0.9999999 is not in [0, 0.99]"),
        ("generator.filter.extra_fraction=1e9", "extra_fraction: 1000000000.0 is not in (0, 100]"),
        ("audit.ensemble=0", "audit.ensemble: 0 is not an integer in [1, 64]"),
        ("seed=-1", "seed: -1 is not an integer in [0, 4294967295]"),
        ("target.hidden=[" + ",".join(["64"] * 33) + "]", "target.hidden: 33 entries, at most 32"),
        ("+nonexistent=1", "+nonexistent: not a setting"),
        ("target.members=some", "target.members: 'some' is not one of same, disjoint, "),
        (
            "audit.attack_side=target+helper+reference_models",
            "goes with audit.baseline_side=stand_in+",
        ),
        ("data.split.audit=0.9", "data.split: the fractions add up to more than 1"),
        ("audit.thresholds=grid:1", "audit.thresholds: 'grid:1' is not one of grid:K"),
    ],
)
def test_bad_config_exits_2_with_one_line(override: str, message: str, tmp_path: Path) -> None:
    done = run_command([override, f"hydra.run.dir={tmp_path}"])
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert message in done.stderr


def test_embedded_scores_still_measure_through_the_cli(official_scores_path: Path) -> None:
    frame = pd.read_csv(official_scores_path)
    assert len(frame) == 11023  # the embedded copy is the CLI's conformance input


def test_a_brought_model_with_other_label_values_fails_at_the_target_stage(tmp_path: Path) -> None:
    """A scikit-learn model trained on 0/1 for a CSV that says ``<=50K``/``>50K``: the audit
    ends at stage 2 (before any generator work) with one line naming both sets and the fix."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from panoramia.modalities.tabular.adult import load_adult

    train, test = load_adult()
    train.iloc[:1500].to_csv(tmp_path / "members.csv", index=False)
    test.iloc[:1500].to_csv(tmp_path / "held_out.csv", index=False)
    features = ["age", "hours-per-week"]
    labels = train.iloc[:1500]["income"].astype(str).str.contains(">").astype(int)
    model = LogisticRegression(max_iter=500).fit(train.iloc[:1500][features], labels)
    (tmp_path / "model").mkdir()
    sio.dump(model, tmp_path / "model" / "model.skops")
    schema = {"label": "income", "categorical": [], "continuous": features}
    (tmp_path / "model" / "target.json").write_text(
        json.dumps({"format": "skops", "file": "model.skops", "schema": schema})
    )
    done = run_command([
        "data=csv", f"data.members_path={tmp_path / 'members.csv'}",
        f"data.nonmembers_path={tmp_path / 'held_out.csv'}", "data.label=income",
        "data.categorical=[sex]", "data.continuous=[age,hours-per-week]",
        "target=path", f"target.path={tmp_path / 'model'}", f"hydra.run.dir={tmp_path / 'run'}",
    ])  # fmt: skip
    assert done.returncode == 2
    assert "[2/" not in done.stdout + done.stderr  # nothing after the data stage ran
    line = done.stderr.strip().splitlines()[-1]
    assert "the data's values ['<=50K', '>50K'] are not the model's classes ['0', '1']" in line
    assert '"classes" in target.json' in line


def test_a_csv_without_declared_columns_gets_its_schema_from_their_types(
    artifacts: Path, tmp_path: Path
) -> None:
    from panoramia.modalities.tabular.adult import SCHEMA, load_adult

    train, test = load_adult()
    train.iloc[:800].to_csv(tmp_path / "members.csv", index=False)
    test.iloc[:400].to_csv(tmp_path / "held_out.csv", index=False)
    done = audit(
        "data=csv", f"data.members_path={tmp_path / 'members.csv'}",
        f"data.nonmembers_path={tmp_path / 'held_out.csv'}", "data.label=income",
        artifacts=artifacts, run_dir=tmp_path / "run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stderr.splitlines() if x.startswith("data: no data.categorical"))
    assert f"'data.categorical=[{','.join(SCHEMA.categorical)}]'" in line
    assert f"'data.continuous=[{','.join(SCHEMA.continuous)}]'" in line
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["data"]["members"] == 800

    one_class = train.iloc[:300].assign(income="<=50K")
    one_class.to_csv(tmp_path / "one_class.csv", index=False)
    done = audit(
        "data=csv", f"data.members_path={tmp_path / 'one_class.csv'}", "data.label=income",
        artifacts=artifacts, run_dir=tmp_path / "bad",
    )  # fmt: skip
    assert done.returncode == 2
    assert "[2/" not in done.stderr  # before any other stage
    last = done.stderr.strip().splitlines()[-1]
    assert "label 'income' takes one value only ('<=50K')" in last


def test_an_xgboost_model_as_people_save_it_audits_with_file_and_classes_only(
    artifacts: Path, tmp_path: Path
) -> None:
    """An XGBClassifier trained on a pandas frame (category columns, enable_categorical,
    labels 0/1) and saved with save_model; target.json names only the file and the classes;
    the CSV's columns are read off their types."""
    import xgboost as xgb

    from panoramia.modalities.tabular.adult import SCHEMA, load_adult

    train, test = load_adult()
    members = train.iloc[:800]
    members.to_csv(tmp_path / "members.csv", index=False)
    test.iloc[:400].to_csv(tmp_path / "held_out.csv", index=False)
    features = members.drop(columns=["income"]).copy()
    for column in SCHEMA.categorical:
        features[column] = features[column].astype("category")
    model = xgb.XGBClassifier(n_estimators=30, max_depth=4, enable_categorical=True)
    model.fit(features, (members["income"] == ">50K").astype(int))
    (tmp_path / "forest").mkdir()
    model.save_model(tmp_path / "forest" / "model.json")
    manifest = {"format": "xgboost-json", "file": "model.json", "classes": ["<=50K", ">50K"]}
    (tmp_path / "forest" / "target.json").write_text(json.dumps(manifest))
    done = audit(
        "data=csv", f"data.members_path={tmp_path / 'members.csv'}",
        f"data.nonmembers_path={tmp_path / 'held_out.csv'}", "data.label=income",
        "target=path", f"target.path={tmp_path / 'forest'}",
        artifacts=artifacts, run_dir=tmp_path / "run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["target"]["name"] == "forest"
    assert report["target"]["identity"]["format"] == "xgboost-json"
    assert report["verdict"]["level"] in ("leak_detected", "no_leak_detected", "inconclusive")
