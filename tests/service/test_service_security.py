"""A hostile data contributor against a live service (uvicorn on loopback), on SQLite and
PostgreSQL: every attack class of SECURITY.md is refused with a 4xx and leaves no side effect.

Requests that must be refused never reach a worker: audits go to a Celery queue in Redis with
no worker listening. The attacks that need an audit to run (a model manifest naming a
callable, the wall-clock limit, the child's environment) use the local pool for real.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis
from sqlalchemy import DateTime, Integer, column, insert, select, table

from panoramia.service.worker.launch import audit_environment
from panoramia.store import ReportStore, make_engine, upgrade
from panoramia.store.repository import ModelRef, ReportContent
from panoramia.store.tables import AuditedModel, JsonColumn, Report
from tests.service_support import (
    REDIS_URL,
    LiveService,
    live_service,
    queued_only_service,
    redis_database,
    report_document_for_test,
    settings_for,
)

QUEUE_DB = redis_database(1)
BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"}}


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with queued_only_service(
        tmp_path / "home", database_url, QUEUE_DB, rate_limit="100000/minute"
    ) as running:
        yield running


@pytest.fixture(scope="module")
def refusing(
    tmp_path_factory: pytest.TempPathFactory, module_database_url: str
) -> Iterator[LiveService]:
    """One live service per database for the tests whose every request must be refused: a
    refusal writes nothing, so they share it (one service per test costs ~0.5 s each)."""
    home = tmp_path_factory.mktemp("refusing") / "home"
    with queued_only_service(
        home, module_database_url, QUEUE_DB, rate_limit="100000/minute"
    ) as running:
        yield running


def _files(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()} if root.exists() else set()


def _refused(response: httpx.Response, *, status: int = 422) -> str:
    assert response.status_code == status, response.text
    return response.text


# -- 1. config groups that name a path or a package -------------------------------------------
EVIL_GROUP = """# @package _global_
artifacts_dir: /tmp/panoramia-evil
target:
  kind: path
  path: /tmp/evil-model
