"""From finished stages to the measurement and the report files of one run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
from pydantic import ValidationError

from panoramia.accounting.claims import Claim
from panoramia.accounting.report_section import ClaimSection, claim_section
from panoramia.measure import Measurement, O1Result, RmRnResult, measure, o1_audit, rmrn
from panoramia.measure.null import NullTest, mirrored, null_test
from panoramia.measure.real_nonmembers import o1_on_units
from panoramia.measure.reference_attack import ATTACKS, ReferenceAttackResult, reference_attack
from panoramia.measure.two_sided import (
    NoTwoSidedGame,
    measure_two_sided,
    rmrn_two_sided,
    two_sided_grid,
)
from panoramia.pipeline.config import ModalityJob
from panoramia.pipeline.report_inputs import ReportInputs
from panoramia.pipeline.seeds import child_seed
from panoramia.pipeline.stages import StageResult, StageRunner
from panoramia.pipeline.stages.artifacts import GameDraw, Losses, Scores, UnitLosses
from panoramia.pipeline.stages.blind import BLIND_STAGE
from panoramia.pipeline.stages.reference_rows import STAGE as REFERENCE_ROWS
from panoramia.pipeline.stages.reference_rows import read_rows
from panoramia.pipeline.stages.units import STAGE as UNITS_STAGE
from panoramia.pipeline.tracking_settings import NOT_AUDIT_SETTINGS
from panoramia.report.attacker import attacker_section
from panoramia.report.blind import blind_section
from panoramia.report.charts import page_parts
from panoramia.report.document import report_document
from panoramia.report.exposure import exposure_section, reference_groups_section
from panoramia.report.gdp import gdp_section
from panoramia.report.html import render_page
from panoramia.report.page_parts import PAGE_PARTS_FILE
from panoramia.report.schema import ReportDocument
from panoramia.report.verdict import verdict


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that a reader never sees a half-written file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def audit_settings(job: ModalityJob) -> dict[str, Any]:
    """The job's settings as the report's ``config`` keeps them: all but those that are no
    setting of the audit (``logger``: where results are also logged)."""
    return {k: v for k, v in asdict(job).items() if k not in NOT_AUDIT_SETTINGS}


def _scores(stage: StageResult) -> Scores:
    return Scores.load(stage.directory)


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
    files = members or [stage.directory / Scores.file_name()]
    return np.stack([Scores.read(path).scores for path in files])


def null_section(
    job: ModalityJob,
    membership: np.ndarray,
    attack_members: np.ndarray,
    baseline_members: np.ndarray,
    game: str,
) -> NullTest | dict[str, str]:
    """The quoted game's gap against this audit's null draws (docs/SPEC.md §3.1,
    :func:`panoramia.measure.null.null_test`) on the ensembles' member scores, (k, m) each;
    ``{"skipped": reason}`` when the baseline's side does not mirror the attack's (no null
    hypothesis makes the two exchangeable)."""
    audit = job.audit
    if not mirrored(audit.attack_side, audit.baseline_side):
        return {
            "skipped": f"the baseline does not see what the attack sees "
            f"(audit.baseline_side={audit.baseline_side} does not mirror "
            f"audit.attack_side={audit.attack_side}), so no null makes them exchangeable"
        }
    return null_test(
        membership, attack_members, baseline_members,
        game=game, thresholds=audit.thresholds, confidence=audit.confidence,
        gamma=audit.gamma, delta=audit.delta, draws=audit.null.draws,
        false_alarm_rate=audit.null.false_alarm_rate, seed=child_seed(job.seed, "null"),
        split_seed=child_seed(job.seed, "measure/split"),
    )  # fmt: skip


# --- what the report is built from ------------------------------------------------------------


@dataclass(frozen=True)
class ReportContext:
    """What one run's report is built from: what the finished stages produced (loaded once),
    the readings that more than one section or the page uses, and the page's own inputs. Built
    by :func:`report_context`; the section builders (:data:`SECTIONS`) read nothing else."""

    job: ModalityJob
    stages: Mapping[str, StageResult]
    timings: dict[str, dict[str, object]]
    """The stages' timings (:meth:`StageRunner.timings`)."""
    membership: np.ndarray
    """The audit set's coins (1 = member), the attack's and the baseline's alike."""
    attack: Scores
    """The attack stage's scores."""
    baseline: Scores
    """The baseline stage's scores."""
    attack_members: np.ndarray
    """The attack's ensemble members' scores in seed order, (k, m)."""
    baseline_members: np.ndarray
    """The baseline's ensemble members' scores in seed order, (k, m)."""
    rmrn_game: tuple[np.ndarray, np.ndarray] | None
    """The RM;RN game's (scores, membership) on real non-members, where its stage ran."""
    losses_target: Losses
    """The losses of f (target), h (helper) and the first stand-in (where one ran)."""
    losses_helper: Losses
    losses_stand_in: Losses | None
    measurement: Measurement
    """The paper's game (docs/SPEC.md §2)."""
    o1: O1Result | None
    rmrn: RmRnResult | None
    reference_attacks: dict[str, ReferenceAttackResult]
    """RMIA and LiRA on real rows (:func:`_reference_attacks`), by name; empty where their
    stage did not run."""
    two_sided: dict[str, object]
    """The two-sided game's section (:func:`two_sided_section`)."""
    null: NullTest | dict[str, str]
    """The quoted game's null test, or why there is none (:func:`null_section`)."""
    claim: ClaimSection
    claim_source: str
    """Where the claim comes from (:func:`claimed_guarantee`)."""
    inputs: ReportInputs
    """What the modality shows besides the figures (:class:`ReportInputs`)."""


