"""How much of her data is audited, and a way to audit more (issue 72 item 4): the API prices
a request at each audit size without queueing it (``POST /v1/quotes``), the console's form
shows the sizes with the members each scores and its price, and the size she picks reaches
the audit's split."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest

from panoramia.service.submission.audit_size import (
    members_scored,
    size_overrides,
    size_refusal,
    size_split,
)
from tests.service.test_console import FORM, browser, page_csrf, service, sign_in
from tests.service.test_console_defaults import _ready, _selected
from tests.service.test_uploads import _file, _tar
from tests.service_support import LiveService

__all__ = ["service"]  # the fixture, imported for the tests below

SPLIT = {"generator": 0.4, "attack_train": 0.25, "attack_val": 0.1, "audit": 0.25}


def test_a_larger_size_moves_members_from_the_generator_to_the_audit_part() -> None:
    larger = size_split(SPLIT, "larger")
    assert larger == {"generator": 0.3, "attack_train": 0.25, "attack_val": 0.1, "audit": 0.35}
    assert size_overrides(SPLIT, "standard") == []
    assert size_overrides(SPLIT, "largest") == ["data.split.generator=0.2", "data.split.audit=0.45"]
    assert members_scored(larger, 2400) == 420  # half of the 840 in the audit part
    assert members_scored(larger, None) is None
    assert size_refusal(larger, 2400) is None
    assert "under 10 rows" in str(size_refusal(larger, 40))  # 0.1 · 40 = 4 rows
    text = {"generator": 0.3, "attack_train": 0.2, "attack_val": 0.1, "audit": 0.4}
    assert "under 15%" in str(size_refusal(size_split(text, "largest"), 5000))
    with pytest.raises(KeyError):
        size_split(SPLIT, "huge")


def _uploads(service: LiveService) -> None:
    rows = "age,code,colour,outcome\n" + "".join(
        f"{20 + i % 50},{i},{'red' if i % 3 else 'blue'},{'yes' if i % 2 else 'no'}\n"
        for i in range(400)
    )
    manifest = {"format": "xgboost-json", "file": "model.json", "classes": ["no", "yes"]}
    folder = _tar([_file("m/target.json", json.dumps(manifest).encode()),
                   _file("m/model.json", b"{}")])  # fmt: skip
    with service.client(service.token("alice")) as alice:
        _ready(alice, rows.encode(), name="members", filename="members.csv")
        _ready(alice, folder, name="overfit", kind="model", filename="o.tar")


def test_the_api_prices_each_size_and_queues_nothing(service: LiveService) -> None:
    _uploads(service)
    request = {"model": {"name": "m", "version": "1"}, "target": {"path": "overfit"},
               "data": {"source": "csv", "members": "members", "label": "outcome"}}  # fmt: skip
    with service.client(service.token("alice")) as alice:
        quoted = alice.post("/v1/quotes", json=request | {"repeats": 3})
        assert quoted.status_code == 200, quoted.text
        quote = quoted.json()
        assert quote["runs"] == 3
        assert quote["cost"] == pytest.approx(3 * quote["per_run"])
        sizes = {option["size"]: option for option in quote["sizes"]}
        assert sizes["standard"]["overrides"] == []
        assert sizes["standard"]["refused"] is None
        assert sizes["standard"]["cost"] == pytest.approx(quote["cost"])
        asked = request | {"overrides": ["data.split.generator=0.3", "data.split.audit=0.35"]}
        again = alice.post("/v1/quotes", json=asked).json()  # sizes from the source's split
        assert [o["members_scored"] for o in again["sizes"]] == [
            o["members_scored"] for o in quote["sizes"]
        ]
        assert again["split"]["generator"] == 0.4
        scored = [sizes[name]["members_scored"] for name in ("standard", "larger", "largest")]
        assert scored[0] < scored[1] < scored[2]
        assert sizes["larger"]["overrides"] == ["data.split.generator=0.3", "data.split.audit=0.35"]
        wrong = alice.post(
            "/v1/quotes", json=request | {"data": request["data"] | {"label": "age"}}
        )
        assert wrong.status_code == 422
        assert "does not predict" in wrong.text
        assert wrong.json()["detail"][0]["loc"] == ["body", "data", "label"]
        code = alice.post(
            "/v1/quotes", json=request | {"data": request["data"] | {"label": "code"}}
        )
        assert code.status_code == 422  # 400 values: too many to record, a feature
        assert "holds more than 50 different values" in code.text
        assert alice.post("/v1/quotes", json={}).status_code == 422
    contributor = service.store.authenticate(service.tokens["alice"])
    assert contributor is not None
    assert service.store.audit_ids(contributor.contributor_id) == []


def test_the_form_shows_each_size_with_its_price_and_the_chosen_one_reaches_the_split(
    service: LiveService,
) -> None:
    _uploads(service)
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        csrf = page_csrf(client)
        body = (f"csrf={csrf}&members=members&nonmembers=&label=outcome&model=overfit"
                "&model_name=m&version=1&repeats=1&size=larger")  # fmt: skip
        checked = client.post("/console/audits/new", content=body + "&action=quote", headers=FORM)
        assert checked.status_code == 200, checked.text
        page = checked.text
        assert "Checked, nothing started: this would run 1 audit for" in page
        assert "of your 400 members scored, for" in page
        assert "multiply-adds" in page
        assert 'name="size" value="larger" checked' in page  # her choice kept
        contributor = service.store.authenticate(service.tokens["alice"]).contributor_id
        assert service.store.audit_ids(contributor) == []
        started = client.post("/console/audits/new", content=body, headers=FORM)
        assert started.status_code == 303, started.text
        audit_id = started.headers["location"].split("?")[0].rsplit("/", 1)[-1]
        resolved = service.store.get_audit(None, audit_id).request["overrides_resolved"]
        assert "data.split.audit=0.35" in resolved
        assert "data.split.generator=0.3" in resolved
        odd = client.post("/console/audits/new", content=body.replace("larger", "huge"),
                          headers=FORM)  # fmt: skip
        assert odd.status_code == 422
        assert "Audit size: choose one of the audit sizes" in odd.text


def test_a_failed_audit_offers_change_and_retry_with_her_fields(service: LiveService) -> None:
    """Issue 72 item 2: a failed audit's page says what failed and offers "Change and retry",
    the form again with her fields (members, model, label, slices, size) as she sent them."""
    from panoramia.store.common import AuditStatus

    _uploads(service)
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        csrf = page_csrf(client)
        body = (f"csrf={csrf}&members=members&nonmembers=&label=outcome&model=overfit"
                "&slices=colour&model_name=census&version=3&repeats=1&size=larger")  # fmt: skip
        started = client.post("/console/audits/new", content=body, headers=FORM)
        audit_id = started.headers["location"].split("?")[0].rsplit("/", 1)[-1]
        queued = client.get(f"/console/audits/{audit_id}").text
        assert "Change and retry" not in queued  # only once it failed
        assert service.store.claim(audit_id, "w1") is not None
        said = "label 'outcome': value 'maybe' unknown to the model"
        assert service.store.release(audit_id, "w1", AuditStatus.FAILED, said, {})
        failed = client.get(f"/console/audits/{audit_id}").text
        assert said.replace("'", "&#39;") in failed
        link = re.search(r'<a class="button" href="([^"]+)">Change and retry</a>', failed)
        assert link is not None
        form = client.get(link.group(1).replace("&amp;", "&")).text
        assert _selected(form, "label") == ["outcome"]
        assert _selected(form, "model") == ["overfit"]
        assert 'name="size" value="larger" checked' in form
        assert 'type="checkbox" name="slices" value="colour" checked' in form
        assert re.search(r'<input id="version"[^>]*value="3"', form)
        assert re.search(r'<input id="model_name"[^>]*value="census"', form)


def test_a_source_from_the_form_names_no_file_outside_the_configs() -> None:
    """The form's "holds" is hers: it reaches ``default_split`` only as a registered source."""
    from panoramia.service.submission.audit_size import default_split

    assert default_split("csv")["audit"] == 0.25
    for source in ("../../../etc/hostname", "csv/../csv", "unknown"):
        with pytest.raises(KeyError):
            default_split(source)