"""


@pytest.mark.parametrize("group", ["generator", "helper", "distinguisher", "audit"])
def test_a_group_override_is_an_existing_option_name_only(service: LiveService, group: str) -> None:
    own = service.settings.data_dir / "alice"
    own.mkdir(parents=True)
    (own / "evil.yaml").write_text(EVIL_GROUP)
    before = _files(service.settings.home)
    escapes = [
        f"{group}=../../home/data/alice/evil",
        f"{group}={own / 'evil'}",
        f"{group}=../{group}/xgboost",
        f"{group}@_global_=xgboost",
        f"{group}=nonexistent",
        f"{group}='gaussian_copula/../../x'",
    ]
    with service.client(service.token("alice")) as alice:
        for line in escapes:
            text_ = _refused(alice.post("/v1/audits", json=BODY | {"overrides": [line]}))
            assert "Traceback" not in text_
        assert alice.get("/v1/models").json() == []
    assert _files(service.settings.home) == before


@pytest.mark.parametrize(
    "line",
    [
        "artifacts_dir=/tmp/x", "threads=64", "hydra.run.dir=/tmp/x", "hydra/launcher=basic",
        "target.path=/etc", "target.kind=http", "target.trusted_modules=[subprocess]",
        "data.members_path=/srv/data/bob/members.csv", "data.nonmembers_path=/x",
        "target.base_model=/srv/models/x", "generator.base_model=/m", "helper.base_model=/m",
        "target.accelerator=cuda", "target.devices=8", "claim.kind=none", "+extra=1",
        "~seed", "seed=1,2,3", "hydra.searchpath=[file:///etc]",
        "++hydra.searchpath=[file:///srv/data/bob]",
    ],
)  # fmt: skip
def test_keys_outside_the_contributors_remit_are_refused(refusing: LiveService, line: str) -> None:
    with refusing.client(refusing.token("alice")) as alice:
        body = BODY | {"overrides": [line]}
        if "base_model" in line:
            body |= {"data": {"source": "python_docs"}}
        response = alice.post("/v1/audits", json=body)
    assert response.status_code == 422, (line, response.text)
    assert response.json()["detail"][0]["loc"] == ["body", "overrides", 0]


def test_an_existing_group_option_is_accepted(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        response = alice.post("/v1/audits", json=BODY | {"overrides": ["generator=tvae"]})
    assert response.status_code == 202, response.text


# -- 3. interpolation of the server's environment or config -----------------------------------
@pytest.mark.parametrize(
    "change",
    [
        {"overrides": ["target.name=${oc.env:PANORAMIA_DATABASE_URL}"]},
        {"overrides": ["seed=${oc.env:HOME}"]},
        {"overrides": ["target.name='${oc.env:HOME}'"]},
        {"overrides": ["target.name=${artifacts_dir}"]},
        {"overrides": ["target.name=$\\{oc.env:HOME\\}"]},  # Hydra unescapes to ${...}
        {"overrides": ["target.epochs=$\\{data.pool_size\\}"]},
        {"overrides": ["distinguisher.grid=[{n_estimators: $\\{oc.env:X\\,9\\}}]"]},
        {"overrides": ["target.hidden=[1,$\\{oc.env:X\\,9\\}]"]},
        {"model": {"name": "census", "declared": {"note": "${oc.env:HOME}"}}},
        {"data": {"source": "csv", "members": "m.csv", "label": "${oc.env:HOME}"}},
        {"data": {"source": "csv", "members": "${oc.env:HOME}", "label": "y"}},
    ],
)  # fmt: skip
def test_no_interpolation_reaches_the_config(refusing: LiveService, change: dict) -> None:
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=BODY | change)
        assert response.status_code == 422, response.text
        assert "'${' is not accepted" in response.text
        assert os.environ.get("HOME", "/") not in response.text


def test_the_audit_child_gets_no_secret_of_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PANORAMIA_DATABASE_URL", "postgresql://svc:hunter2@db/panoramia")
    monkeypatch.setenv("PANORAMIA_REDIS_URL", "redis://:hunter2@redis:6379/0")
    monkeypatch.setenv("PANORAMIA_TOKEN", "pan_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    environment = audit_environment(tmp_path, threads=1)
    assert "hunter2" not in json.dumps(environment)
    assert "pan_secret" not in json.dumps(environment)
    assert environment["PATH"] == os.environ["PATH"]
    assert environment["HF_HUB_OFFLINE"] == "1"


# -- 4. tenancy of model metadata --------------------------------------------------------------
def _upload(client: httpx.Client, model: dict) -> dict:
    body = {"model": model, "report": report_document_for_test(), "html": "<p>r</p>"}
    response = client.post("/v1/reports", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_each_contributor_has_its_own_model_metadata(service: LiveService) -> None:
    claim = {"kind": "eps_delta", "epsilon": 1.0, "delta": 1e-5}
    with (
        service.client(service.token("alice")) as alice,
        service.client(service.token("bob")) as bob,
        service.client(service.token("root", admin=True)) as admin,
    ):
        mine = _upload(alice, {"name": "census", "version": "2", "declared": {"by": "alice"},
                               "claim": claim})  # fmt: skip
        theirs = _upload(bob, {"name": "census", "version": "2", "declared": {"by": "bob"}})
        _upload(bob, {"name": "bobs-secret-model"})
        alice_view = alice.get(f"/v1/reports/{mine['id']}").json()
        bob_view = bob.get(f"/v1/reports/{theirs['id']}").json()
        assert (alice_view["declared"], alice_view["claim"]["epsilon"]) == ({"by": "alice"}, 1.0)
        assert (bob_view["declared"], bob_view["claim"]) == ({"by": "bob"}, None)
        alice_models = alice.get("/v1/models").json()
        assert [(m["name"], m["declared"], m["owner"]) for m in alice_models] == [
            ("census", {"by": "alice"}, "alice")
        ]
        assert "bobs-secret-model" not in alice.get("/v1/models").text
        assert alice.get("/v1/models/bobs-secret-model/reports").status_code == 404
        assert alice.get(f"/v1/reports/{theirs['id']}").status_code == 404
        everyone = {(m["name"], m["owner"]) for m in admin.get("/v1/models").json()}
        assert everyone == {("census", "alice"), ("census", "bob"), ("bobs-secret-model", "bob")}
        audit = alice.post("/v1/audits", json={"model": {"name": "census", "version": "2",
                           "declared": {"by": "mallory"}}, "target": BODY["target"]})  # fmt: skip
        assert audit.status_code == 202, audit.text
        assert audit.json()["model"]["declared"] == {"by": "alice"}  # first mention, own model


def test_the_migration_splits_a_model_that_two_contributors_share(database_url: str) -> None:
    """A database at revision 0002 with ``census/2`` used by alice and bob: after the upgrade
    each has its own copy with the metadata it had, and its reports point at it."""
    engine = make_engine(database_url)
    upgrade(engine, "0002")
    now = datetime(2026, 11, 20, tzinfo=UTC)
    old_models = table(
        "models", column("id", Integer), column("name"), column("version"),
        column("declared", JsonColumn), column("created_at", DateTime(timezone=True)),
    )  # fmt: skip
    old_contributors = table(  # revision 0002's columns, not today's
        "contributors", column("id", Integer), column("name"), column("token_hash"),
        column("is_admin"), column("created_at", DateTime(timezone=True)),
    )  # fmt: skip
    with engine.begin() as connection:  # ids from the sequences, as the service made them
        people = {}
        for name in ("alice", "bob"):
            row = {"name": name, "token_hash": name * 4, "is_admin": False, "created_at": now}
            people[name] = connection.execute(
                insert(old_contributors).values(row).returning(old_contributors.c.id)
            ).scalar_one()
        ids = [
            connection.execute(
                insert(old_models).values(row | {"created_at": now}).returning(old_models.c.id)
            ).scalar_one()
            for row in (
                {"name": "census", "version": "2", "declared": {"dp": 8}},
                {"name": "unused", "version": "1", "declared": {}},
            )
        ]
        for report_id, owner in (("r1", "alice"), ("r2", "bob"), ("r3", "bob")):
            numbers = {"c_lb": 0.0, "c_plus_eps_lb": 0.0, "eps_tilde": 0.0, "document": {}}
            connection.execute(insert(Report.__table__).values(
                id=report_id, model_id=ids[0], contributor_id=people[owner], modality="tabular",
                created_at=now, **numbers))  # fmt: skip
    upgrade(engine)
    with engine.connect() as connection:
        models = connection.execute(
            select(AuditedModel.id, AuditedModel.contributor_id, AuditedModel.name,
                   AuditedModel.declared).order_by(AuditedModel.id)
        ).all()  # fmt: skip
        owners = dict(connection.execute(select(Report.id, Report.model_id)).all())
    engine.dispose()
    by_owner = {owner: (id_, name, declared) for id_, owner, name, declared in models}
    alice, bob = people["alice"], people["bob"]
    assert by_owner[alice][1:] == ("census", {"dp": 8})
    assert by_owner[bob][1:] == ("census", {"dp": 8})
    assert by_owner[None][1] == "unused"
    assert len(models) == 3
    assert owners == {"r1": by_owner[alice][0], "r2": by_owner[bob][0], "r3": by_owner[bob][0]}


# -- 5. concurrent writes on the default SQLite store ------------------------------------------
def test_250_concurrent_uploads_on_sqlite_get_no_server_error(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}",
                            rate_limit="100000/minute")  # fmt: skip
    document = report_document_for_test()
    with live_service(settings) as service:
        tokens = [service.token(f"c{i}") for i in range(10)]
        codes: list[int] = []
        lock = threading.Lock()

        def upload(number: int) -> None:
            body = {"model": {"name": f"m{number % 7}"}, "report": document, "html": "<p/>"}
            with service.client(tokens[number % 10], timeout=120) as client:
                status = client.post("/v1/reports", json=body).status_code
            with lock:
                codes.append(status)

        threads = [threading.Thread(target=upload, args=(n,)) for n in range(250)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(set(codes)) == [201], {c: codes.count(c) for c in set(codes)}
        with service.store.sessions() as session:
            assert len(session.scalars(select(Report.id)).all()) == 250


def test_cancels_right_after_submits_get_no_server_error(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        ids = [alice.post("/v1/audits", json=BODY).json()["id"] for _ in range(4)]
        codes: list[int] = []

        def cancel(audit_id: str) -> None:
            with service.client(None) as client:
                client.headers.update(alice.headers)
                codes.append(client.delete(f"/v1/audits/{audit_id}").status_code)

        threads = [threading.Thread(target=cancel, args=(i,)) for i in ids * 3]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert set(codes) == {200}, codes


# -- 7. resource limits ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "setting"),
    [
        ("audit.thresholds=grid:5000", "PANORAMIA_MAX_THRESHOLDS"),
        ("distinguisher.selection_thresholds=grid:5000", "PANORAMIA_MAX_THRESHOLDS"),
        ("generator.epochs=100000000", "PANORAMIA_MAX_EPOCHS"),
        ("target.epochs=100000", "PANORAMIA_MAX_EPOCHS"),
        ("distinguisher.grid=[{max_depth:3,n_estimators:10,n_jobs:64}]", "PANORAMIA_MAX_N_JOBS"),
        ("distinguisher.n_jobs=64", "PANORAMIA_MAX_N_JOBS"),
        ("distinguisher.grid=[{n_estimators:10000000}]", "PANORAMIA_MAX_ESTIMATORS"),
        ("helper.n_rows=1000000000", "PANORAMIA_MAX_COUNT"),
        ("distinguisher.grid=[" + ",".join(["{max_depth:3}"] * 17) + "]", "PANORAMIA_MAX_GRID"),
        ("target.hidden=[1000000,1000000]", "PANORAMIA_MAX_WIDTH"),
        ("helper.hidden=[64,100000]", "PANORAMIA_MAX_WIDTH"),
        ("distinguisher.grid=[{n_estimators: '99999999'}]", "PANORAMIA_MAX_ESTIMATORS"),
        ("distinguisher.grid=[{max_depth: 1000}]", "PANORAMIA_MAX_LAYERS"),
        ("distinguisher.grid=[{num_parallel_tree: 100000}]", "not a grid setting"),
        ("distinguisher.grid=[{device: cuda}]", "not a grid setting"),
        ("seed=" + "9" * 400, "seed: " + "9" * 37 + "... is not an integer in [0, 4294967295]"),
        ("target.epochs=" + "9" * 400, "target.epochs: 9999999999999999999999999999999999999..."),
        ("target.batch_size=100000000", "PANORAMIA_MAX_COUNT"),
        ("audit.ensemble=9", "PANORAMIA_MAX_ENSEMBLE"),
        # the limit kind a field declares beside it, not one its last name would give
        ("target.max_depth=1000", "PANORAMIA_MAX_LAYERS"),
        ("target.hidden=[8,0]", "target.hidden[1]: 0 is not an integer in [1, 1000000000]"),
        # the settings' own checks (panoramia/audit_settings.py) come first: a negative count
        # is out of range, not "over", and a grid no audit can run is not one of the strategies
        ("audit.thresholds=grid:2000000000", "audit.thresholds: grid:K takes at most K = "),
        ("helper.epochs=-1", "helper.epochs: -1 is not an integer in [1, 1000000000]"),
        ("generator.filter.real_quantile=7", "filter.real_quantile: 7.0 is not in [0, 1]"),
        ("generator.filter.extra_fraction=1e9", "is not in (0, 100]"),
        ("generator.filter.extra_fraction=-1", "is not in (0, 100]"),
        ("generator.point_mass=1e300", "generator.point_mass: 1e+300 is not in [0, 1]"),
        ("generator.support_novelty=-3", "generator.support_novelty: -3.0 is not in [0, 1]"),
        ("generator.filter.max_drop=0.9999999", "is not in [0, 0.99]"),
        ("target.hidden=[" + ",".join(["4096"] * 64) + "]", "target.hidden: 64 entries"),
    ],
)  # fmt: skip
def test_settings_past_a_limit_get_422_naming_it(
    refusing: LiveService, line: str, setting: str
) -> None:
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=BODY | {"overrides": [line]})
    assert response.status_code == 422, response.text
    assert setting in response.json()["detail"][0]["msg"]


IMAGE_BODY = {
    "model": {"name": "mnist-cnn", "version": "1"}, "target": {"config": "cnn_overfit"},
    "data": {"source": "mnist"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (IMAGE_BODY, "target.arch=foo", "target.arch: 'foo' is not cnn or resnet"),
        (IMAGE_BODY, "helper.training_data=public", "training_data: 'public' is not synthetic"),
        (IMAGE_BODY, "target.members=disjoint+generator_data",
         "target.members: 'disjoint+generator_data' is not same or disjoint"),
        (IMAGE_BODY, "generator.width=12", "generator.width: 12 is not a multiple of 8 (ddpm)"),
        (BODY, "audit.attack_side=target+helper+reference_models",
         "audit.attack_side=target+helper+reference_models goes with audit.baseline_side="),
        (BODY, "data.split.audit=0.9", "data.split: the fractions add up to more than 1"),
        (BODY, "audit.thresholds=grid:1", "audit.thresholds: 'grid:1' is not one of grid:K"),
    ],
)  # fmt: skip
def test_a_wrong_choice_or_combination_gets_422_naming_the_key(
    refusing: LiveService, body: dict, line: str, message: str
) -> None:
    """The door checks every setting as the job does (panoramia/audit_settings.py): a value
    the worker would refuse never reaches the queue."""
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=body | {"overrides": [line]})
    assert response.status_code == 422, response.text
    problem = response.json()["detail"][0]
    assert problem["loc"] == ["body", "overrides"]
    assert message in problem["msg"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["--config-name=image", "target.arch=foo"], "target.arch: 'foo' is not cnn or "),
        (["--config-name=text", "base.source=nope"],
         "base.source: 'nope' is not package_docs or none"),
        (["audit.attack_side=target+helper+reference_models"],
         "audit.attack_side=target+helper+reference_models goes with audit.baseline_side="),
        (["audit.reference.rmrn=false"],
         "audit.reference.rmrn: renamed; write audit.real_nonmembers.rmrn=false"),
        (["--config-name=image", "helper=reference"],
         "helper: renamed; write helper=target_recipe"),
    ],
)  # fmt: skip
def test_the_door_refuses_what_the_worker_would(overrides: list[str], message: str) -> None:
    """``check_composes`` (the service's door) runs the job's checks on the composed config;
    ``base.*`` is the service's own to set, so this one is asked of the door directly."""
    from panoramia.service.submission.command import RequestProblem, check_composes

    with pytest.raises(RequestProblem) as refused:
        check_composes(overrides)
    assert refused.value.field == ("overrides",)
    assert refused.value.message.startswith(message), refused.value.message


def test_a_claim_the_accounting_refuses_is_the_models_not_the_overrides() -> None:
    """A claim comes from the model's registration: its refusal points at it (σ too small to
    account here), not at the request's overrides."""
    from panoramia.service.submission.command import RequestProblem, check_composes

    with pytest.raises(RequestProblem) as refused:
        check_composes(["claim.kind=dpsgd", "claim.noise_multiplier=0.01",
                        "claim.sample_rate=0.01", "claim.epochs=1"])  # fmt: skip
    assert refused.value.field == ("model", "claim"), refused.value.message


@pytest.mark.parametrize(
    ("change", "location"),
    [
        ({"data": {"source": "csv", "members": "x" * 300, "label": "y"}}, ["data", "members"]),
        ({"target": {"path": "y" * 300}}, ["target", "path"]),
    ],
)
def test_paths_that_name_nothing_of_hers_get_404(
    refusing: LiveService, change: dict, location: list
) -> None:
    """A path that is none of her uploads nor a file placed for her is not found (404, naming
    the field), whatever it names on the server's disk."""
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=BODY | change)
    assert response.status_code == 404, response.text
    assert response.json()["detail"].startswith(f"{'.'.join(location)}: no upload named ")