def _losses(stage: StageResult) -> Losses:
    return Losses.load(stage.directory)


def _measure(job: ModalityJob, attack: Scores, baseline: Scores) -> Measurement:
    audit = job.audit
    return measure(
        attack.membership, baseline_scores=baseline.scores, attack_scores=attack.scores,
        thresholds=audit.thresholds, confidence=audit.confidence, gamma=audit.gamma,
        delta=audit.delta, seed=child_seed(job.seed, "measure/split"),
    )  # fmt: skip


def _held_out_drawn(job: ModalityJob, stages: Mapping[str, StageResult]) -> bool:
    """Whether the audit drew the real non-members at random with the members: the data
    stage's ``held_out_drawn`` where it says (text; the embedded Adult, ``data.held_out``),
    else whether they came from the contributor (``data.nonmembers_path``: not drawn by the
    audit)."""
    said = stages["data"].info.get("held_out_drawn")
    if isinstance(said, bool):
        return said
    return not job.data.nonmembers_path


def _o1(
    job: ModalityJob, stages: Mapping[str, StageResult], losses_target: Losses
) -> O1Result | None:
    """The O(1) reference audit (docs/SPEC.md §2.4) on the target's losses: at the unit the
    members and real non-members were drawn by (a reference-units stage's, where the modality
    ran one: text's documents), else on the real members and non-members the game drew coins
    for; None where the config does not ask for it or there are no real non-members.
    ``randomised`` is False where the audit did not draw the held-out rows at random with the
    members (:func:`_held_out_drawn`)."""
    coins = GameDraw.load(stages["game"].directory).reference_coins
    if not job.audit.real_nonmembers.o1 or coins is None:
        return None
    randomised = _held_out_drawn(job, stages)
    audit = job.audit
    m_ref = coins.size
    loss = np.where(
        coins == 1, losses_target["member_audit"][:m_ref], losses_target["nonmember_audit"][:m_ref]
    )
    per_example = replace(
        o1_audit(
            coins, -loss, confidence=audit.confidence, delta=audit.delta,
            seed=child_seed(job.seed, "o1"),
        ),
        randomised=randomised,
    )  # fmt: skip
    if UNITS_STAGE not in stages:
        return per_example
    units = UnitLosses.load(stages[UNITS_STAGE].directory)
    result = o1_on_units(
        units.member, units.loss, game_seed=child_seed(job.seed, "o1/units"),
        audit_seed=child_seed(job.seed, "o1"), confidence=audit.confidence, delta=audit.delta,
    )  # fmt: skip
    unit = str(stages[UNITS_STAGE].info.get("unit", "unit"))
    return replace(result, unit=unit, randomised=randomised, per_example=per_example)


