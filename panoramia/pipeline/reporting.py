"""From finished stages to the measurement and the report files of one run."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from panoramia.accounting.claims import Claim
from panoramia.accounting.report_section import ClaimSection, claim_section
from panoramia.measure import measure, o1_audit, rmrn
from panoramia.measure.null import NullTest, mirrored, null_test
from panoramia.measure.two_sided import (
    NoTwoSidedGame,
    measure_two_sided,
    rmrn_two_sided,
    two_sided_grid,
)
from panoramia.pipeline.config import ModalityJob
from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages import StageResult, StageRunner
from panoramia.report.attacker import attacker_section
from panoramia.report.document import report_document
from panoramia.report.exposure import exposure_section
from panoramia.report.gdp import gdp_section
from panoramia.report.html import render_html
from panoramia.report.schema import ReportDocument
from panoramia.report.verdict import verdict


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that a reader never sees a half-written file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def _scores(stage: StageResult) -> dict[str, np.ndarray]:
    return dict(np.load(stage.directory / "scores.npz"))


def claimed_guarantee(job: ModalityJob, target_info: dict) -> tuple[Claim, str]:
    """The guarantee shown beside the measurement, and where it comes from: the config's
    ``claim.*`` (``declared``), else the DP-SGD training of a demo target that happened in this
    audit (``training``: σ, q, T and N as Opacus ran them), else none."""
    from panoramia.accounting.claims import DpSgdClaim
    from panoramia.accounting.dpsgd import check_accountable
    from panoramia.errors import InputError

    declared = job.claim.to_claim()
    facts = target_info.get("dp_sgd")
    if job.claim.kind != "none" or not facts or not facts["noise_multiplier"]:
        return declared, "declared" if job.claim.kind != "none" else "none"
    claim = DpSgdClaim.single_phase(
        facts["noise_multiplier"], sample_rate=facts["sample_rate"], steps=facts["steps"],
        dataset_size=facts["dataset_size"], neighbouring="add_remove",
    )  # fmt: skip
    try:
        check_accountable(claim)
    except InputError as error:  # e.g. so little noise that its privacy loss is unbounded here
        return declared, f"none (the training's claim cannot be accounted: {error})"
    return claim, "training"


def claimed_mu(section: ClaimSection) -> float | None:
    """The μ a claim guarantees under replace-one neighbours, the relation of the audit's game
    (docs/SPEC.md §2.8): μ* of the claim section's replace-one account (an add/remove DP-SGD
    claim re-accounted; its add/remove μ* would understate it, about twice as much for the
    demo's DP-SGD target). None for a bare (ε, δ), a tuned claim (its released curve is the
    tuned profile's) or no claim."""
    game = section.game_summary
    if game is None or game.mu is None or game.tuned:
        return None
    return float(game.mu)


def two_sided_section(
    job: ModalityJob,
    membership: np.ndarray,
    baseline: np.ndarray,
    attack: np.ndarray,
    rmrn_game: tuple[np.ndarray, np.ndarray] | None,
) -> dict[str, object]:
    """The two-sided game (docs/SPEC.md §2.6) on the audit's grid, beside the paper's figures;
    ``{"skipped": reason}`` where it does not apply
    (:func:`panoramia.measure.two_sided.two_sided_grid`)."""
    audit = job.audit
    try:
        grid = two_sided_grid(
            audit.thresholds, m=membership.size, gamma=audit.gamma, delta=audit.delta
        )
    except NoTwoSidedGame as reason:
        return {"skipped": str(reason)}
    section = measure_two_sided(
        membership, baseline_scores=baseline, attack_scores=attack, grid=grid,
        confidence=audit.confidence,
    ).to_dict()  # fmt: skip
    if rmrn_game is not None:
        scores, reference = rmrn_game
        section["rmrn"] = rmrn_two_sided(
            reference, scores, grid=grid, confidence=audit.confidence
        ).to_dict()
    return section


