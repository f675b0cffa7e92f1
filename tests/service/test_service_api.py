"""The report service over real HTTP (uvicorn on loopback) against SQLite and PostgreSQL.

Audits go to a real Celery queue in Redis with no worker listening, so they stay queued here;
the workers' own tests run audits for real (test_service_workers.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from panoramia.store.repository import ModelRef, ReportContent
from tests.service_support import (
    REDIS_URL,
    LiveService,
    live_service,
    queued_only_service,
    redis_database,
    report_document_for_test,
    settings_for,
)

QUEUE_DB = redis_database(3)


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with queued_only_service(
        tmp_path / "home",
        database_url,
        QUEUE_DB,
        rate_limit="1000/minute",
        max_upload_bytes=2 * 2**20,
    ) as running:
        yield running  # fmt: skip


@pytest.fixture(scope="module")
def refusing(
    tmp_path_factory: pytest.TempPathFactory, module_database_url: str
) -> Iterator[LiveService]:
    """One live service per database for the requests that must all be refused (a refusal
    writes nothing, so the tests share it)."""
    with queued_only_service(
        tmp_path_factory.mktemp("refusing") / "home", module_database_url, QUEUE_DB,
        rate_limit="1000/minute", max_upload_bytes=2 * 2**20,
    ) as running:  # fmt: skip
        yield running


def upload(client, model: str = "census", version: str = "1", **document_changes) -> dict:  # type: ignore[no-untyped-def]
    document = report_document_for_test() | document_changes
    body = {"model": {"name": model, "version": version}, "report": document,
            "html": "<html><body>report</body></html>"}  # fmt: skip
    response = client.post("/v1/reports", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_health_and_openapi(service: LiveService) -> None:
    with service.client(None) as anonymous:
        health = anonymous.get("/healthz").json()
        assert health == {"status": "ok", "database": "ok", "queue": "celery",
                          "schema_revision": "0008"}  # fmt: skip
        paths = anonymous.get("/openapi.json").json()["paths"]
    assert set(paths) >= {"/v1/audits", "/v1/audits/{audit_id}", "/v1/reports",
                          "/v1/models", "/v1/models/{model}/reports", "/v1/reports/{report_id}",
                          "/v1/reports/{report_id}/html", "/healthz"}  # fmt: skip


def test_every_route_needs_a_known_token(service: LiveService) -> None:
    for token in (None, "pan_not-a-token"):
        with service.client(token) as client:
            for method, path in [("GET", "/v1/models"), ("GET", "/v1/reports/x"),
                                 ("GET", "/v1/audits/x"), ("POST", "/v1/reports")]:  # fmt: skip
                assert client.request(method, path).status_code == 401, (token, path)


def test_tokens_are_stored_only_as_hashes(service: LiveService) -> None:
    from sqlalchemy import select

    from panoramia.store.tables import Contributor

    token = service.token("alice")
    with service.store.sessions() as session:
        stored = session.scalars(select(Contributor.token_hash)).all()
    assert token not in stored
    assert [len(digest) for digest in stored] == [64]


def test_upload_then_query_with_filters(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        first = upload(alice, version="1")
        second = upload(alice, version="2")
        newest = upload(alice, version="2")
        listed = alice.get("/v1/models/census/reports").json()
        assert [r["id"] for r in listed] == [newest["id"], second["id"], first["id"]]
        latest = alice.get("/v1/models/census/reports", params={"latest": True}).json()
        assert [r["id"] for r in latest] == [newest["id"]]
        v1 = alice.get("/v1/models/census/reports", params={"version": "1"}).json()
        assert [r["id"] for r in v1] == [first["id"]]
        assert alice.get("/v1/models/census/reports", params={"modality": "image"}).json() == []
        later = alice.get("/v1/models/census/reports", params={"since": "2999-01-01"}).json()
        assert later == []
        shown = alice.get(f"/v1/reports/{first['id']}").json()
        document = report_document_for_test()
        assert shown["eps_tilde"] == pytest.approx(document["eps_tilde"])
        assert shown["document"]["attack"]["theta_lb"] == pytest.approx(
            document["attack"]["theta_lb"]
        )
        page = alice.get(f"/v1/reports/{first['id']}/html")
        assert page.text == "<html><body>report</body></html>"
        assert "default-src 'none'" in page.headers["content-security-policy"]
        models = alice.get("/v1/models").json()
        assert {(m["name"], m["version"], m["reports"]) for m in models} == {
            ("census", "1", 1),
            ("census", "2", 2),
        }


def test_no_contributor_reads_another_ones_reports_or_audits(service: LiveService) -> None:
    """Every id-taking route answers 404 to another contributor, as for an unknown id."""
    alice, bob = service.client(service.token("alice")), service.client(service.token("bob"))
    admin = service.client(service.token("root", admin=True))
    report = upload(alice, model="shared-model")
    audit = alice.post("/v1/audits", json={"model": {"name": "shared-model"},
                                           "target": {"config": "mlp_generalised"}})  # fmt: skip
    assert audit.status_code == 202, audit.text
    audit_id = audit.json()["id"]
    reads = [
        ("GET", f"/v1/reports/{report['id']}"),
        ("GET", f"/v1/reports/{report['id']}/html"),
        ("GET", "/v1/models/shared-model/reports"),
        ("GET", f"/v1/audits/{audit_id}"),
        ("DELETE", f"/v1/audits/{audit_id}"),
    ]
    for method, path in reads:
        denied = bob.request(method, path)
        unknown = bob.request(method, path.replace(report["id"], "0" * 36).replace(
            audit_id, "0" * 36).replace("shared-model", "no-such-model"))  # fmt: skip
        assert denied.status_code == unknown.status_code == 404, (method, path)
        assert denied.json() == unknown.json()
    assert bob.get("/v1/models").json() == []
    for method, path in reads[:-1]:
        assert admin.request(method, path).status_code == 200, path
        assert alice.request(method, path).status_code == 200, path
    assert [m["name"] for m in admin.get("/v1/models").json()] == ["shared-model"]
    for client in (alice, bob, admin):
        client.close()


def test_audit_submission_queues_and_cancels(service: LiveService) -> None:
    claim = {"kind": "dpsgd", "phases": [{"noise_multiplier": 1.1, "sample_rate": 0.01,
                                          "steps": 500}],
             "tuning": {"kind": "tnb", "eta": 1.0, "gamma": 0.1}}  # fmt: skip
    body = {
        "model": {
            "name": "census",
            "version": "7",
            "declared": {"dp": {"epsilon": 8}},
            "claim": claim,
        },
        "target": {"config": "mlp_overfit"},
        "overrides": ["seed=3", "audit.confidence=0.9"],
    }
    with service.client(service.token("alice")) as alice:
        submitted = alice.post("/v1/audits", json=body)
        assert submitted.status_code == 202
        audit = submitted.json()
        assert submitted.headers["location"] == f"/v1/audits/{audit['id']}"
        assert audit["status"] == "queued"
        assert audit["model"]["declared"] == {"dp": {"epsilon": 8}}
        assert audit["model"]["claim"]["phases"][0]["noise_multiplier"] == 1.1
        assert audit["model"]["claim"]["neighbouring"] == "add_remove"  # normalised
        assert "overrides_resolved" not in audit["request"]
        broker = redis.Redis.from_url(f"{REDIS_URL}/{QUEUE_DB}")
        message = json.loads(broker.lindex("celery", 0))
        assert message["headers"]["task"] == "panoramia.run_audit"
        assert audit["id"] in message["headers"]["argsrepr"]
        cancelled = alice.delete(f"/v1/audits/{audit['id']}")
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "cancelled"
        assert alice.delete(f"/v1/audits/{audit['id']}").json()["status"] == "cancelled"
    stored = service.store.get_audit(None, audit["id"])
    assert "seed=3" in stored.request["overrides_resolved"]
    assert "target=mlp_overfit" in stored.request["overrides_resolved"]
    for line in ("claim.kind=dpsgd", "claim.noise_multiplier=1.1", "claim.steps=500",
                 "claim.tuning.kind=tnb", "claim.tuning.gamma=0.1"):  # fmt: skip
        assert line in stored.request["overrides_resolved"]
    assert stored.model.claim["tuning"] == {"kind": "tnb", "eta": 1.0, "gamma": 0.1}


def test_the_data_source_picks_the_image_or_text_audit(service: LiveService) -> None:
    """Image and text requests become ``--config-name image|text`` jobs with their own data and
    target configs; files resolve inside the contributor's folder."""
    own = service.settings.data_dir / "alice"
    own.mkdir(parents=True, exist_ok=True)
    (own / "scans.npz").write_bytes(b"not read before the job runs")
    (own / "notes.jsonl").write_text('{"text": "a note"}\n')
    requests = {
        "image": {"model": {"name": "digits-cnn"}, "target": {"config": "cnn_overfit"},
                  "data": {"source": "images", "members": "scans.npz"},
                  "overrides": ["distinguisher.epochs=2"]},
        "text": {"model": {"name": "notes-lm"}, "target": {"config": "gpt2_few_epochs"},
                 "data": {"source": "text_files", "members": "notes.jsonl",
                          "nonmembers": "notes.jsonl"}},
        "embedded": {"model": {"name": "mnist-cnn"}, "target": {"config": "resnet_overfit"},
                     "data": {"source": "mnist"}, "overrides": ["data.pool_size=1500"]},
    }  # fmt: skip
    resolved = {}
    with service.client(service.token("alice")) as alice:
        for name, body in requests.items():
            submitted = alice.post("/v1/audits", json=body)
            assert submitted.status_code == 202, submitted.text
            audit_id = submitted.json()["id"]
            resolved[name] = service.store.get_audit(None, audit_id).request["overrides_resolved"]
            alice.delete(f"/v1/audits/{audit_id}")
    assert resolved["image"][:2] == ["--config-name=image", "target=cnn_overfit"]
    assert "data=images" in resolved["image"]
    assert f"data.members_path='{(own / 'scans.npz').resolve()}'" in resolved["image"]
    assert resolved["text"][:2] == ["--config-name=text", "target=gpt2_few_epochs"]
    assert "data=text_files" in resolved["text"]
    assert f"data.nonmembers_path='{(own / 'notes.jsonl').resolve()}'" in resolved["text"]
    assert resolved["embedded"][0] == "--config-name=image"
    assert "data=mnist" in resolved["embedded"]
    assert resolved["embedded"][-1] == "data.pool_size=1500"