def _reference_attacks(
    job: ModalityJob, stages: Mapping[str, StageResult]
) -> dict[str, ReferenceAttackResult]:
    """RMIA and LiRA (docs/SPEC.md §2.4) on the reference rows' stage, where it ran: their
    intervals at the null's level (1 − 2α) and draws, their test on fair-coin pairs drawn by
    ``seed`` (the same pairs for both); ``randomised`` as O(1)'s (:func:`_held_out_drawn`)."""
    stage = stages.get(REFERENCE_ROWS)
    if stage is None:
        return {}
    rows, audit = read_rows(stage), job.audit
    randomised = _held_out_drawn(job, stages)
    return {
        name: reference_attack(
            name,
            rows.target,
            rows.stand_ins,
            rows.member,
            confidence=audit.confidence,
            randomised=randomised,
            game_seed=child_seed(job.seed, "reference_attack/pairs"),
            audit_seed=child_seed(job.seed, "reference_attack"),
            draws=audit.null.draws,
            level=1 - 2 * audit.null.false_alarm_rate,
            interval_seed=child_seed(job.seed, "reference_attack/intervals"),
            decides=audit.real_nonmembers.rmia_decides,
        )
        for name in ATTACKS
    }


def _rmrn(job: ModalityJob, game: tuple[np.ndarray, np.ndarray] | None) -> RmRnResult | None:
    """The RM;RN reference audit, where its stage ran."""
    if game is None:
        return None
    scores, reference = game
    audit = job.audit
    return rmrn(
        reference, scores, thresholds=audit.thresholds, confidence=audit.confidence,
        delta=audit.delta, seed=child_seed(job.seed, "measure/split"),
    )  # fmt: skip


def report_context(
    job: ModalityJob,
    stages: Mapping[str, StageResult],
    runner: StageRunner,
    inputs: ReportInputs,
) -> ReportContext:
    """Load what the stages produced and take the readings the sections share."""
    attack, baseline = _scores(stages["attack"]), _scores(stages["baseline"])
    membership = attack.membership
    reference = _scores(stages["attack_rmrn"]) if "attack_rmrn" in stages else None
    rmrn_game = None if reference is None else (reference.scores, reference.membership)
    attack_members = _member_scores(stages["attack"])
    baseline_members = _member_scores(stages["baseline"])
    losses_target = _losses(stages["losses_target"])
    two_sided = two_sided_section(job, membership, baseline.scores, attack.scores, rmrn_game)
    quoted_game = "two_sided" if "eps_tilde" in two_sided else "one_sided"
    games = {"attack": (attack.scores, membership), "baseline": (baseline.scores, membership)}
    if rmrn_game is not None:
        games["rmrn"] = rmrn_game
    claim, claim_source = claimed_guarantee(job, stages["target"].info)
    return ReportContext(
        job=job, stages=stages, timings=runner.timings(), membership=membership,
        attack=attack, baseline=baseline,
        attack_members=attack_members, baseline_members=baseline_members, rmrn_game=rmrn_game,
        losses_target=losses_target, losses_helper=_losses(stages["losses_helper"]),
        losses_stand_in=(
            _losses(stages["losses_stand_in_1"]) if "losses_stand_in_1" in stages else None
        ),
        measurement=_measure(job, attack, baseline), o1=_o1(job, stages, losses_target),
        rmrn=_rmrn(job, rmrn_game), reference_attacks=_reference_attacks(job, stages),
        two_sided=two_sided,
        null=null_section(job, membership, attack_members, baseline_members, quoted_game),
        claim=claim_section(claim, games, confidence=job.audit.confidence),
        claim_source=claim_source, inputs=inputs,
    )  # fmt: skip


# --- the document, a section a builder -----------------------------------------------------


Builder = Callable[[ReportContext, dict[str, Any]], Any]
"""A section of the document from the context and the document so far (only the verdict reads
the latter); None where the document has no such section."""


