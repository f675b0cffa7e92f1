"""Shared models in the console over HTTP (issue 69): the owner publishes her model upload
through the form, three contributors of its audience audit it through the audit form with
their own data, and the leakage page shows each what the rule lets her see (the owner every
row; a contributor the model's figures once three are counted, and her own row); an outsider
gets the same Not found page as for a model that does not exist, on every route, GET and
POST. The audits stay queued (no worker) and are finished as a worker finishes them
(``tests/service/test_shared_models.py``'s ``finish``); the browser walk is
``tests/browser/test_console_shared_browser.py``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from tests.service.test_console import FORM, browser, page_csrf, sign_in
from tests.service.test_shared_models import OWNER, finish, shared_service
from tests.service_support import LiveService

LEAKAGE = "/console/shared/olivia/census"
SHARED = "shared:olivia/census/1"


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    """Olivia's model upload ``forest``; alice, bob, carol and dave each hold data ``mine``."""
    with shared_service(tmp_path, database_url, 1) as running:
        yield running


def console(service: LiveService, name: str) -> httpx.Client:
    client = browser(service)
    assert sign_in(client, service.token(name)).status_code == 303
    return client


def post(client: httpx.Client, path: str, **fields: str) -> httpx.Response:
    body = urlencode({"csrf": page_csrf(client), **fields})
    return client.post(path, content=body, headers=FORM)


def alert(page: httpx.Response) -> str:
    found = re.search(r'role="alert"[^>]*>(.*?)</p>', page.text, re.S)
    assert found is not None, page.text[:2000]
    return found.group(1)


def audit_through_the_form(client: httpx.Client, repeats: int = 1) -> httpx.Response:
    return post(client, "/console/audits/new", members="mine", model=SHARED, label="income",
                repeats=str(repeats))  # fmt: skip