@pytest.mark.parametrize(
    ("change", "location"),
    [
        ({"overrides": ["hydra.run.dir=/tmp/x"]}, ["body", "overrides", 0]),
        ({"overrides": ["seed=1", "artifacts_dir=/tmp"]}, ["body", "overrides", 1]),
        ({"overrides": ["seed=1,2"]}, ["body", "overrides", 0]),
        ({"overrides": ["+audit.extra=1"]}, ["body", "overrides", 0]),
        ({"overrides": ["target.path=/etc"]}, ["body", "overrides", 0]),
        ({"overrides": ["audit.no_such_key=1"]}, ["body", "overrides"]),
        ({"overrides": ["audit.confidence=high"]}, ["body", "overrides"]),
        ({"overrides": ["generator.synthesizer=nope"]}, ["body", "overrides"]),
        ({"overrides": ["audit.attack_side=evil"]}, ["body", "overrides"]),
        ({"overrides": ["audit.baseline_side=bogus+x"]}, ["body", "overrides"]),
        ({"overrides": ["target.members=everyone"]}, ["body", "overrides"]),
        ({"overrides": ["audit.stand_in.training_data=bob"]}, ["body", "overrides"]),
        ({"overrides": ["audit.null.draws=5"]}, ["body", "overrides"]),
        ({"target": {"config": "no_such_target"}}, ["body", "target", "config"]),
        ({"target": {}}, ["body", "target"]),
        ({"data": {"source": "csv", "label": "y"}}, ["body", "data"]),
        ({"data": {"source": "images"}}, ["body", "data"]),
        ({"data": {"source": "mnist", "members": "m.npz"}}, ["body", "data"]),
        ({"data": {"source": "mnist", "label": "y"}}, ["body", "data"]),
        ({"data": {"source": "mnist"}}, ["body", "target", "config"]),  # mlp on images
        ({"target": {"config": "cnn_overfit"}}, ["body", "target", "config"]),  # cnn on Adult
        ({"target": {"config": "image_path"}}, ["body", "target"]),
        ({"data": {"source": "python_docs"}, "overrides": ["generator.base_model=/m"]},
         ["body", "overrides", 0]),
        ({"model": {"name": "../evil"}}, ["body", "model", "name"]),
        ({"model": {"name": "census", "declared": {"notes": "x" * 20_000}}},
         ["body", "model", "declared"]),
        ({"model": {"name": "census", "claim": {"kind": "dpsgd", "phases": [
            {"noise_multiplier": -1, "sample_rate": 0.1, "steps": 10}]}}},
         ["body", "model", "claim"]),
        ({"model": {"name": "census", "claim": {"kind": "eps_delta", "epsilon": 1,
                                                "delta": 0, "tuning": {"kind": "dice"}}}},
         ["body", "model", "claim"]),
        ({"unexpected": 1}, ["body", "unexpected"]),
    ],
)  # fmt: skip
def test_bad_audit_requests_get_422_naming_the_field(
    refusing: LiveService, change: dict, location: list
) -> None:
    body = {"model": {"name": "census"}, "target": {"config": "mlp_generalised"}} | change
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"][: len(location)] == location


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"target": {"path": "../../etc"}}, "target.path"),
        ({"data": {"source": "csv", "members": "../bob/members.csv", "label": "y"}},
         "data.members"),
    ],
)  # fmt: skip
def test_audit_requests_naming_nothing_of_hers_get_404_naming_the_field(
    refusing: LiveService, change: dict, field: str
) -> None:
    """A path out of her folder names none of her uploads: 404, as another contributor's id."""
    body = {"model": {"name": "census"}, "target": {"config": "mlp_generalised"}} | change
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=body)
    assert response.status_code == 404, response.text
    assert response.json()["detail"].startswith(f"{field}: no upload named ")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("helper=reference", "helper: renamed; write helper=target_recipe"),
        ("audit.reference.rmrn=false",
         "audit.reference.rmrn: renamed; write audit.real_nonmembers.rmrn=false"),
        ("audit.baseline_side=stand_in+helper+reference",
         "audit.baseline_side: renamed; write "
         "audit.baseline_side=stand_in+helper+reference_models"),
    ],
)  # fmt: skip
def test_a_renamed_setting_gets_its_new_name_at_the_door(
    refusing: LiveService, line: str, message: str
) -> None:
    """The door names the new name of a setting renamed in 0.x, at the override's position,
    before any check that would only list the group's options (``helper=reference`` once got
    "'reference' is not one of …")."""
    body = {"model": {"name": "census"}, "target": {"config": "mlp_generalised"},
            "overrides": ["seed=1", line]}  # fmt: skip
    with refusing.client(refusing.token("alice")) as alice:
        response = alice.post("/v1/audits", json=body)
    assert response.status_code == 422, response.text
    problem = response.json()["detail"][0]
    assert problem["loc"] == ["body", "overrides", 1]
    assert problem["msg"] == message


