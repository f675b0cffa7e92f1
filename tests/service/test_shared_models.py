"""Issue 69: one shared model, many contributors (docs/SPEC.md §3.3, SECURITY.md "Shared
models"). An owner publishes her model upload; three contributors of its audience audit it
with their own data through ``POST /v1/audits``; the per-model leakage report is recomputed
from their stored reports and shows each viewer what the rule lets her see. The audits here
are queued through the real door and finished with real report documents (a measurement of
simulated scores with an in-audit null) the way a worker finishes them; the worker's own run
of a shared model's audit is ``test_a_shared_model_is_audited_by_the_worker``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from panoramia.report.shared_leakage import (
    MIN_AGGREGATE,
    VersionLeakage,
    audience_of,
    holm,
)
from panoramia.store.repository import ReportContent
from tests.conftest import TINY_AUDIT
from tests.service.test_upload_deletion import _model_archive, _send
from tests.service_support import (
    LiveService,
    queued_only_service,
    redis_database,
    report_document_for_test,
)

OWNER = "olivia"


def judged_document(seed: int, *, leaks: bool) -> dict:
    """A real report document (a measurement of simulated scores) with an in-audit null that
    calls a leak (p = 0.001) or does not (p ≈ 0.6), consistent with its own figures."""
    document = report_document_for_test(seed, shift=2.0 if leaks else 0.0)
    from panoramia.report.document import SCHEMA_VERSION

    document["schema_version"] = SCHEMA_VERSION  # the current schema: the null is read
    game = "two_sided" if isinstance(document.get("two_sided"), dict) else "one_sided"
    observed = (document["two_sided"] if game == "two_sided" else document)["eps_tilde"]
    threshold = observed - 0.05 if leaks else observed + 0.5
    document["null"] = {
        "game": game, "draws": 999, "exceed": 0 if leaks else 600, "false_alarm_rate": 0.05,
        "observed": observed, "threshold": threshold, "interval": [0.0, observed + 0.1],
    }  # fmt: skip
    return document


def finish(service: LiveService, audit_id: str, *, leaks: bool, seed: int = 0) -> None:
    """Finish a queued audit as a worker does: claimed, then its report stored."""
    assert service.store.claim(audit_id, "w1") is not None
    content = ReportContent(document=judged_document(seed, leaks=leaks), html="<p>page</p>")
    assert service.store.finish(audit_id, "w1", content, timings={}) is not None


def _table(rows) -> bytes:  # type: ignore[no-untyped-def]
    return rows.to_csv(index=False).encode()


def _audit_body(version: str = "1", repeats: int = 1) -> dict:
    return {
        "shared": {"owner": OWNER, "name": "census", "version": version},
        "data": {"source": "csv", "members": "mine", "label": "income"},
        "overrides": [o for o in TINY_AUDIT if not o.startswith("target.")],
        "repeats": repeats,
    }


@contextmanager
def shared_service(
    tmp_path: Path,
    database_url: str,
    slot: int,
    contributors: tuple[str, ...] = ("alice", "bob", "carol", "dave"),
) -> Iterator[LiveService]:
    """A live service whose audits stay queued: olivia's model upload ``forest`` (an xgboost
    of 600 Adult rows) and each contributor's data ``mine`` (300 other rows each)."""
    from panoramia.modalities.tabular.adult import load_adult

    train, _test = load_adult()
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    with queued_only_service(home, database_url, redis_database(slot),
                             rate_limit="1000/minute") as running:  # fmt: skip
        with running.client(running.token(OWNER)) as owner:
            _send(owner, "forest", "model", "forest.tar.gz",
                  _model_archive(train.iloc[:600], tmp_path / "forest"))  # fmt: skip
        for index, name in enumerate(contributors):
            with running.client(running.token(name)) as client:
                rows = train.iloc[600 + 300 * index : 900 + 300 * index]
                _send(client, "mine", "data", "mine.csv", _table(rows))
        yield running


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with shared_service(tmp_path, database_url, 1) as running:
        yield running