def test_an_unusable_path_gets_422(refusing: LiveService) -> None:
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=BODY | {"target": {"path": "a\\" * 3000}})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["body", "target", "path"]


def test_a_link_inside_a_contributors_folder_cannot_reach_another_ones_files(
    service: LiveService,
) -> None:
    data = service.settings.data_dir
    (data / "alice").mkdir(parents=True)
    (data / "alice" / "private.txt").write_text("alice's secret text\n")
    docs = data / "mallory" / "docs"
    docs.mkdir(parents=True)
    (docs / "own.txt").write_text("mallory's text\n")
    (docs / "a.txt").symlink_to(data / "alice" / "private.txt")
    body = {"model": {"name": "m"}, "target": {"config": "gpt2_few_epochs"},
            "data": {"source": "text_files", "members": "docs"}}  # fmt: skip
    with service.client(service.token("mallory")) as mallory:
        response = mallory.post("/v1/audits", json=body)
        assert response.status_code == 422, response.text
        assert "'a.txt' is a link (links are not followed)" in response.text
        (docs / "a.txt").unlink()
        assert mallory.post("/v1/audits", json=body).status_code == 202


def test_a_torchscript_model_is_refused_unless_the_operator_trusts_it(
    service: LiveService,
) -> None:
    model = service.settings.models_dir / "scripted"
    model.mkdir(parents=True)
    (model / "target.json").write_text(json.dumps({"format": "torchscript", "file": "m.pt",
                                                   "encoder": "encoder.json"}))  # fmt: skip
    with service.client(service.token("alice")) as alice:
        response = alice.post("/v1/audits", json=BODY | {"target": {"path": "scripted"}})
    assert response.status_code == 422, response.text
    assert "PANORAMIA_TRUST_TORCHSCRIPT" in response.text