def test_bad_uploads_get_422_naming_the_field(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        document = report_document_for_test()
        cases = {
            ("body", "report", "eps_tilde"): document | {"eps_tilde": document["eps_tilde"] + 1},
            ("body", "report", "schema_version"): document | {"schema_version": "0.9"},
            ("body", "report", "m"): document | {"m": 0},
            ("body", "report", "attack"): {k: v for k, v in document.items() if k != "attack"},
        }
        for location, bad in cases.items():
            response = alice.post("/v1/reports", json={"model": {"name": "m"}, "report": bad})
            assert response.status_code == 422, location
            locations = [tuple(d["loc"]) for d in response.json()["detail"]]
            assert any(loc[: len(location)] == location for loc in locations), locations
        nul = alice.post("/v1/reports", json={"model": {"name": "m"}, "report": document,
                                              "html": "a\x00b"})  # fmt: skip
        assert nul.status_code == 422
        assert "body.html: NUL characters" in nul.text
        assert alice.get("/v1/reports/%00").status_code == 422
        not_json = alice.post("/v1/reports", content=b"{not json",
                              headers={"content-type": "application/json"})  # fmt: skip
        assert not_json.status_code == 422
        assert alice.get("/v1/models").json() == []


def test_an_uploaded_report_is_drawn_from_its_charts_or_refused_in_one_line(
    service: LiveService,
) -> None:
    """A CLI run's report sent with its charts (``page_parts``): the service draws its page,
    headed by the model's name and version; one whose page cannot be drawn from it, sent with
    a page too, or naming its own heading, gets 422 naming the field, and nothing is stored."""
    chart = {"png": "Uk9D", "alt": "ROC of the <attack>"}
    with service.client(service.token("alice")) as alice:
        document = report_document_for_test()
        stored = alice.post("/v1/reports", json={
            "model": {"name": "census", "version": "2"}, "report": document,
            "page_parts": {"charts": [chart]}})  # fmt: skip
        assert stored.status_code == 201, stored.text
        page = alice.get(f"/v1/reports/{stored.json()['id']}/html").text
        assert "<h1>Privacy audit of census version 2</h1>" in page
        assert 'alt="ROC of the &lt;attack&gt;"' in page
        assert "Uk9D" in page
        broken = document | {"reference_audits": {"o1": "not a section"}}
        cases = {
            ("body", "report"): {"report": broken, "page_parts": {"charts": []}},
            ("body",): {"report": document, "page_parts": {"charts": []}, "html": "<p>x</p>"},
            ("body", "page_parts", "heading"): {
                "report": document, "page_parts": {"charts": [], "heading": "x"}},
            ("body", "page_parts", "charts", 0, "png"): {
                "report": document, "page_parts": {"charts": [chart | {"png": "<b>"}]}},
        }  # fmt: skip
        for location, body in cases.items():
            refused = alice.post("/v1/reports", json={"model": {"name": "m"}} | body)
            assert refused.status_code == 422, (location, refused.text)
            locations = [tuple(d["loc"]) for d in refused.json()["detail"]]
            assert any(loc[: len(location)] == location for loc in locations), locations
        drawn = alice.post("/v1/reports", json={"model": {"name": "m"}} | cases[("body", "report")])
        assert "its page cannot be drawn from it (AttributeError" in drawn.text
        assert [m["name"] for m in alice.get("/v1/models").json()] == ["census"]


def test_uploads_over_the_size_limit_get_413(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        document = report_document_for_test()
        body = {"model": {"name": "m"}, "report": document, "html": "x" * (3 * 2**20)}
        assert alice.post("/v1/reports", json=body).status_code == 413

        def chunks():  # no Content-Length: counted while streaming
            yield b'{"model": {"name": "m"}, "html": "'
            for _ in range(40):
                yield b"y" * 2**16
            yield b'"}'

        streamed = alice.post("/v1/reports", content=chunks(),
                              headers={"content-type": "application/json"})  # fmt: skip
        assert streamed.status_code == 413
        assert alice.get("/v1/models").json() == []


def test_uploads_are_rate_limited_per_contributor(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}",
                            rate_limit="3/minute")  # fmt: skip
    with live_service(settings) as service:
        alice, bob = service.client(service.token("alice")), service.client(service.token("bob"))
        body = {"model": {"name": "m"}, "report": report_document_for_test()}
        codes = [alice.post("/v1/reports", json=body).status_code for _ in range(5)]
        assert codes == [201, 201, 201, 429, 429]
        assert bob.post("/v1/reports", json=body).status_code == 201
        assert alice.get("/v1/models").status_code == 200  # reads are not limited
        alice.close()
        bob.close()


def test_a_failed_write_leaves_no_half_report(service: LiveService) -> None:
    """The page insert fails after the model and report rows are written: none is kept."""
    from sqlalchemy import event, func, select

    from panoramia.store.tables import AuditedModel, Report, ReportPage

    def fail(*_args: object) -> None:
        raise RuntimeError("disk full")

    alice = service.store.authenticate(service.token("alice"))
    content = ReportContent(report_document_for_test(), "<html></html>")
    event.listen(ReportPage, "before_insert", fail)
    try:
        with pytest.raises(RuntimeError, match="disk full"):
            service.store.add_report(alice, ModelRef("m", "1"), content)
    finally:
        event.remove(ReportPage, "before_insert", fail)
    with service.store.sessions() as session:
        assert session.scalar(select(func.count(Report.id))) == 0
        assert session.scalar(select(func.count(AuditedModel.id))) == 0
    assert service.store.add_report(alice, ModelRef("m", "1"), content).id


def test_a_contributor_storage_quota_is_kept(tmp_path: Path, database_url: str) -> None:
    """Past PANORAMIA_MAX_STORAGE_MB of reports an upload is answered 507 (nothing stored),
    and so is an audit submitted once the quota is reached; another contributor is not
    affected. Concurrent uploads cannot pass it together."""
    from concurrent.futures import ThreadPoolExecutor

    from panoramia.store.repository import ModelRef as StoredModelRef
    from panoramia.store.repository import ReportContent

    document = report_document_for_test()
    page = "<html>" + "x" * 40_000 + "</html>"
    body = {"model": {"name": "census"}, "report": document, "html": page}
    one = len(json.dumps(document)) + len(page)
    with queued_only_service(
        tmp_path / "home", database_url, QUEUE_DB, rate_limit="1000/minute",
        max_storage_bytes=int(2.5 * one),
    ) as service:  # fmt: skip
        with service.client(service.token("alice")) as alice:
            with ThreadPoolExecutor(4) as pool:
                codes = sorted(pool.map(lambda _: alice.post("/v1/reports", json=body)
                                        .status_code, range(4)))  # fmt: skip
            assert codes == [201, 201, 507, 507]
            refused = alice.post("/v1/reports", json=body)
            assert refused.status_code == 507
            assert "PANORAMIA_MAX_STORAGE_MB" in refused.json()["detail"]
            assert len(alice.get("/v1/models/census/reports").json()) == 2
            small = body | {"html": None}
            assert alice.post("/v1/reports", json=small).status_code == 201  # it still fits
            audit = {"model": {"name": "census"}, "target": {"config": "mlp_generalised"}}
            assert alice.post("/v1/audits", json=audit).status_code == 202
            # an audit's report is kept whatever the quota; once past it, no new audit
            principal = service.store.authenticate(alice.headers["authorization"].split()[1])
            service.store.add_report(
                principal, StoredModelRef("census", "1"), ReportContent(document, page)
            )
            full = alice.post("/v1/audits", json=audit)
            assert full.status_code == 507, full.text
        with service.client(service.token("bob")) as bob:
            assert bob.post("/v1/reports", json=body).status_code == 201
            assert bob.post("/v1/audits", json=audit).status_code == 202


def test_a_claim_declared_only_in_an_uploaded_report_shows_in_the_model_list(
    service: LiveService,
) -> None:
    from panoramia.accounting.claims import claim_from_dict

    claim = claim_from_dict({"kind": "eps_delta", "epsilon": 2.0, "delta": 1e-5}).to_dict()
    with service.client(service.token("alice")) as alice:
        upload(alice, model="census", claim={"source": "declared", "summary": {"claim": claim}})
        upload(alice, model="plain")
        models = {m["name"]: m for m in alice.get("/v1/models").json()}
    assert models["census"]["claim"] == claim
    assert models["plain"]["claim"] is None


def test_repeats_queue_one_group_at_successive_seeds_pooled_once_all_end(
    service: LiveService,
) -> None:
    """A request for 3 repeats: 3 queued audits at seeds 5, 6, 7 in one group that counts once
    against the active limit; the group's pooled verdict waits for all three, then pools their
    reports (an audit that did not end with one enters as p = 1)."""
    body = {"model": {"name": "census", "version": "3"}, "target": {"config": "mlp_overfit"},
            "overrides": ["seed=5"], "repeats": 3}  # fmt: skip
    with service.client(service.token("alice")) as alice:
        assert alice.post("/v1/audits", json=body | {"repeats": 11}).status_code == 422
        submitted = alice.post("/v1/audits", json=body)
        assert submitted.status_code == 202, submitted.text
        group = submitted.json()["repeat_group"]
        assert submitted.headers["location"] == f"/v1/repeats/{group}"
        bad_seed = alice.post("/v1/audits", json=body | {"overrides": ["seed=abc"]})
        assert bad_seed.status_code == 422
        too_far = alice.post("/v1/audits", json=body | {"overrides": ["seed=4294967295"]})
        assert too_far.status_code == 422
        assert "pass 4294967295" in too_far.json()["detail"][0]["msg"]
        found = alice.get(f"/v1/repeats/{group}").json()
        assert [run["seed"] for run in found["runs"]] == [5, 6, 7]
        assert found["ended"] == 0
        assert found["pooled"] is None
        for run in found["runs"]:
            stored = service.store.get_audit(None, run["audit_id"])
            seeds = [
                line for line in stored.request["overrides_resolved"] if line.startswith("seed=")
            ]
            assert seeds == [f"seed={run['seed']}"]
        # the group is one request: three more single audits still fit the limit of 4
        single = {"model": {"name": "census"}, "target": {"config": "mlp_overfit"}}
        for _ in range(3):
            assert alice.post("/v1/audits", json=single).status_code == 202
        assert alice.post("/v1/audits", json=single).status_code == 429
        for run in found["runs"]:
            assert alice.delete(f"/v1/audits/{run['audit_id']}").status_code == 200
        ended = alice.get(f"/v1/repeats/{group}").json()
        assert ended["ended"] == 3
        pooled = ended["pooled"]
        assert pooled["runs"] == 3
        assert pooled["read"] == 0
        assert pooled["level"] == "inconclusive"
    with service.client(service.token("bob")) as bob:
        assert bob.get(f"/v1/repeats/{group}").status_code == 404


def test_a_model_entry_is_deleted_with_its_reports_and_audits_by_its_owner_only(
    service: LiveService,
) -> None:
    with service.client(service.token("alice")) as alice:
        kept = upload(alice, model="other")
        first = upload(alice, model="census", version="1")
        upload(alice, model="census", version="2")
        request = {"model": {"name": "census", "version": "2"}, "target": {"config": "mlp_overfit"}}
        audit = alice.post("/v1/audits", json=request).json()
        run_dir = service.settings.audits_dir / audit["id"]
        run_dir.mkdir(parents=True)
        (run_dir / "report.json").write_text("{}")
        with service.client(service.token("bob")) as bob:
            assert bob.delete("/v1/models/census").status_code == 404
        busy = alice.delete("/v1/models/census")
        assert busy.status_code == 409
        assert "queued or running" in busy.json()["detail"]
        assert alice.delete("/v1/models/census", params={"version": "1"}).status_code == 200
        assert alice.get(f"/v1/reports/{first['id']}").status_code == 404
        alice.delete(f"/v1/audits/{audit['id']}")
        gone = alice.delete("/v1/models/census")
        assert gone.status_code == 200, gone.text
        answer = gone.json()
        assert answer["versions"] == ["2"]
        assert answer["reports"] == 1
        assert answer["audits"] == 1
        assert answer["message"].startswith("Deleted model entry 'census' (version 2): 1 report")
        assert not run_dir.exists()
        assert alice.get(f"/v1/audits/{audit['id']}").status_code == 404
        assert alice.get("/v1/models/census/reports").status_code == 404
        assert [m["name"] for m in alice.get("/v1/models").json()] == ["other"]
        assert alice.get(f"/v1/reports/{kept['id']}").status_code == 200
        assert alice.delete("/v1/models/census").status_code == 404


def test_a_control_is_audited_at_the_same_seeds_in_the_same_group(service: LiveService) -> None:
    """repeats=2 with a control: 4 audits in one group (the control's kept as version
    '1-control'), one active request; a control without repeats is a 422."""
    body = {"model": {"name": "census"}, "target": {"config": "mlp_overfit"},
            "control": {"config": "mlp_disjoint"}, "repeats": 2}  # fmt: skip
    with service.client(service.token("alice")) as alice:
        alone = alice.post("/v1/audits", json=body | {"repeats": 1})
        assert alone.status_code == 422
        assert "repeats of 2 or more" in alone.text
        submitted = alice.post("/v1/audits", json=body)
        assert submitted.status_code == 202, submitted.text
        found = alice.get(f"/v1/repeats/{submitted.json()['repeat_group']}").json()
        assert [(r["role"], r["seed"]) for r in found["runs"]] == [
            ("target", 0),
            ("target", 1),
            ("control", 0),
            ("control", 1),
        ]
        control = service.store.get_audit(None, found["runs"][2]["audit_id"])
        assert control.model.version == "1-control"
        assert "target=mlp_disjoint" in control.request["overrides_resolved"]
        for run in found["runs"]:
            alice.delete(f"/v1/audits/{run['audit_id']}")
        ended = alice.get(f"/v1/repeats/{found['id']}").json()
        assert ended["pooled"]["runs"] == 2  # the target's runs only
        assert ended["paired"] is None  # no report: nothing to pair


def test_a_version_too_long_to_name_its_control_is_refused_at_the_door(
    service: LiveService,
) -> None:
    """Issue 68, finding 7: a control's runs are kept as version '<version>-control' (a
    version is at most 100 characters), so with a control a version of more than 92 is a 422
    naming model.version that stores nothing, never a control kept under the target's own
    version; 92 characters keep the two apart, and without a control 100 are fine."""
    body = {"target": {"config": "mlp_overfit"}, "control": {"config": "mlp_disjoint"},
            "repeats": 2}  # fmt: skip
    with service.client(service.token("alice")) as alice:
        for size in (100, 93):  # 100: "<version>-control"[:100] was the version itself
            model = {"name": "m", "version": "v" * size}
            long = alice.post("/v1/audits", json=body | {"model": model})
            assert long.status_code == 422, long.text
            (problem,) = long.json()["detail"]
            assert problem["loc"] == ["body", "model", "version"]
            assert problem["msg"] == (
                f"{size} characters; with a control, whose runs are kept as version "
                "'<version>-control', a version has at most 92"
            )
        assert alice.get("/v1/models").json() == []  # nothing stored
        fits = alice.post("/v1/audits", json=body | {"model": {"name": "m", "version": "v" * 92}})
        assert fits.status_code == 202, fits.text
        found = alice.get(f"/v1/repeats/{fits.json()['repeat_group']}").json()
        versions = [service.store.get_audit(None, r["audit_id"]).model.version
                    for r in found["runs"]]  # fmt: skip
        assert versions == ["v" * 92] * 2 + ["v" * 92 + "-control"] * 2
        alone = {"model": {"name": "m", "version": "w" * 100}, "target": {"config": "mlp_overfit"}}
        assert alice.post("/v1/audits", json=alone).status_code == 202