def _publish(client, version: str = "1", audience: object = ("alice", "bob", "carol")):  # type: ignore[no-untyped-def]
    body = {"name": "census", "version": version, "upload": "forest",
            "audience": audience if audience == "all" else list(audience)}  # fmt: skip
    return client.post("/v1/shared-models", json=body)


def test_three_contributors_audit_one_shared_model_and_each_reads_what_she_may(
    service: LiveService,
) -> None:
    clients = {name: service.client(service.token(name))
               for name in (OWNER, "alice", "bob", "carol", "dave")}  # fmt: skip
    owner, alice, bob, carol, dave = clients.values()
    published = _publish(owner)
    assert published.status_code == 201, published.text
    assert published.headers["Location"] == "/v1/shared-models/olivia/census/1/leakage"
    assert _publish(owner).status_code == 409  # the same version twice

    listed = alice.get("/v1/shared-models").json()
    assert [(m["owner"], m["name"], m["version"]) for m in listed] == [(OWNER, "census", "1")]
    assert set(listed[0]) == {"owner", "name", "version", "modality", "claim", "declared",
                              "published_at", "withdrawn", "mine", "audience", "names",
                              "audience_size"}  # fmt: skip
    assert listed[0]["names"] is None
    assert listed[0]["audience"] is None
    assert listed[0]["audience_size"] == 3  # she knows how many it is open to
    assert "forest" not in json.dumps(listed)
    assert owner.get("/v1/shared-models").json()[0]["names"] == ["alice", "bob", "carol"]

    # dave is outside the audience: every route of it is 404, as for a model that is not
    assert dave.get("/v1/shared-models").json() == []
    for path in ("/v1/shared-models/olivia/census/1/leakage",
                 "/v1/shared-models/olivia/census"):  # fmt: skip
        assert dave.get(path).status_code == 404
    assert dave.delete("/v1/shared-models/olivia/census/1").status_code == 404
    refused = dave.post("/v1/audits", json=_audit_body())
    unknown = dave.post("/v1/audits", json=_audit_body(version="9"))
    assert refused.status_code == unknown.status_code == 404
    assert refused.json()["detail"].replace(":1 ", ":9 ") == unknown.json()["detail"]
    assert alice.delete("/v1/shared-models/olivia/census/1").status_code == 403
    for forged in ("Olivia", "olivia ", "alice", "olivia%2Fcensus"):  # names near the real one
        for client in (alice, dave):
            answer = client.get(f"/v1/shared-models/{forged}/census/1/leakage")
            assert answer.status_code == 404, (forged, answer.text)
    assert alice.get("/v1/shared-models/olivia/Census/1/leakage").status_code == 404

    audits = {}
    for name, client, repeats in (("alice", alice, 1), ("bob", bob, 3), ("carol", carol, 1)):
        answer = client.post("/v1/audits", json=_audit_body(repeats=repeats))
        assert answer.status_code == 202, answer.text
        view = answer.json()
        assert view["request"]["shared"] == {"owner": OWNER, "name": "census", "version": "1"}
        assert view["request"]["target"] is None  # never the owner's file
        assert "forest" not in json.dumps(view)
        assert view["model"]["name"] == "olivia.census"
        group = view["repeat_group"]
        audits[name] = (
            [a.id for a in service.store.repeat_audits(service.store.authenticate(
                service.tokens[name]), group)] if group else [view["id"]]
        )  # fmt: skip
    finish(service, audits["alice"][0], leaks=True, seed=1)

    # one contributor counted: she reads her own row and nothing of the model's figures
    mine = alice.get("/v1/shared-models/olivia/census/1/leakage").json()
    assert mine["withheld"]
    assert mine["verdict"] is None
    assert mine["rows"] is None
    assert mine["contributors"] is None
    assert mine["eps_tilde"] is None
    assert mine["yours"]["runs"] == 1
    assert mine["yours"]["found"] is None
    assert bob.get("/v1/shared-models/olivia/census/1/leakage").json()["yours"] is None

    for index, audit_id in enumerate(audits["bob"]):
        finish(service, audit_id, leaks=True, seed=10 + index)
    finish(service, audits["carol"][0], leaks=False, seed=20)

    full = owner.get("/v1/shared-models/olivia/census/1/leakage").json()
    assert full["contributors"] == 3
    assert full["runs"] == 5
    assert full["verdict"]["level"] == "leaks"
    assert full["verdict"]["found"] == 2
    rows = {row["runs"]: row for row in full["rows"]}
    assert rows[3]["found"] is True  # bob's pooled group
    assert [row["found"] for row in full["rows"]].count(True) == 2
    assert all(row["who"].startswith("contributor-") for row in full["rows"])
    assert not any(name in json.dumps(full) for name in ("alice", "bob", "carol"))

    with service.client(service.token("root", admin=True)) as admin:
        assert admin.get("/v1/shared-models/olivia/census/1/leakage").json() == full

    seen = alice.get("/v1/shared-models/olivia/census/1/leakage").json()
    assert seen["withheld"] is None
    assert seen["verdict"]["level"] == "leaks"
    assert seen["rows"] is None
    assert seen["yours"]["found"] is True
    for owners_only in ("eps_tilde", "o1_eps_lb", "first_audit_at", "last_audit_at"):
        assert seen[owners_only] is None, owners_only  # each end, each time is one person's
    assert seen["verdict"]["smallest_p"] is None
    assert "p = " not in seen["verdict"]["sentence"]
    assert seen["verdict"]["found"] == 2
    others = [row["who"] for row in full["rows"] if row["who"] != seen["yours"]["who"]]
    assert len(others) == 2
    assert not any(p in json.dumps(seen) for p in others)

    # carol chooses to be named, then a forged report of the model's name enters nothing
    chosen = "/v1/shared-models/olivia/census/1/participation?named=true"
    assert carol.put(chosen).json()["named"] is True
    assert dave.put(chosen).status_code == 404
    forged = {"model": {"name": "olivia.census", "version": "1"},
              "report": judged_document(5, leaks=True)}  # fmt: skip
    for client in (alice, dave):
        assert client.post("/v1/reports", json=forged).status_code == 201
    again = owner.get("/v1/shared-models/olivia/census/1/leakage").json()
    assert again["contributors"] == 3
    assert again["runs"] == 5
    assert "carol" in [row["who"] for row in again["rows"]]

    # version 2 side by side; carol deleting her data takes her row out
    assert _publish(owner, version="2", audience="all").status_code == 201
    assert dave.get("/v1/shared-models").json()[0]["version"] == "2"  # "all" takes him in
    assert carol.delete("/v1/uploads/mine").status_code == 200
    both = owner.get("/v1/shared-models/olivia/census").json()
    assert [v["version"] for v in both["versions"]] == ["1", "2"]
    assert both["versions"][0]["contributors"] == 2
    assert both["versions"][1]["verdict"]["level"] == "not_audited"
    assert alice.get("/v1/shared-models/olivia/census/1/leakage").json()["withheld"]
    assert dave.get("/v1/shared-models/olivia/census").json()["versions"][0][
        "version"
    ] == "2"  # fmt: skip

    # bob withdraws his audits; the owner's file cannot go while published; withdrawn: 409
    left = bob.put("/v1/shared-models/olivia/census/1/participation?withdrawn=true")
    assert left.json()["withdrawn"] is True
    assert owner.get("/v1/shared-models/olivia/census/1/leakage").json()["contributors"] == 1
    kept = owner.delete("/v1/uploads/forest")
    assert kept.status_code == 409
    assert "withdraw it first" in kept.text
    assert owner.delete("/v1/shared-models/olivia/census/1").json()["withdrawn"] is True
    late = alice.post("/v1/audits", json=_audit_body())
    assert late.status_code == 409
    assert "withdrawn" in late.text
    assert alice.get("/v1/shared-models/olivia/census/1/leakage").status_code == 200
    for client in clients.values():
        client.close()