def test_the_split_is_set_under_data_split(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        good = alice.post("/v1/audits", json=BODY | {"overrides": ["data.split.audit=0.2"]})
        bad = alice.post("/v1/audits", json=BODY | {"overrides": ["data.source=csv"]})
    assert good.status_code == 202, good.text
    assert bad.status_code == 422


def test_a_contributor_has_at_most_its_cap_of_active_audits(tmp_path: Path) -> None:
    broker = f"{REDIS_URL}/{QUEUE_DB}"
    redis.Redis.from_url(broker).flushdb()
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}",
                            queue="celery", redis_url=broker)  # fmt: skip
    settings = settings.__class__(**vars(settings) | {
        "limits": settings.limits.__class__(max_active_audits=2)})  # fmt: skip
    try:
        with (
            live_service(settings) as service,
            service.client(service.token("alice")) as alice,
            service.client(service.token("bob")) as bob,
        ):
            codes = [alice.post("/v1/audits", json=BODY).status_code for _ in range(3)]
            assert codes == [202, 202, 429]
            assert bob.post("/v1/audits", json=BODY).status_code == 202
            first = alice.get("/v1/audits", params={}).status_code
            assert first in (404, 405)
            queued = service.store.queued_audit_ids()
            assert len(queued) == 3
            cancelled = alice.delete(f"/v1/audits/{queued[0]}")
            assert cancelled.status_code == 200
            assert alice.post("/v1/audits", json=BODY).status_code == 202
    finally:
        redis.Redis.from_url(broker).flushdb()