def test_the_models_list_orders_versions_as_numbers_and_never_lists_a_control(
    service: LiveService,
) -> None:
    """Issue 72: "version 3-control" read as a version of the target; versions sorted as text
    put 10 before 2."""
    from panoramia.service.console.pages import version_order
    from tests.service.test_service_api import upload

    assert sorted(["10", "2", "1.10", "1.9", "b"], key=version_order) == [
        "1.9", "1.10", "2", "10", "b"
    ]  # fmt: skip
    with service.client(service.token("alice")) as alice:
        for version in ("10", "2", "2-control"):
            upload(alice, model="census", version=version)
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        listing = client.get("/console/models").text
    assert re.search(r'data-label="Versions">2, 10 <span class="hint">\(and your control', listing)
    assert "beside 2)</span>" in listing
    assert "2-control" not in listing


def test_hostile_form_fields_get_one_line_and_nothing_is_read(service: LiveService) -> None:
    """The form's own text against a live server: a folder upload's "holds" naming a path,
    and a "Change and retry" link with markup and odd values (escaped; the POST checks all)."""
    folder = _tar([_file("docs/a.txt", b"some text"), _file("docs/b.txt", b"more text")])
    with service.client(service.token("alice")) as alice:
        _ready(alice, folder, name="docs", filename="docs.tar")
    _uploads(service)
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        csrf = page_csrf(client)
        for holds in ("../../../etc/hostname", "csv/../csv", "images\x00"):
            body = (f"csrf={csrf}&members=docs&model=overfit&model_name=m&version=1&repeats=1"
                    f"&holds={quote(holds)}&action=quote")  # fmt: skip
            answer = client.post("/console/audits/new", content=body, headers=FORM)
            assert answer.status_code == 422, answer.text
            assert "choose what the folder holds" in answer.text
        odd = client.get("/console/audits/new", params={
            "retry": "1", "members": "members", "label": "<script>x</script>",
            "size": "../../x", "model": "x" * 5000, "slices": ["a"] * 50,
        })  # fmt: skip
        assert odd.status_code == 200
        assert "<script>x</script>" not in odd.text
        assert 'value="../../x" checked' not in odd.text  # not a size the form offers