def test_every_field_of_the_leakage_report_declares_who_sees_it() -> None:
    """The walk over every field: each declares an audience, and a contributor's view built
    with fewer than three counted holds none of the aggregate or owner fields."""
    from datetime import UTC, datetime

    from panoramia.report.digest import report_digest
    from panoramia.report.shared_leakage import (
        ContributorUnit,
        Published,
        RunRecord,
        version_leakage,
        view_for,
    )

    audiences = {name: audience_of(name) for name in VersionLeakage.model_fields}
    assert set(audiences.values()) <= {"everyone", "aggregate", "owner", "self"}
    now = datetime.now(UTC)
    units = [
        ContributorUnit(key=k, label=f"contributor-{k}", named=False, runs=[
            RunRecord("succeeded", report_digest(judged_document(k, leaks=k == 1)), now)])
        for k in (1, 2)
    ]  # fmt: skip
    full = version_leakage(Published(OWNER, "census", "1", now, False, None), units)
    for count, chosen in ((2, units), (MIN_AGGREGATE, [*units, units[0].__class__(
            key=3, label="contributor-3", named=False, runs=units[1].runs)])):  # fmt: skip
        full = version_leakage(Published(OWNER, "census", "1", now, False, None), chosen)
        seen = view_for(full, "contributor", 1, chosen)
        for name, audience in audiences.items():
            value = getattr(seen, name)
            if audience == "owner" or (audience == "aggregate" and count < MIN_AGGREGATE):
                assert value is None, name
        if seen.verdict is not None:
            assert seen.verdict.smallest_p is None  # one contributor's p
        assert seen.yours is not None
        assert seen.yours.who == "contributor-1"
        text = seen.model_dump_json()
        assert "contributor-2" not in text
        assert "contributor-3" not in text
        owner_view = view_for(full, "owner", None, chosen)
        assert all(getattr(owner_view, n) is not None for n in ("rows", "verdict", "contributors"))