# -- 8. malformed bodies never get a 5xx -------------------------------------------------------
RAW_BODIES = [
    b'{"model": {"name": "m"}, "report": {"c_lb": NaN}}',
    b'{"model": {"name": "m", "declared": {"x": Infinity}}, "target": {"config": "mlp"}}',
    b'{"model": {"name": "m", "declared": {"x": -Infinity}}, "report": {}}',
    b'{"model": {"name": "m"}, "html": "\\ud800", "report": {}}',
    b'{"model": {"name": "m", "declared": {"x": "\\udfff"}}, "target": {"config": "x"}}',
    b'{"model": {"name": "m"}, "target": {"config": "mlp"}, "overrides": ["seed=\\ud800"]}',
    b'{"model": {"name": "m", "declared": ' + b'{"a": [' * 450 + b"1" + b"]}" * 450 + b"}}",
    b'{"model": {"name": "m", "declared": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
    b'{"model": {"name": "m", "declared": ' + b"[" * 40 + b"]" * 40 + b"}}",
    # integers past float range (the claim's arithmetic overflowed: 500), in claims and tuning
    *(json.dumps({"model": {"name": "m", "claim": claim}, "target": {"config": "mlp"},
                  "report": {}}).encode() for claim in (
        {"kind": "eps_delta", "epsilon": 10**400, "delta": 1e-5},
        {"kind": "dpsgd", "phases": [{"noise_multiplier": 10**400, "sample_rate": 0.01,
                                      "steps": 100}]},
        {"kind": "dpsgd", "phases": [{"noise_multiplier": 1, "sample_rate": 10**400,
                                      "steps": 100}]},
        {"kind": "dpsgd", "phases": [{"noise_multiplier": 1, "sample_rate": 0.01,
                                      "steps": 10**400}]},
        {"kind": "eps_delta", "epsilon": 1, "delta": 0,
         "tuning": {"kind": "poisson", "rate": 10**400}},
    )),
]  # fmt: skip


