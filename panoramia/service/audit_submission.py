"""Submitting an audit request: checked against her uploads, priced, counted against her
limits and queued, one audit per repeat. The API's ``POST /v1/audits`` and the console's
audit form both submit here."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from panoramia.audit_cost import CostEstimate
from panoramia.plugins import MODALITIES
from panoramia.service.contributor_files import UPLOADED_KEYS
from panoramia.service.routing import Queue
from panoramia.service.schemas import CONTROL_SUFFIX, MAX_NAME_CHARS, AuditRequest
from panoramia.service.settings import ServiceSettings
from panoramia.service.shared_models import SharedTarget, resolve_shared
from panoramia.service.submission.audit_size import (
    SIZE_WORDS,
    SIZES,
    SizeOption,
    members_scored,
    size_overrides,
    size_refusal,
    size_split,
)
from panoramia.service.submission.command import RequestProblem, audit_plan, check_composes
from panoramia.service.submission.cost import check_budget, data_rows, estimate_cost
from panoramia.service.submission.plan import (
    AuditPlan,
    PlanError,
    PlannedFile,
    repeated,
    split_seed,
)
from panoramia.service.submission.usage import usage
from panoramia.service.uploads.checks import MAX_VALUES
from panoramia.service.uploads.naming import check_columns, check_data_kinds, upload_resolver
from panoramia.store.repository import ModelRef, Principal, ReportStore, StorageFull
from panoramia.store.tables import Audit, Upload
from panoramia.store.uploads import UploadRows


@dataclass(frozen=True)
class Checked:
    """A request checked at the door, nothing queued: the request as audited (a shared
    model's resolved), its runs' and its control's runs' plans (one per seed; her uploads by
    reference), the same as the door composes them (``at_door``, ``control_runs``: each
    file at its path on the service's disk), which uploads each reads (role → upload id) and those
    uploads as the door read them, the version her control's runs are kept under (None
    without a control), and the shared model it names."""

    body: AuditRequest
    shared: SharedTarget | None
    plans: list[AuditPlan]
    control_plans: list[AuditPlan]
    at_door: list[AuditPlan]
    control_runs: list[list[str]]
    named: dict[str, str]
    control_named: dict[str, str]
    uploads: dict[str, Upload | None]
    control_model: str | None

    @property
    def runs(self) -> list[list[str]]:
        """Her runs' command lines as the door composes them (each file at its path)."""
        return [plan.command_line() for plan in self.at_door]


def _referenced(plan: AuditPlan, named: dict[str, str], shared: SharedTarget | None) -> AuditPlan:
    """``plan`` with each file that is one of her uploads (``named``: role → upload id) or a
    shared model's upload named by its id: what the audit keeps and a worker copies."""
    files = dict(plan.files)
    for key, role in UPLOADED_KEYS.items():
        if key not in files:
            continue
        if key == "target.path" and shared is not None and shared.upload_id is not None:
            files[key] = PlannedFile(upload=shared.upload_id)
        elif role in named and not (key == "target.path" and shared is not None):
            files[key] = PlannedFile(upload=named[role])
    return plan.with_files(files)


def _repeats(plan: AuditPlan, body: AuditRequest, *, seeded: bool = False) -> list[AuditPlan]:
    """The request's plans, one per repeat: at her seed s (0 without one), s + 1, …; where
    she asks for one run, the plan as it is (her seed, if any) unless ``seeded`` (a control's
    runs always name their seed: they are paired with hers by it)."""
    if body.repeats <= 1 and not seeded:
        return [plan]
    _, _, position = split_seed(list(body.overrides))  # her text, read as she wrote it
    try:
        return repeated(plan, max(1, body.repeats), position)
    except PlanError as error:
        raise RequestProblem(("overrides", error.position), str(error)) from None


def check_request(
    settings: ServiceSettings, store: ReportStore, principal: Principal, body: AuditRequest
) -> Checked:
    """Check the request against her uploads as the API does (columns, kinds, the model's
    label, features and classes, her control's too) and compose its runs' overrides; raises
    what the API answers 4xx. A request naming a shared model (docs/SPEC.md §3.3) is checked
    as the request :func:`~panoramia.service.shared_models.resolve_shared` makes of it."""
    shared = resolve_shared(settings, store, principal, body) if body.shared else None
    if shared is not None:
        body = shared.request

    def planned(request: AuditRequest, named: dict[str, str]) -> AuditPlan:
        """The request's plan, recording in ``named`` which of her uploads it reads."""
        resolver = upload_resolver(
            settings, store, principal.contributor_id, named,
            own_folder=settings.data_dir / principal.name,
        )  # fmt: skip
        return audit_plan(
            request,
            contributor=principal.name,
            data_dir=settings.data_dir,
            models_dir=settings.models_dir,
            allow_torchscript=settings.trust_torchscript,
            uploads=shared.resolver(resolver) if shared is not None else resolver,
        )

    control_model = (  # a version too long to take "-control": 422
        control_version(body.model.version)
        if body.control is not None and body.model is not None
        else None
    )
    named: dict[str, str] = {}
    plan = planned(body, named)
    found = UploadRows(store)
    control_named: dict[str, str] = {}
    uploads = {role: found.get(upload_id) for role, upload_id in named.items()}
    if shared is not None:
        uploads["target"] = shared.upload
    check_at_door(body, uploads)
    at_door = _repeats(plan, body)
    control_at_door: list[AuditPlan] = []
    control_plans: list[AuditPlan] = []
    if body.control is not None:  # the same request on her control model, at the same seeds
        aside = body.model_copy(update={"target": body.control})
        control_plan = planned(aside, control_named)
        control_upload = found.get(control_named.get("target", ""))
        check_model_fits(aside, control_upload)
        for role in ("members", "nonmembers"):
            check_model_columns(aside, uploads.get(role), control_upload, role)
            check_label_classes(aside, uploads.get(role), control_upload)
        control_at_door = _repeats(control_plan, body, seeded=True)
        check_composes(control_at_door[0].command_line(), settings.limits)
        control_plans = [_referenced(p, control_named, None) for p in control_at_door]
    return Checked(
        body, shared, [_referenced(p, named, shared) for p in at_door], control_plans,
        at_door, [p.command_line() for p in control_at_door],
        named, control_named, uploads, control_model,
    )  # fmt: skip


def submit_audits(
    settings: ServiceSettings,
    store: ReportStore,
    queue: Queue,
    principal: Principal,
    body: AuditRequest,
) -> list[Audit]:
    """Check (:func:`check_request`), price and queue the request's audits (one per repeat,
    and one per repeat of her control); raises what the API answers 4xx."""
    checked = check_request(settings, store, principal, body)
    body, shared, runs, control_runs = (
        checked.body, checked.shared, checked.runs, checked.control_runs
    )  # fmt: skip
    named, control_named, control_model = (
        checked.named, checked.control_named, checked.control_model
    )  # fmt: skip
    assert body.model is not None
    assert body.target is not None
    estimate, total, _ = _priced(settings, store, principal, runs, len(control_runs))
    common = body.model_dump(mode="json") | {"cost": estimate.total, "uploads": named}
    if shared is not None:  # her request keeps the shared model's key, never its file
        common["target"] = None
    plans = checked.plans
    requests = [
        common | _planned(plan) | (
            {"repeat": {"index": index, "of": len(plans), "seed": plan.seed}}
            if len(plans) > 1 else {}
        )
        for index, plan in enumerate(plans)
    ]  # fmt: skip
    target = ModelRef(body.model.name, body.model.version, body.model.declared, body.model.claim)
    models = [target] * len(requests)
    if control_runs and control_model is not None:  # her model's name, "<version>-control"
        control = ModelRef(body.model.name, control_model)
        aside_common = common | {"uploads": named | control_named}  # what its audits read
        requests += [
            aside_common | _planned(plan) | {
                "repeat": {"index": index, "of": len(plans), "seed": plan.seed,
                           "role": "control"},
            }
            for index, plan in enumerate(checked.control_plans)
        ]  # fmt: skip
        models += [control] * len(control_runs)
    audits = store.create_audits(
        principal,
        target,
        requests,
        max_active=settings.limits.max_active_audits,
        budget=lambda active: check_budget(total, active, settings.limits.max_audit_cost),
        models=models,
        shared_model_id=shared.entry.id if shared is not None else None,
    )
    for audit in audits:
        queue.submit(audit.id)
    return audits


def _planned(plan: AuditPlan) -> dict[str, Any]:
    """What a stored request keeps of its plan: the plan itself, which the worker launches,
    and its command line as a record for people (uploads as ``upload:<id>``), never read
    back."""
    return {"plan": plan.as_json(), "overrides_resolved": plan.command_line()}


def check_at_door(body: AuditRequest, uploads: dict[str, Upload | None]) -> None:
    """What the uploads' arrival checks read, held against the request (columns, kinds, the
    model's label, features and classes): RequestProblem naming the field otherwise."""
    check_columns(body.data, uploads)
    check_model_fits(body, uploads.get("target"))
    check_data_kinds(body.data, uploads)
    for role in ("members", "nonmembers"):
        check_model_columns(body, uploads.get(role), uploads.get("target"), role)
        check_label_classes(body, uploads.get(role), uploads.get("target"))


def _priced(
    settings: ServiceSettings,
    store: ReportStore,
    principal: Principal,
    runs: list[list[str]],
    controls: int,
) -> tuple[CostEstimate, CostEstimate, dict[str, Any]]:
    """One run's estimate, the request's total (``runs`` and ``controls`` runs, each in
    full) and the first run's composed config, the composed configs within the service's
    limits (the last seed the largest); and StorageFull where what she keeps is already at
    her quota (its report could not be kept)."""
    composed = check_composes(runs[0], settings.limits)
    if len(runs) > 1:
        check_composes(runs[-1], settings.limits)
    estimate = estimate_cost(composed)
    if not math.isfinite(estimate.total):  # every number was checked finite: a safeguard
        raise RequestProblem(("overrides",), "the audit's cost cannot be estimated")
    kept = usage(store, settings, principal.contributor_id)
    if kept.total >= kept.quota_bytes:
        raise StorageFull(kept.quota_bytes, kept.total, 0)
    return estimate, CostEstimate(estimate.stages * (len(runs) + controls)), composed


def control_version(version: str) -> str:
    """The version a control's runs are kept under, ``<version>-control``: never the target's
    own, since the suffix is never cut. RequestProblem naming ``model.version`` where the
    version is too long to take it (more than ``MAX_NAME_CHARS - len(CONTROL_SUFFIX)``)."""
    longest = MAX_NAME_CHARS - len(CONTROL_SUFFIX)
    if len(version) > longest:
        raise RequestProblem(
            ("model", "version"),
            f"{len(version)} characters; with a control, whose runs are kept as version "
            f"'<version>{CONTROL_SUFFIX}', a version has at most {longest}",
        )
    return version + CONTROL_SUFFIX


def check_model_fits(body: AuditRequest, model: Upload | None) -> None:
    """A model upload is audited with data of its own kind: RequestProblem naming
    ``target.path`` where its manifest's audit (read on arrival) is not the data source's."""
    kind = (model.summary or {}).get("modality") if model is not None else None
    if model is None or not isinstance(kind, str) or kind == body.data.modality:
        return
    raise RequestProblem(
        ("target", "path"),
        f"upload {model.name!r} is a model of {_noun(kind)}; data source "
        f"{body.data.source!r} is an audit of {_noun(body.data.modality)}",
    )


def _noun(name: str) -> str:
    """What modality ``name``'s data is called in a sentence (its plug-in says)."""
    entry = MODALITIES.get(name)
    return entry.data_noun if entry else name


def check_label_classes(body: AuditRequest, data: Upload | None, model: Upload | None) -> None:
    """A table audit's label values (read on arrival, text and number columns of at most 50
    values alike) are classes the model upload predicts (its manifest's or its encoder's,
    compared as text as the audit compares them: ``17`` is ``"17"``): RequestProblem naming
    ``data.label`` otherwise, a CSV column of more than :data:`MAX_VALUES` values (a
    feature, never a class label) included. Uploads whose values or classes were not recorded
    (a Parquet file, a model that states no classes) are left to the audit."""
    if data is None or model is None or body.data.source != "csv" or not body.data.label:
        return
    recorded = (data.summary or {}).get("values")
    values = (recorded or {}).get(body.data.label) if isinstance(recorded, dict) else None
    classes = (model.summary or {}).get("classes")
    if not isinstance(classes, list):
        return
    columns = {str(column[0]) for column in (data.summary or {}).get("columns") or []}
    many = isinstance(recorded, dict) and values is None and len(classes) <= MAX_VALUES
    if many and body.data.label in columns:
        raise RequestProblem(  # a CSV column left out of "values": more than MAX_VALUES of them
            ("data", "label"),
            f"label {body.data.label!r} of upload {data.name!r} holds more than {MAX_VALUES} "
            f"different values, so model upload {model.name!r} does not predict it (its "
            f"{len(classes)} classes: {', '.join(str(c) for c in classes[:10])})",
        )
    if not isinstance(values, list):
        return
    known = {str(c) for c in classes}
    unknown = [v for v in values if str(v) not in known]
    if unknown:
        shown = ", ".join(str(v) for v in unknown[:5])
        raise RequestProblem(
            ("data", "label"),
            f"label {body.data.label!r} of upload {data.name!r} holds {shown}, which model "
            f"upload {model.name!r} does not predict (its classes: "
            f"{', '.join(str(c) for c in classes[:10])})",
        )


def check_model_columns(
    body: AuditRequest, data: Upload | None, model: Upload | None, role: str = "members"
) -> None:
    """Where the model upload states the column it predicts and the columns it reads (a
    panoramia encoder's, recorded on arrival), a table audit's ``data.label`` is that column
    and the data upload holds every one of them: RequestProblem naming ``data.label`` or
    ``data.<role>`` (the data upload's) otherwise, before anything is queued."""
    if data is None or model is None or body.data.source != "csv":
        return
    summary = model.summary or {}
    columns = {str(column[0]) for column in (data.summary or {}).get("columns") or []}
    label, features = summary.get("label"), summary.get("features")
    if isinstance(label, str) and body.data.label and body.data.label != label:
        raise RequestProblem(
            ("data", "label"),
            f"model upload {model.name!r} predicts column {label!r}, not {body.data.label!r}",
        )
    if columns and isinstance(features, list):
        missing = [str(f) for f in features if str(f) not in columns]
        if missing:
            shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
            raise RequestProblem(
                ("data", role),
                f"model upload {model.name!r} reads {len(missing)} column(s) that upload "
                f"{data.name!r} lacks: {shown}",
            )


def quote_audits(
    settings: ServiceSettings, store: ReportStore, principal: Principal, body: AuditRequest
) -> dict[str, Any]:
    """Check the request as :func:`submit_audits` does and price it, queueing nothing: the
    runs it would queue, its estimate in multiply-adds (``cost``, every run; ``per_run``),
    her ``budget`` and what her queued and running audits already use (``active``), the
    members her data holds (``members``, as the price counts them), the data source's own
    ``split``, and each audit size of :mod:`~panoramia.service.submission.audit_size`
    (shifted from that split, whatever ``data.split`` the request gives) with the members the
    game would score and its price. Raises what the API answers 4xx, as a submission would."""
    checked = check_request(settings, store, principal, body)
    runs, controls = checked.runs, len(checked.control_runs)
    estimate, total, first = _priced(settings, store, principal, runs, controls)
    first_plan = checked.at_door[0]
    own = tuple(line for line in first_plan.overrides if not line.startswith("data.split."))
    asked_own_split = own != first_plan.overrides  # her own text, read as she wrote it
    base = replace(first_plan, overrides=own).command_line()
    composed = check_composes(base, settings.limits) if asked_own_split else first
    split = {str(k): float(v) for k, v in (composed.get("data") or {}).get("split", {}).items()}
    rows = _member_rows(checked, composed)
    budget, active = settings.limits.max_audit_cost, store.active_cost(principal.contributor_id)
    options = []
    for size in SIZES:
        shifted = size_split(split, size)
        refused, cost = size_refusal(shifted, rows), None
        if refused is None and not SIZES[size] and not asked_own_split:
            cost = total.total  # the request as asked: priced above
        elif refused is None:
            try:
                config = check_composes(base + size_overrides(split, size), settings.limits)
                cost = estimate_cost(config).total * (len(runs) + controls)
            except RequestProblem as error:
                refused = error.message
        if cost is not None and cost + active > budget:
            queued = " with your queued and running audits" if cost <= budget else ""
            refused = f"its price is over your budget{queued}"
        option = SizeOption(
            size, SIZE_WORDS[size], size_overrides(split, size), shifted["audit"],
            shifted["generator"], members_scored(shifted, rows), cost, refused,
        )  # fmt: skip
        options.append(option.as_dict())
    return {
        "runs": len(runs) + controls, "per_run": estimate.total, "cost": total.total,
        "budget": budget, "active": active, "members": round(rows), "split": split,
        "sizes": options,
    }  # fmt: skip


def _member_rows(checked: Checked, composed: dict[str, Any]) -> float:
    """Her members' rows: a table upload's count read on arrival (the upload as the door read
    it), else as the price counts them (:func:`~panoramia.service.submission.cost.data_rows`);
    ``data.max_members`` caps both."""
    upload = checked.uploads.get("members")
    counted = (upload.summary or {}).get("rows") if upload is not None else None
    if not isinstance(counted, int) or counted < 1:
        return data_rows(composed)
    cap = (composed.get("data") or {}).get("max_members")
    return float(min(counted, cap) if isinstance(cap, int) and cap > 0 else counted)