def test_holm_holds_under_any_dependence_and_finds_in_order() -> None:
    assert holm([0.01, 0.04, 0.03]) == [True, False, False]  # 0.01 ≤ 0.05/3; 0.03 > 0.025
    assert holm([0.001, 0.02, 0.04]) == [True, True, True]  # 0.02 ≤ 0.025, 0.04 ≤ 0.05
    assert holm([0.02, 0.02, 0.02]) == [False, False, False]
    assert holm([]) == []


def test_a_shared_model_is_audited_by_the_worker_through_the_cli(tmp_path: Path) -> None:
    """The owner publishes with ``panoramia models publish``; a contributor submits with
    ``audits submit --shared``; the worker's own code path (the confined child) stages the
    owner's file and audits it; ``reports model`` reads the version's report; a remote
    worker may fetch the owner's file only while such an audit runs."""
    from typer.testing import CliRunner

    from panoramia.cli import app as cli
    from panoramia.modalities.tabular.adult import load_adult
    from panoramia.service.worker.run import run_audit
    from panoramia.store.repository import AuditStatus

    def run(token: str, *args: str):  # type: ignore[no-untyped-def]
        env = {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": token}
        return CliRunner().invoke(cli, list(args), env=env)

    train, test = load_adult()
    home = tmp_path / "home"
    home.mkdir()
    with queued_only_service(home, f"sqlite:///{home / 'store.sqlite'}", redis_database(2),
                             rate_limit="1000/minute") as service:  # fmt: skip
        service: LiveService
        owner_token, alice_token = service.token(OWNER), service.token("alice")
        with service.client(owner_token) as owner:
            sent = _send(owner, "forest", "model", "forest.tar.gz",
                         _model_archive(train.iloc[:800], tmp_path / "forest"))  # fmt: skip
        with service.client(alice_token) as alice:
            _send(alice, "mine", "data", "mine.csv", _table(train.iloc[:800]))
            _send(alice, "held-out", "data", "held-out.csv", _table(test.iloc[:400]))
        published = run(owner_token, "models", "publish", "forest", "--name", "census",
                        "--audience", "alice,bob")  # fmt: skip
        assert published.exit_code == 0, published.output
        assert "olivia/census:1" in published.output
        listed = run(alice_token, "models", "shared")
        assert "olivia/census:1" in listed.output
        assert "2 named contributor(s)" in listed.output  # she knows how many it is open to
        assert "forest" not in listed.output
        mixed = run(alice_token, "audits", "submit", "--shared", "olivia/census:1",
                    "--model", "x", "--members", "mine")  # fmt: skip
        assert mixed.exit_code == 2
        assert "--shared" in mixed.output
        submitted = run(alice_token, "audits", "submit", "--shared", "olivia/census:1",
                        "--members", "mine", "--nonmembers", "held-out", "--label", "income",
                        *[f"-o{o}" for o in TINY_AUDIT if not o.startswith("target.")])  # fmt: skip
        assert submitted.exit_code == 0, submitted.output
        audit_id = submitted.output.strip()
        worker = service.store.create_contributor("worker-1", worker=True)
        with service.client(worker) as remote:
            assert remote.get(f"/v1/worker/uploads/{sent['id']}").status_code == 404
            assert service.store.claim(audit_id, "probe") is not None  # running now
            assert remote.get(f"/v1/worker/uploads/{sent['id']}").status_code == 200
        service.store.recover_orphans(stale_after=timedelta(0), max_attempts=5)  # queued again
        assert run_audit(service.store, service.settings, audit_id) == AuditStatus.SUCCEEDED
        shown = run(owner_token, "reports", "model", "olivia/census")
        assert shown.exit_code == 0, shown.output
        assert "olivia/census:1" in shown.output
        assert "contributor-" in shown.output  # her row, under a pseudonym
        assert "alice" not in shown.output
        hers = run(alice_token, "reports", "model", "olivia/census:1", "--json")
        found = json.loads(hers.output)
        assert found["withheld"]  # one contributor: only her own row
        assert found["yours"]["runs"] == 1
        assert found["yours"]["o1_eps_lb"] is not None  # she gave held-out rows
        with service.client(alice_token) as alice:
            view = alice.get(f"/v1/audits/{audit_id}").json()
            report = alice.get(f"/v1/reports/{view['report_id']}").json()
            page = alice.get(f"/v1/reports/{view['report_id']}/html").text
        for text in (json.dumps(view), json.dumps(report), page):
            assert "forest" not in text
            assert sent["id"] not in text  # her report names the shared model, not its file
        assert "shared model olivia/census:1" in json.dumps(report["document"]["config"])


def test_pseudonyms_are_per_version_and_runs_pool_without_cherry_picking(
    database_url: str,
) -> None:
    """A contributor's pseudonym is new under each version (an owner who publishes a version
    for one named contributor learns nothing of her rows under the others); her every ended
    run counts, pooled (a lucky rerun does not replace a quiet one); the owner's own audits
    of her model never count."""
    from panoramia.store import ReportStore, make_engine, upgrade
    from panoramia.store.repository import ModelRef
    from panoramia.store.shared_rows import Publication
    from panoramia.store.tables import SharedParticipant

    engine = make_engine(database_url)
    upgrade(engine)
    store = ReportStore(engine)
    owner = store.authenticate(store.create_contributor(OWNER))
    people = [store.authenticate(store.create_contributor(n)) for n in ("alice", "bob")]
    entries = []
    for version in ("1", "2"):
        entries.append(store.publish(owner, Publication(
            "census", version, None, "m", None, {}, None, everyone=True)))  # fmt: skip
        for person in [*people, owner]:
            (audit,) = store.create_audits(person, ModelRef("olivia.census", version),
                                           [{"overrides_resolved": []}],
                                           shared_model_id=entries[-1].id)  # fmt: skip
            assert store.claim(audit.id, "w") is not None
            content = ReportContent(document=judged_document(1, leaks=person is owner))
            store.finish(audit.id, "w", content, timings={})
    with store.sessions() as session:
        rows = session.query(SharedParticipant).all()
    assert len({row.pseudonym for row in rows}) == len(rows) == 6
    # alice reruns version 1 until one run calls a leak: both runs count, pooled
    (lucky,) = store.create_audits(people[0], ModelRef("olivia.census", "1"),
                                   [{"overrides_resolved": []}],
                                   shared_model_id=entries[0].id)  # fmt: skip
    store.claim(lucky.id, "w")
    store.finish(lucky.id, "w", ReportContent(document=judged_document(2, leaks=True)), {})
    units = store.leakage_units(entries[0].id)
    assert len(units) == 2  # alice and bob; the owner's own audit is not counted
    alice = next(u for u in units if u.key == people[0].contributor_id)
    assert len(alice.runs) == 2
    from panoramia.report.shared_leakage import version_leakage

    report = version_leakage(store.published(entries[0]), units)
    row = next(r for r in report.rows or [] if r.runs == 2)
    assert row.p_value > 0.5  # 2 · mean(0.001, 0.6): not the lucky run's 0.001
    assert row.found is False


def test_odd_owner_names_and_placed_models_keep_to_the_rule(
    service: LiveService, tmp_path: Path
) -> None:
    """A name outside Latin-1 (the Location header), a shared name of 100 characters (her
    entry's name), and a model the operator placed: her own upload of the same name is never
    audited in its stead."""
    import shutil

    from panoramia.modalities.tabular.adult import load_adult

    train, _ = load_adult()
    with service.client(service.token("李雷")) as owner:
        _send(owner, "forest", "model", "forest.tar.gz",
              _model_archive(train.iloc[:300], tmp_path / "li-forest"))  # fmt: skip
        body = {"name": "a" * 100, "version": "1", "upload": "forest", "audience": "all"}
        made = owner.post("/v1/shared-models", json=body)
        assert made.status_code == 201, made.text
        assert made.headers["Location"].startswith("/v1/shared-models/%E6%9D%8E")
    with service.client(service.tokens["alice"]) as alice:
        body = _audit_body() | {"shared": {"owner": "李雷", "name": "a" * 100, "version": "1"}}
        answer = alice.post("/v1/audits", json=body)
        assert answer.status_code == 202, answer.text
        assert answer.json()["model"]["name"].startswith("shared-")
    placed = service.settings.models_dir / "placed-forest"
    placed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tmp_path / "li-forest", placed)
    with service.client(service.token("root", admin=True)) as admin:
        body = {"name": "placed", "path": "placed-forest", "audience": "all"}
        assert admin.post("/v1/shared-models", json=body).status_code == 201
    with service.client(service.tokens["bob"]) as bob:
        refused = bob.post("/v1/shared-models", json=body | {"name": "mine"})
        assert refused.status_code == 403  # a placed folder is an admin's to publish
        _send(bob, "placed-forest", "model", "placed-forest.tar.gz",
              _model_archive(train.iloc[300:600], tmp_path / "bobs"))  # fmt: skip
        body = _audit_body() | {"shared": {"owner": "root", "name": "placed", "version": "1"}}
        answer = bob.post("/v1/audits", json=body)
        assert answer.status_code == 202, answer.text
    audit = service.store.get_audit(None, answer.json()["id"])
    assert "target" not in audit.request["uploads"]  # not his upload of the same name
    target = [o for o in audit.request["overrides_resolved"] if o.startswith("target.path=")]
    assert str(placed.resolve()) in target[0]