def _member_scores(stage: StageResult) -> np.ndarray:
    """The ensemble members' audit scores in seed order, (k, m) (k = 1: the stage's own)."""
    members = sorted(
        stage.directory.glob("scores_*.npz"), key=lambda path: int(path.stem.split("_")[1])
    )
    files = members or [stage.directory / "scores.npz"]
    return np.stack([np.load(path)["scores"] for path in files])


def null_section(
    job: ModalityJob, stages: dict[str, StageResult], membership: np.ndarray, game: str
) -> NullTest | dict[str, str]:
    """The quoted game's gap against this audit's null draws (docs/SPEC.md §3.1,
    :func:`panoramia.measure.null.null_test`); ``{"skipped": reason}`` when the baseline's side
    does not mirror the attack's (no null hypothesis makes the two exchangeable)."""
    audit = job.audit
    if not mirrored(audit.attack_side, audit.baseline_side):
        return {
            "skipped": f"the baseline does not see what the attack sees "
            f"(audit.baseline_side={audit.baseline_side} does not mirror "
            f"audit.attack_side={audit.attack_side}), so no null makes them exchangeable"
        }
    return null_test(
        membership, _member_scores(stages["attack"]), _member_scores(stages["baseline"]),
        game=game, thresholds=audit.thresholds, confidence=audit.confidence,
        gamma=audit.gamma, delta=audit.delta, draws=audit.null.draws,
        false_alarm_rate=audit.null.false_alarm_rate, seed=child_seed(job.seed, "null"),
        split_seed=child_seed(job.seed, "measure/split"),
    )  # fmt: skip