def _head(context: ReportContext) -> dict[str, Any]:
    """The document's head (:func:`panoramia.report.document.report_document`): the paper's
    game, the reference audits (O(1), RM;RN), the target, the data and the run's provenance."""
    job, stages = context.job, context.stages
    target = {
        "name": job.target.name,
        "kind": job.target.kind,
        "key": stages["target"].key,
        **stages["target"].info,
    }
    data = {
        "source": job.data.source,
        "key": stages["data"].key,
        "split": stages["split"].info,
        "synthetic": stages["synthetic"].info,
        "game": stages["game"].info,
        **stages["data"].info,
    }
    document = report_document(
        modality=job.modality, measurement=context.measurement, o1=context.o1,
        rmrn=context.rmrn, reference_attacks=context.reference_attacks, seed=job.seed,
        config=audit_settings(job), timings=context.timings,
        target=target, data=data,
        distinguishers={side: stages[side].info for side in ("baseline", "attack")},
    )  # fmt: skip
    blind = _blind(context)
    if blind is not None:
        document["baseline"]["blind"] = blind
    return document


def _blind(context: ReportContext) -> dict[str, object] | None:
    """``baseline.blind`` (:func:`panoramia.report.blind.blind_section`) where the modality ran
    a blind baseline stage (text)."""
    stage = context.stages.get(BLIND_STAGE)
    if stage is None:
        return None
    blind, audit, two_sided = _scores(stage), context.job.audit, context.two_sided
    return blind_section(
        blind.membership, blind.scores, model=str(stage.info.get("model", "")),
        baseline_c_lb=context.measurement.c_lb,
        baseline_c_lb_two_sided=(
            float(cast(float, two_sided["c_lb"])) if "eps_tilde" in two_sided else None
        ),
        thresholds=audit.thresholds, confidence=audit.confidence, gamma=audit.gamma,
        seed=child_seed(context.job.seed, "measure/split"),
    )  # fmt: skip


def _two_sided(context: ReportContext, document: dict[str, Any]) -> dict[str, object]:
    return context.two_sided


def _null(context: ReportContext, document: dict[str, Any]) -> dict:
    null = context.null
    return null.to_dict() if isinstance(null, NullTest) else null


def _sides(context: ReportContext, document: dict[str, Any]) -> dict[str, str]:
    audit = context.job.audit
    return {"attack": audit.attack_side, "baseline": audit.baseline_side}


def _stand_ins(context: ReportContext, document: dict[str, Any]) -> list[dict] | None:
    stages = context.stages
    found = [stages[name] for name in sorted(stages) if name.startswith("stand_in_")]
    return [{"key": stage.key, **stage.info} for stage in found] or None


def _unreliable(context: ReportContext, document: dict[str, Any]) -> list[str] | None:
    if context.measurement.c_lb != 0:
        return None
    return [
        "the baseline's bound c_lb is 0, so ε̃ is the attack's raw bound {c+ε}_lb, not a "
        "gap over a generator the baseline could measure"
    ]


def _claim(context: ReportContext, document: dict[str, Any]) -> dict[str, object]:
    return context.claim.to_dict() | {"source": context.claim_source}


def _gdp(context: ReportContext, document: dict[str, Any]) -> dict[str, object]:
    return gdp_section(context.measurement, context.rmrn, claimed_mu=claimed_mu(context.claim))


def _attacker(context: ReportContext, document: dict[str, Any]) -> dict:
    attack, baseline, null = context.attack, context.baseline, context.job.audit.null
    pool = (
        (attack.pool_scores, baseline.pool_scores)
        if attack.pool_scores is not None and baseline.pool_scores is not None
        else None
    )
    return attacker_section(
        context.measurement, context.membership, attack.scores, baseline.scores,
        context.two_sided, draws=null.draws, level=1 - 2 * null.false_alarm_rate,
        seed=child_seed(context.job.seed, "attacker"), pool=pool,
    )  # fmt: skip


def _exposure(context: ReportContext, document: dict[str, Any]) -> dict | None:
    if context.inputs.members is None:
        return None
    table, group_columns = context.inputs.members
    audit = context.job.audit
    return exposure_section(
        table, group_columns, context.membership, context.attack.scores,
        baseline_scores=context.baseline.scores, attack_members=context.attack_members,
        baseline_members=context.baseline_members,
        tested=mirrored(audit.attack_side, audit.baseline_side), fpr=audit.group_fpr,
        statistic=audit.group_statistic, false_alarm_rate=audit.null.false_alarm_rate,
        draws=audit.null.draws, seed=child_seed(context.job.seed, "exposure"),
    ) | _reference_groups(context)  # fmt: skip