def test_shared_models_in_the_console_for_owner_audience_and_outsider(
    service: LiveService,
) -> None:
    owner, alice, bob, carol, dave = (
        console(service, name) for name in (OWNER, "alice", "bob", "carol", "dave")
    )
    listed = owner.get("/console/shared")
    assert listed.status_code == 200
    assert 'href="/console/shared"' in listed.text  # the nav's link
    assert '<option value="forest"' in listed.text  # her model upload, offered to publish
    assert "through the API" in listed.text  # no claim from the form: it says so

    # the publish form's refusals: one line beside the form, what she typed kept
    for fields, status, line in (
        ({"audience": "named", "names": " , "}, 422, "Audience: name at least one"),
        ({"audience": "named", "names": "alice, a/b"}, 422, "Audience: &#39;a/b&#39; is not"),
        ({"names": "alice"}, 422, "Audience: you named contributors but chose every"),
        ({"upload": "nope"}, 404, "Model upload: no model upload of yours named"),
        ({"name": "census data"}, 422, "Name: String should match pattern"),
    ):
        sent = {"upload": "forest", "name": "census", "version": "1", "audience": "all"}
        refused = post(owner, "/console/shared", **(sent | fields))
        assert refused.status_code == status, (fields, refused.status_code)
        assert line in alert(refused), fields
        assert f'value="{(sent | fields)["name"]}"' in refused.text
    forged = owner.post("/console/shared", content="csrf=nope&upload=forest&name=census",
                        headers=FORM)  # fmt: skip
    assert forged.status_code == 403
    published = post(owner, "/console/shared", upload="forest", name="census", version="1",
                     audience="named", names="alice, bob,carol")  # fmt: skip
    assert published.status_code == 303, alert(published)
    assert published.headers["location"] == f"{LEAKAGE}?said=published&version=1"
    again = post(owner, "/console/shared", upload="forest", name="census", version="1",
                 audience="all")  # fmt: skip
    assert again.status_code == 409
    assert "already published" in alert(again)
    page = owner.get(published.headers["location"]).text
    assert "Published version 1" in page
    assert "Who may audit it: alice, bob, carol." in page
    assert "Withdraw version 1" in page
    assert "No contributor's audit of it has ended yet." in page

    # the audience: the list, the audit form's option, her page before she audits
    seen = alice.get("/console/shared").text
    assert f'href="{LEAKAGE}"' in seen
    assert "forest" not in seen  # never the owner's upload
    form = alice.get("/console/audits/new?members=mine").text
    assert f'<option value="{SHARED}">Shared: olivia/census version 1</option>' in form
    assert "You have not audited this version" in alice.get(LEAKAGE).text

    # a control with a shared model: the API's one line
    with_control = post(alice, "/console/audits/new", members="mine", model=SHARED,
                        label="income", repeats="2", control="forest")  # fmt: skip
    assert with_control.status_code == 422
    assert "shared names the model: give it without model, target or control" in alert(with_control)
    assert f'<option value="{SHARED}" selected>' in with_control.text  # her choice stays

    started = {}
    for name, client, repeats in (("alice", alice, 1), ("bob", bob, 3), ("carol", carol, 1)):
        answer = audit_through_the_form(client, repeats)
        assert answer.status_code == 303, alert(answer)
        started[name] = answer.headers["location"]
    assert started["alice"].startswith("/console/audits/")
    assert started["bob"].startswith("/console/repeats/")
    principal = service.store.authenticate(service.tokens["bob"])
    assert principal is not None
    group = started["bob"].split("/")[3].split("?")[0]
    bobs = [audit.id for audit in service.store.repeat_audits(principal, group)]
    ids = {name: started[name].split("/")[3].split("?")[0] for name in ("alice", "carol")}
    audit_page = alice.get(f"/console/audits/{ids['alice']}").text
    assert "olivia.census" in audit_page
    assert "forest" not in audit_page

    finish(service, ids["alice"], leaks=True, seed=1)
    few = alice.get(LEAKAGE).text
    assert "Fewer than 3 contributors have audited this version" in few
    assert "Your audit" in few
    assert "Whether the model-level test finds your data is shown once 3" in few
    assert "Contributors' audits" not in few
    assert "Leaks: at least one" not in few
    assert "withheld" in few

    for index, audit_id in enumerate(bobs):
        finish(service, audit_id, leaks=True, seed=10 + index)
    finish(service, ids["carol"], leaks=False, seed=20)

    full = owner.get(LEAKAGE).text
    assert "Leaks: at least one contributor&#39;s data is found" in full
    assert "Holm&#39;s test over the 3 contributors" in full
    pseudonyms = set(re.findall(r"contributor-[0-9a-f]{6}", full))
    assert len(pseudonyms) == 3
    assert "Contributors' audits" in full
    table = full.split("Contributors' audits")[1].split("</table>")[0]
    assert table.count("<tr>") == 4  # the header and three rows
    assert not any(f">{name}<" in table for name in ("alice", "bob", "carol"))
    mine = alice.get(LEAKAGE).text
    assert "Leaks: at least one contributor&#39;s data is found" in mine
    assert "The model-level test finds your data." in mine
    assert "Contributors' audits" not in mine
    hers = set(re.findall(r"contributor-[0-9a-f]{6}", mine))
    assert len(hers) == 1  # her own pseudonym, never another's
    assert hers < pseudonyms

    # her choices: named to the owner, then out of the report and back
    named = post(alice, f"{LEAKAGE}/1/participation", choice="named")
    assert named.status_code == 303
    assert "now sees your name" in alice.get(named.headers["location"]).text
    assert 'alice <span class="hint">(named)</span>' in owner.get(LEAKAGE).text
    left = post(alice, f"{LEAKAGE}/1/participation", choice="left")
    assert left.status_code == 303
    assert "You took your audits out of this report" in alice.get(LEAKAGE).text
    assert owner.get(LEAKAGE).text.split("Contributors' audits")[1].count("<tr>") == 3
    assert post(alice, f"{LEAKAGE}/1/participation", choice="back").status_code == 303
    assert "alice <span" in owner.get(LEAKAGE).text
    assert post(alice, f"{LEAKAGE}/1/participation", choice="other").status_code == 422
    refused = post(owner, f"{LEAKAGE}/1/participation", choice="named")
    assert refused.status_code == 409  # she has not audited it
    assert post(alice, f"{LEAKAGE}/1/withdraw", confirm="yes").status_code == 403

    # the outsider: every route of it is the page a model that does not exist gives
    assert "census" not in dave.get("/console/shared").text
    assert SHARED not in dave.get("/console/audits/new?members=mine").text
    nothing = dave.get("/console/shared/olivia/nothing")
    assert nothing.status_code == 404
    for answer in (
        dave.get(LEAKAGE),
        post(dave, f"{LEAKAGE}/1/participation", choice="named"),
        post(dave, f"{LEAKAGE}/1/withdraw", confirm="yes"),
        post(dave, "/console/shared/olivia/nothing/1/withdraw", confirm="yes"),
    ):
        assert answer.status_code == 404
        assert answer.text.replace(page_csrf(dave), "") == nothing.text.replace(page_csrf(dave), "")
    blind = audit_through_the_form(dave)
    unknown = post(dave, "/console/audits/new", members="mine", model="shared:olivia/census/9",
                   label="income", repeats="1")  # fmt: skip
    assert blind.status_code == unknown.status_code == 422  # the form's answer to a field
    assert alert(blind) == alert(unknown).replace(":9 ", ":1 ")
    assert "Model: no shared model olivia/census:1 you may audit" in alert(blind)

    # the owner withdraws: never one click; then no new audit, the report stays
    unticked = post(owner, f"{LEAKAGE}/1/withdraw")
    assert unticked.status_code == 422
    assert "Nothing was withdrawn" in unticked.text
    gone = post(owner, f"{LEAKAGE}/1/withdraw", confirm="yes")
    assert gone.status_code == 303
    assert "Withdrew version 1" in owner.get(gone.headers["location"]).text
    assert "withdrawn" in owner.get("/console/shared").text
    assert SHARED not in alice.get("/console/audits/new?members=mine").text
    late = audit_through_the_form(alice)
    assert late.status_code == 422
    assert "Model: olivia/census:1 was withdrawn by its owner" in alert(late)
    assert "Leaks: at least one" in alice.get(LEAKAGE).text
    for client in (owner, alice, bob, carol, dave):
        client.close()


def test_a_declared_guarantee_reads_in_words() -> None:
    from panoramia.accounting.claims import DpSgdClaim, EpsDeltaClaim
    from panoramia.service.console.shared_pages import claim_words

    assert claim_words(EpsDeltaClaim(3.0, 1e-5).to_dict()) == "(ε = 3, δ = 1e-05)-DP"
    dpsgd = DpSgdClaim.single_phase(1.1, sample_rate=0.01, steps=1000, dataset_size=60_000)
    assert claim_words(dpsgd.to_dict()) == (
        "DP-SGD (σ = 1.1, sampling rate 0.01, 1,000 steps, N = 60,000), for data differing "
        "by adding or removing one record"
    )
    assert claim_words(None) == claim_words({"kind": "none"}) == "none declared"
    assert claim_words({"kind": "dpsgd"}) == "a guarantee this page cannot read"