def build_report(
    job: ModalityJob,
    stages: dict[str, StageResult],
    runner: StageRunner,
    run_dir: Path,
    *,
    galleries: dict[str, np.ndarray] | None = None,
    examples: dict[str, list[str]] | None = None,
    members: tuple | None = None,
) -> dict:
    """Measure, run the reference audits, write report.json and report.html into run_dir.

    ``galleries``: uint8 images (N, H, W, C) by caption, drawn as grids in the HTML page;
    ``examples``: texts by caption (decoded chunks), shown in the page and kept in report.json;
    ``members``: the audited members as a table and the columns to group them by
    (:meth:`panoramia.pipeline.graph.AuditPipeline.audit_members`), for the exposed records
    and groups.
    """
    baseline, attack = _scores(stages["baseline"]), _scores(stages["attack"])
    membership = attack["membership"]
    audit = job.audit
    result = measure(
        membership, baseline_scores=baseline["scores"], attack_scores=attack["scores"],
        thresholds=audit.thresholds, confidence=audit.confidence, gamma=audit.gamma,
        delta=audit.delta, seed=child_seed(job.seed, "measure/split"),
    )  # fmt: skip
    losses_f = dict(np.load(stages["losses_target"].directory / "losses.npz"))
    losses_h = dict(np.load(stages["losses_helper"].directory / "losses.npz"))
    losses_s = (
        dict(np.load(stages["losses_stand_in_1"].directory / "losses.npz"))
        if "losses_stand_in_1" in stages
        else None
    )
    game = dict(np.load(stages["game"].directory / "game.npz"))
    o1 = None
    if audit.real_nonmembers.o1 and "reference_coins" in game:
        coins = game["reference_coins"]
        m_ref = coins.size
        loss = np.where(
            coins == 1, losses_f["member_audit"][:m_ref], losses_f["nonmember_audit"][:m_ref]
        )
        o1 = o1_audit(
            coins,
            -loss,
            confidence=audit.confidence,
            delta=audit.delta,
            seed=child_seed(job.seed, "o1"),
        )
    rmrn_result = None
    games = {
        "attack": (attack["scores"], membership),
        "baseline": (baseline["scores"], membership),
    }
    if "attack_rmrn" in stages:
        reference = _scores(stages["attack_rmrn"])
        games["rmrn"] = (reference["scores"], reference["membership"])
        rmrn_result = rmrn(
            reference["membership"],
            reference["scores"],
            thresholds=audit.thresholds,
            confidence=audit.confidence,
            delta=audit.delta,
            seed=child_seed(job.seed, "measure/split"),
        )
    target_info = {
        "name": job.target.name,
        "kind": job.target.kind,
        "key": stages["target"].key,
        **stages["target"].info,
    }
    data_info = {
        "source": job.data.source,
        "key": stages["data"].key,
        "split": stages["split"].info,
        "synthetic": stages["synthetic"].info,
        "game": stages["game"].info,
        **stages["data"].info,
    }
    distinguishers = {side: stages[side].info for side in ("baseline", "attack")}
    document = report_document(
        modality=job.modality, measurement=result, o1=o1, rmrn=rmrn_result, seed=job.seed,
        config=asdict(job), timings=runner.timings(), target=target_info, data=data_info,
        distinguishers=distinguishers,
    )  # fmt: skip
    document["two_sided"] = two_sided_section(
        job, membership, baseline["scores"], attack["scores"], games.get("rmrn")
    )
    quoted_game = "two_sided" if "eps_tilde" in document["two_sided"] else "one_sided"
    null = null_section(job, stages, membership, quoted_game)
    document["null"] = null.to_dict() if isinstance(null, NullTest) else null
    document["sides"] = {
        "attack": job.audit.attack_side,
        "baseline": job.audit.baseline_side,
    }
    stand_ins = [stages[name] for name in sorted(stages) if name.startswith("stand_in_")]
    if stand_ins:
        document["stand_ins"] = [{"key": stage.key, **stage.info} for stage in stand_ins]
    if result.c_lb == 0:
        document["unreliable"] = [
            "the baseline's bound c_lb is 0, so ε̃ is the attack's raw bound {c+ε}_lb, not a "
            "gap over a generator the baseline could measure"
        ]
    claim, claim_source = claimed_guarantee(job, stages["target"].info)
    section = claim_section(claim, games, confidence=audit.confidence)
    document["claim"] = section.to_dict() | {"source": claim_source}
    document["gdp"] = gdp_section(result, rmrn_result, claimed_mu=claimed_mu(section))
    pool = (
        (attack["pool_scores"], baseline["pool_scores"])
        if "pool_scores" in attack and "pool_scores" in baseline
        else None
    )
    document["attacker"] = attacker_section(
        result, membership, attack["scores"], baseline["scores"], document["two_sided"],
        draws=audit.null.draws, level=1 - 2 * audit.null.false_alarm_rate,
        seed=child_seed(job.seed, "attacker"), pool=pool,
    )  # fmt: skip
    if members is not None:
        table, group_columns = members
        document["exposure"] = exposure_section(
            table, group_columns, membership, attack["scores"],
            baseline_scores=baseline["scores"], attack_members=_member_scores(stages["attack"]),
            baseline_members=_member_scores(stages["baseline"]),
            tested=mirrored(audit.attack_side, audit.baseline_side), fpr=audit.group_fpr,
            false_alarm_rate=audit.null.false_alarm_rate, draws=audit.null.draws,
            seed=child_seed(job.seed, "exposure"),
        )  # fmt: skip
    document["verdict"] = verdict(document)  # read off the figures above (docs/SPEC.md §3.1)
    if examples:
        document["examples"] = examples
    roc_curves = {
        "baseline": (baseline["scores"], membership),
        "attack": (attack["scores"], membership),
    }
    loss_groups = {
        model: {"members": table["member_audit"], "synthetic": table["synthetic_audit"],
                "real non-members": table.get("nonmember_audit", np.zeros(0))}
        for model, table in (("f (target)", losses_f), ("h (helper)", losses_h),
                             ("f̂_1 (stand-in)", losses_s))
        if table is not None
    }  # fmt: skip
    write_atomic(run_dir / "report.json", json.dumps(document, indent=1, ensure_ascii=False))
    write_atomic(
        run_dir / "report.html",
        render_html(
            document,
            result,
            roc_curves,
            loss_groups,
            galleries,
            claim=section,
            examples=examples,
            null=null if isinstance(null, NullTest) else None,
        ),
    )
    try:  # the type the service's upload and worker read; written first, so nothing is lost
        ReportDocument.model_validate(document)
    except ValidationError as error:
        raise RuntimeError(
            f"report.json does not match its schema (a bug): {str(error).splitlines()[0:3]}"
        ) from None
    return document