def _reference_groups(context: ReportContext) -> dict[str, Any]:
    """``reference_groups`` of the exposure section (docs/SPEC.md §2.4, "by group"): RMIA by
    group, where its stage ran and the modality has groups; tested where its split was drawn
    at random (its ``randomised``)."""
    rmia = context.reference_attacks.get("rmia")
    if context.inputs.reference_groups is None or rmia is None:
        return {}
    from panoramia.measure.reference_attack import rmia_offline_scores

    rows = read_rows(context.stages[REFERENCE_ROWS])
    table, columns = context.inputs.reference_groups
    null = context.job.audit.null
    return {"reference_groups": reference_groups_section(
        table, columns, rows.member, rmia_offline_scores(rows.target, rows.stand_ins),
        tested=rmia.test.randomised, false_alarm_rate=null.false_alarm_rate, draws=null.draws,
        seed=child_seed(context.job.seed, "exposure/reference"),
    )}  # fmt: skip


def _verdict(context: ReportContext, document: dict[str, Any]) -> dict:
    return verdict(document)  # read off the figures above (docs/SPEC.md §3.1)


def _examples(context: ReportContext, document: dict[str, Any]) -> dict | None:
    return context.inputs.examples or None


SECTIONS: tuple[tuple[str, Builder], ...] = (
    ("two_sided", _two_sided),
    ("null", _null),
    ("sides", _sides),
    ("stand_ins", _stand_ins),
    ("unreliable", _unreliable),
    ("claim", _claim),
    ("gdp", _gdp),
    ("attacker", _attacker),
    ("exposure", _exposure),
    ("verdict", _verdict),
    ("examples", _examples),
)
"""The document's sections after its head, in the order ``report.json`` keeps them (the
verdict, last but the examples, reads the figures before it)."""


def report_document_of(context: ReportContext) -> dict[str, Any]:
    """The document: its head, then each section of :data:`SECTIONS` that the run has."""
    document = _head(context)
    for key, build in SECTIONS:
        section = build(context, document)
        if section is not None:
            document[key] = section
    return document


# --- checked, then written ----------------------------------------------------------------


def check_schema(document: dict[str, Any]) -> None:
    """Check the document against :class:`ReportDocument`, the type the service's upload and
    worker read; a mismatch is a bug, raised before anything is written."""
    try:
        ReportDocument.model_validate(document)
    except ValidationError as error:
        raise RuntimeError(
            f"report.json does not match its schema (a bug): {str(error).splitlines()[0:3]}"
        ) from None


def write_report(context: ReportContext, document: dict[str, Any], run_dir: Path) -> None:
    """Write report.json, the page's charts (``page_parts.json``,
    :mod:`panoramia.report.page_parts`), then report.html rendered from the two, into
    ``run_dir``."""
    text = json.dumps(document, indent=1, ensure_ascii=False)
    write_atomic(run_dir / "report.json", text)
    membership = context.membership
    roc_curves = {
        "baseline": (context.baseline.scores, membership),
        "attack": (context.attack.scores, membership),
    }
    loss_groups = {
        model: {"members": table["member_audit"], "synthetic": table["synthetic_audit"],
                "real non-members": table.get("nonmember_audit", np.zeros(0))}
        for model, table in (("f (target)", context.losses_target),
                             ("h (helper)", context.losses_helper),
                             ("f̂_1 (stand-in)", context.losses_stand_in))
        if table is not None
    }  # fmt: skip
    null = context.null
    parts = page_parts(
        document, context.measurement, roc_curves, loss_groups, context.inputs.galleries,
        claim=context.claim, null=null if isinstance(null, NullTest) else None,
    )  # fmt: skip
    write_atomic(run_dir / PAGE_PARTS_FILE, parts.model_dump_json())
    # rendered from the document as stored, as the service renders it again
    write_atomic(run_dir / "report.html", render_page(json.loads(text), parts))


def build_report(
    job: ModalityJob,
    stages: dict[str, StageResult],
    runner: StageRunner,
    run_dir: Path,
    inputs: ReportInputs,
) -> dict:
    """Measure, run the reference audits, write report.json, page_parts.json and report.html
    into run_dir; ``inputs``: what the modality shows besides the figures
    (:class:`ReportInputs`)."""
    context = report_context(job, stages, runner, inputs)
    document = report_document_of(context)
    check_schema(document)
    write_report(context, document, run_dir)
    return document