@pytest.mark.parametrize("route", ["/v1/reports", "/v1/audits"])
def test_malformed_bodies_get_a_4xx_never_a_5xx(refusing: LiveService, route: str) -> None:
    document = report_document_for_test()
    with refusing.client(refusing.token("alice")) as alice:
        for raw in RAW_BODIES:
            response = alice.post(route, content=raw,
                                  headers={"content-type": "application/json"})  # fmt: skip
            assert 400 <= response.status_code < 500, (raw[:80], response.text[:300])
        for bad in (float("nan"), float("inf")):
            body = {"model": {"name": "m", "declared": {"x": bad}}, "report": document}
            raw = json.dumps(body).encode()  # Python writes NaN / Infinity
            response = alice.post(route, content=raw,
                                  headers={"content-type": "application/json"})  # fmt: skip
            assert response.status_code == 422, response.text
        lone = '{"model": {"name": "m", "declared": {"x": "\\ud800"}}, "report": ' + (
            json.dumps(document) + "}"
        )
        response = alice.post(route, content=lone.encode(),
                              headers={"content-type": "application/json"})  # fmt: skip
        assert response.status_code == 422, response.text
        assert alice.get("/v1/models").json() == []


# -- 11. token lifetime, pages ----------------------------------------------------------------
def test_revoked_and_expired_tokens_are_refused(service: LiveService) -> None:
    from datetime import timedelta

    from panoramia.store.repository import utcnow

    token = service.token("alice")
    service.store.revoke_token("alice")
    with service.client(token) as alice:
        assert alice.get("/v1/models").status_code == 401
    past = service.store.create_contributor("old", expires_at=utcnow() - timedelta(seconds=1))
    with service.client(past) as old:
        assert old.get("/v1/models").status_code == 401
    future = service.store.create_contributor("new", expires_at=utcnow() + timedelta(days=1))
    with service.client(future) as new:
        assert new.get("/v1/models").status_code == 200
    states = {t.name: t.state for t in service.store.list_tokens()}
    assert states == {"alice": "revoked", "old": "expired", "new": "active"}


def test_report_pages_are_sandboxed(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        stored = _upload(alice, {"name": "m"})
        page = alice.get(f"/v1/reports/{stored['id']}/html")
    policy = page.headers["content-security-policy"]
    for directive in ("sandbox", "form-action 'none'", "base-uri 'none'",
                      "frame-ancestors 'none'", "default-src 'none'"):  # fmt: skip
        assert directive in policy


def test_the_sqlite_database_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "store" / "panoramia.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    store = ReportStore(engine)
    alice = store.authenticate(store.create_contributor("a"))
    store.add_report(alice, ModelRef("m", "1"), ReportContent(report_document_for_test()))
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for candidate in path.parent.iterdir():
        assert stat.S_IMODE(candidate.stat().st_mode) & 0o077 == 0, candidate
    engine.dispose()