def test_a_quote_of_a_shared_model_keeps_to_its_audience(service: LiveService) -> None:
    """``POST /v1/quotes`` naming a shared model (issue 72): an audience member gets her own
    price and sizes, never the owner's file, upload or path; someone outside gets the same
    404 as for a version that does not exist; nothing is queued for either."""
    with service.client(service.token(OWNER)) as owner:
        assert _publish(owner).status_code == 201
    body = _audit_body()
    with service.client(service.token("alice")) as alice:
        quoted = alice.post("/v1/quotes", json=body)
        assert quoted.status_code == 200, quoted.text
        assert quoted.json()["members"] == 300  # her own rows
        text = quoted.text
        assert "forest" not in text
        assert str(service.settings.uploads_dir) not in text
    missing = body | {"shared": body["shared"] | {"version": "9"}}
    with service.client(service.token("dave")) as dave:
        outside, absent = dave.post("/v1/quotes", json=body), dave.post("/v1/quotes", json=missing)
    assert outside.status_code == absent.status_code == 404
    # the same words, naming only the version she asked for
    assert outside.json()["detail"].replace("census:1 ", "census:9 ") == absent.json()["detail"]
    for name in ("alice", "dave"):
        principal = service.store.authenticate(service.tokens[name])
        assert principal is not None
        assert service.store.audit_ids(principal.contributor_id) == []
