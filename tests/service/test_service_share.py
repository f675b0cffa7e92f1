"""One contributor's fair share: audits priced before they are queued, every stored byte
counted (database and files), paged listings, and the sign-in limit at its default."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from panoramia.service.resource_limits import AuditLimits
from panoramia.service.submission.command import compose_job
from panoramia.service.submission.cost import estimate_cost
from tests.service_support import LiveService, queued_only_service, redis_database

BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"}}
WIDE = "target.hidden=[" + ",".join(["4096"] * 8) + "]"


def _estimate(*overrides: str) -> float:
    return estimate_cost(OmegaConf.to_container(compose_job(list(overrides)), resolve=False)).total


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    with queued_only_service(
        tmp_path / "home", database_url, redis_database(2), rate_limit="100000/minute"
    ) as running:
        yield running


def test_the_estimate_grows_with_every_heavier_setting_and_admits_the_project_recipes() -> None:
    base = _estimate()
    assert _estimate("target.epochs=100") > base
    assert _estimate("target.hidden=[1024,1024]") > base
    assert _estimate("audit.ensemble=6") > base
    assert _estimate("helper.n_rows=60000") > base
    assert _estimate("data.max_members=1000") < base
    image = _estimate("--config-name=image")
    for heavier in ("generator.filter.max_drop=0.99", "generator.filter.extra_fraction=100",
                    "generator.labeler_epochs=500", "generator.loss_matching.epochs=500",
                    "generator.sampling_steps=1000"):  # fmt: skip
        assert _estimate("--config-name=image", heavier) > image, heavier
    budget = AuditLimits().max_audit_cost
    for recipe in (
        [], ["target=mlp_overfit"], ["target=xgboost"], ["generator=ctgan"],
        ["--config-name=image"], ["--config-name=image", "target=cnn_overfit"],
        ["--config-name=image", "target=resnet_overfit"], ["--config-name=text"],
    ):  # fmt: skip
        assert _estimate(*recipe) < budget / 3, recipe  # three of them may be queued at once
    assert _estimate(WIDE, "target.epochs=500") > budget
    assert _estimate("--config-name=image", "+experiment=cifar10") > budget  # paper scale


def test_an_audit_past_the_budget_is_refused_at_the_door_naming_estimate_and_budget(
    service: LiveService,
) -> None:
    with service.client(service.token("mallory")) as mallory:
        started = time.perf_counter()
        heavy = BODY | {"overrides": [WIDE, "target.epochs=500"]}
        response = mallory.post("/v1/audits", json=heavy)
        elapsed = time.perf_counter() - started
    assert response.status_code == 422, response.text
    message = response.json()["detail"][0]["msg"]
    assert "audit cost estimate 8.8e+14 multiply-adds (target: 8.8e+14)" in message
    assert "over your budget 5e+14 (PANORAMIA_MAX_AUDIT_COST)" in message
    assert elapsed < 3.0  # the issue's < 1 s is measured by benchmarks/hostile_share.py
    assert service.store.queued_audit_ids() == []


def test_queued_work_counts_against_the_budget_until_it_ends(
    tmp_path: Path, database_url: str
) -> None:
    budget = 2.5 * _estimate()
    limits = replace(AuditLimits(), max_audit_cost=budget)
    with queued_only_service(tmp_path / "home", database_url, redis_database(2),
                             rate_limit="100000/minute", limits=limits) as service:  # fmt: skip
        with service.client(service.token("alice")) as alice:
            codes = [alice.post("/v1/audits", json=BODY).status_code for _ in range(3)]
            assert codes == [202, 202, 429]
            refused = alice.post("/v1/audits", json=BODY)
            assert "with your queued and running audits' 1.4e+11" in refused.json()["detail"]
            assert refused.headers["retry-after"] == "60"
            usage = alice.get("/v1/usage").json()
            assert usage["queued_cost"] == pytest.approx(2 * _estimate(), rel=1e-9)
            assert usage["cost_budget"] == budget
            first = service.store.queued_audit_ids()[0]
            assert alice.delete(f"/v1/audits/{first}").status_code == 200
            assert alice.post("/v1/audits", json=BODY).status_code == 202
        with service.client(service.token("bob")) as bob:  # her budget is hers alone
            assert bob.post("/v1/audits", json=BODY).status_code == 202


def test_files_count_in_the_quota_beside_the_database(tmp_path: Path, database_url: str) -> None:
    with queued_only_service(tmp_path / "home", database_url, redis_database(2),
                             rate_limit="100000/minute",
                             max_storage_bytes=2 * 2**20) as service:  # fmt: skip
        token = service.token("alice")
        with service.client(token) as alice:
            declared = {"notes": "x" * 10_000}
            body = BODY | {"model": BODY["model"] | {"declared": declared}}
            assert alice.post("/v1/audits", json=body).status_code == 202
            before = alice.get("/v1/usage").json()
            assert before["database_bytes"] > 10_000  # the request and the declared metadata
            assert before["file_bytes"] == 0
            audit_id = service.store.queued_audit_ids()[0]
            contributor = service.store.authenticate(token).contributor_id
            run_dir = service.settings.audits_dir / audit_id / "inputs"
            run_dir.mkdir(parents=True)
            (run_dir / "members.csv").write_bytes(b"1" * 2**20)
            stage = service.settings.artifacts_dir / str(contributor) / "stage"
            stage.mkdir(parents=True)
            (stage / "model.pt").write_bytes(b"2" * 2**20)
            after = alice.get("/v1/usage").json()
            assert after["file_bytes"] == 2 * 2**20
            full = alice.post("/v1/audits", json=BODY)
            assert full.status_code == 507, full.text
            assert "reports, audits and their files" in full.json()["detail"]
        with service.client(service.token("bob")) as bob:
            assert bob.get("/v1/usage").json()["file_bytes"] == 0
            assert bob.post("/v1/audits", json=BODY).status_code == 202


def test_the_model_listing_is_paged_and_carries_no_document(service: LiveService) -> None:
    admin = service.token("root", admin=True)
    for index in range(5):
        with service.client(service.token(f"user{index}")) as user:
            body = BODY | {"model": {"name": f"m{index}", "version": "1"}}
            assert user.post("/v1/audits", json=body).status_code == 202
    with service.client(admin) as client:
        first = client.get("/v1/models", params={"limit": 2})
        assert [m["name"] for m in first.json()] == ["m0", "m1"]
        assert first.headers["link"] == '</v1/models?limit=2&offset=2>; rel="next"'
        last = client.get("/v1/models", params={"limit": 2, "offset": 4})
        assert [m["name"] for m in last.json()] == ["m4"]
        assert "link" not in last.headers
        assert client.get("/v1/models", params={"limit": 1001}).status_code == 422
        assert set(first.json()[0]) == {"name", "version", "owner", "declared", "claim",
                                        "reports", "latest_report_at"}  # fmt: skip


def test_sign_in_is_limited_at_the_default_rate(tmp_path: Path, database_url: str) -> None:
    """``PANORAMIA_RATE_LIMIT``'s default (30 a minute) holds for the console's sign-in."""
    from tests.service.test_console import FORM, browser, login_csrf

    with queued_only_service(tmp_path / "home", database_url, redis_database(2)) as service:
        assert service.settings.rate_limit == "30/minute"
        with browser(service) as client:
            csrf = login_csrf(client)
            codes = [
                client.post("/console/login", content=f"csrf={csrf}&token=wrong{attempt}",
                            headers=FORM).status_code
                for attempt in range(32)
            ]  # fmt: skip
    assert codes[:30] == [303] * 30
    assert codes[30:] == [429, 429]


def test_the_console_lists_models_a_page_at_a_time(
    service: LiveService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from panoramia.service.console import pages as console
    from tests.service.test_console import browser, sign_in

    monkeypatch.setattr(console, "MODELS_PER_PAGE", 2)
    token = service.token("alice")
    with service.client(token) as alice:
        for index in range(3):
            body = BODY | {"model": {"name": f"m{index}", "version": "1"}}
            assert alice.post("/v1/audits", json=body).status_code == 202
    with browser(service) as client:
        assert sign_in(client, token).status_code == 303
        first = client.get("/console/models").text
        assert "m0" in first
        assert "m1" in first
        assert "/console/models/m2" not in first
        assert 'href="/console/models?page=2"' in first
        second = client.get("/console/models", params={"page": 2}).text
        assert "/console/models/m2" in second
        assert "← previous page" in second
        assert "next page" not in second
        assert "No models on page 3" in client.get("/console/models?page=3").text
        for bad in ("abc", "0", "-1", "99999999999"):  # the first page, never a JSON error
            odd = client.get("/console/models", params={"page": bad})
            assert odd.status_code == 200
            assert odd.headers["content-type"].startswith("text/html")
            assert "/console/models/m0" in odd.text


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("distinguisher.grid=[{n_estimators:'nan'}]", "is not a finite number"),
        ("distinguisher.grid=[{max_depth:nan}]", "is not a finite number"),
        ("distinguisher.grid=[{n_estimators:abc}]", "expected a number, got 'abc'"),
        ("distinguisher.grid=[{n_estimators:[1]}]", "expected a number"),
        ("target.epochs='inf'", "target.epochs"),
    ],
)
def test_a_value_that_is_no_number_cannot_unprice_an_audit(
    service: LiveService, override: str, message: str
) -> None:
    with service.client(service.token("mallory")) as mallory:
        response = mallory.post("/v1/audits", json=BODY | {"overrides": [override]})
        assert response.status_code == 422, response.text
        assert message in response.text
        assert mallory.get("/v1/usage").json()["queued_cost"] == 0


def test_a_members_file_is_counted_by_its_rows_not_its_packed_size(tmp_path: Path) -> None:
    import gzip

    import pandas as pd

    from panoramia.service.submission.cost import data_rows

    frame = pd.DataFrame({"a": [1] * 200_000, "b": ["x"] * 200_000})
    frame.to_parquet(tmp_path / "m.parquet")
    with gzip.open(tmp_path / "m.csv.gz", "wt") as packed:
        frame.to_csv(packed, index=False)
    config = {"modality": "tabular", "data": {"pool_size": 100}}
    parquet = data_rows(config | {"data": {"members_path": str(tmp_path / "m.parquet")}})
    assert parquet == 200_000
    packed_rows = data_rows(config | {"data": {"members_path": str(tmp_path / "m.csv.gz")}})
    plain = (tmp_path / "m.csv.gz").stat().st_size / 64
    assert packed_rows >= 10 * plain
    capped = {"members_path": str(tmp_path / "m.parquet"), "max_members": 500}
    assert data_rows(config | {"data": capped}) == 500


def test_a_members_file_swapped_for_a_link_prices_as_unreadable(tmp_path: Path) -> None:
    """The price never reads through a link: a file swapped for one after the submission's
    checks is counted at nothing (the worker's copy then refuses it with one line)."""
    import pandas as pd

    from panoramia.service.submission.cost import data_rows

    theirs = tmp_path / "bob" / "secret.parquet"
    theirs.parent.mkdir()
    pd.DataFrame({"a": range(50_000)}).to_parquet(theirs)
    mine = tmp_path / "alice" / "members.parquet"
    mine.parent.mkdir()
    mine.symlink_to(theirs)
    config = {"modality": "tabular", "data": {"pool_size": 100, "members_path": str(mine)}}
    assert data_rows(config) == 100  # the embedded pool's size, not bob's 50,000 rows
    folder = tmp_path / "alice" / "texts"
    folder.mkdir()
    (folder / "link.txt").symlink_to(theirs)
    text = {"modality": "text", "data": {"pool_chunks": 7, "members_path": str(folder)}}
    assert data_rows(text) == 7
