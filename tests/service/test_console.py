"""The contributor console over HTTP (no browser): sign-in, sessions, CSRF, tenancy, headers.

The browser tests (tests/browser/) drive the same pages in Chromium; these check what a
browser does not show: cookie attributes, refused forms, forged or expired sessions, another
contributor's ids, escaping of uploaded text and the pages' security headers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from panoramia.service.console import sessions
from panoramia.service.console.pages import CONSOLE_POLICY
from panoramia.store.repository import ReportContent
from panoramia.store.tokens import hash_token
from tests.service.test_service_api import upload
from tests.service_support import (
    LiveService,
    live_service,
    queued_only_service,
    redis_database,
    report_document_for_test,
    settings_for,
)

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    """A live service whose audits stay queued (no worker): these tests run none."""
    with queued_only_service(
        tmp_path / "home", database_url, redis_database(3), rate_limit="1000/minute"
    ) as running:
        yield running


def browser(service: LiveService) -> httpx.Client:
    return service.client(None, follow_redirects=False, timeout=30)


def login_csrf(client: httpx.Client) -> str:
    page = client.get("/console/login")
    assert page.status_code == 200
    return re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]


def sign_in(client: httpx.Client, token: str, **headers: str) -> httpx.Response:
    csrf = login_csrf(client)
    return client.post(
        "/console/login", content=f"csrf={csrf}&token={token}", headers=FORM | headers
    )


def page_csrf(client: httpx.Client) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/console/models").text)
    assert found is not None
    return found.group(1)


def test_sign_in_sets_a_strict_http_only_cookie_and_never_puts_the_token_in_a_url(
    service: LiveService,
) -> None:
    token = service.token("alice")
    with browser(service) as client:
        assert client.get("/console/models").headers["location"] == "/console/login"
        signed = sign_in(client, token)
        assert signed.status_code == 303
        assert signed.headers["location"] == "/console/models"
        cookie = next(c for c in signed.headers.get_list("set-cookie") if "panoramia_session" in c)
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        assert "Path=/console" in cookie
        assert "Secure" not in cookie  # plain HTTP here: a Secure cookie would never come back
        assert token not in cookie
        key = sessions.session_key(service.settings.home)
        held = sessions.session_digest(key, client.cookies["panoramia_session"])
        assert held == hash_token(token)
        models = client.get("/console/models")
        assert models.status_code == 200
        assert "Signed in as" in models.text
        wrong = sign_in(client.__class__(base_url=service.url), "not-a-token")
        assert wrong.headers["location"] == "/console/login?failed=token"
        assert token not in wrong.headers["location"]
    # behind a TLS proxy (uvicorn trusts X-Forwarded-Proto from 127.0.0.1) the cookie is Secure
    with browser(service) as client:
        signed = sign_in(client, token, **{"x-forwarded-proto": "https"})
        secure = next(c for c in signed.headers.get_list("set-cookie") if "panoramia_session" in c)
        assert "Secure" in secure


def test_forms_without_their_csrf_token_or_from_another_origin_are_refused(
    service: LiveService,
) -> None:
    token = service.token("alice")
    with browser(service) as client:
        # no login form fetched: no CSRF cookie to match
        forged = client.post("/console/login", content=f"csrf=x&token={token}", headers=FORM)
        assert forged.headers["location"] == "/console/login?failed=form"
        csrf = login_csrf(client)
        for body, headers in [
            (f"csrf=other&token={token}", FORM),
            (f"token={token}", FORM),
            (f"csrf={csrf}&token={token}", FORM | {"origin": "https://evil.example"}),
        ]:
            refused = client.post("/console/login", content=body, headers=headers)
            assert refused.headers["location"] == "/console/login?failed=form"
            assert "panoramia_session" not in client.cookies
        assert sign_in(client, token).status_code == 303
        # sign-out needs the session's own CSRF token
        assert client.post("/console/logout", content="csrf=nope", headers=FORM).status_code == 403
        assert client.get("/console/models").status_code == 200
        out = client.post("/console/logout", content=f"csrf={page_csrf(client)}", headers=FORM)
        assert out.status_code == 303
        assert out.headers["location"] == "/console/login"
        assert client.get("/console/models").status_code == 303


def _flipped(cookie: str) -> str:
    return cookie[:-1] + ("1" if cookie.endswith("0") else "0")


def test_forged_expired_and_revoked_sessions_go_back_to_sign_in(service: LiveService) -> None:
    token = service.token("alice")
    key = sessions.session_key(service.settings.home)
    digest = hash_token(token)
    with browser(service) as client:
        for cookie in [
            sessions.new_session(b"k" * 32, digest),  # another key
            sessions.new_session(key, digest, now=time.time() - sessions.SESSION_S - 1),
            _flipped(sessions.new_session(key, digest)),  # a changed signature
            "garbage",
        ]:
            client.cookies.set("panoramia_session", cookie, path="/console")
            assert client.get("/console/models").headers["location"] == "/console/login"
        client.cookies.set("panoramia_session", sessions.new_session(key, digest), path="/console")
        assert client.get("/console/models").status_code == 200
        service.store.revoke_token("alice")
        assert client.get("/console/models").headers["location"] == "/console/login"


def test_another_contributors_model_report_and_audit_are_404_pages(service: LiveService) -> None:
    with service.client(service.token("bob")) as bob:
        secret = upload(bob, model="secret")
        audit = bob.post(
            "/v1/audits",
            json={"model": {"name": "secret", "version": "2"},
                  "target": {"config": "mlp_generalised"}, "overrides": ["target.epochs=1"]},
        ).json()  # fmt: skip
    with service.client(service.token("alice")) as alice:
        upload(alice, model="census")
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        listing = client.get("/console/models").text
        assert "census" in listing
        assert "secret" not in listing
        for path in [
            "/console/models/secret",
            f"/console/reports/{secret['id']}",
            f"/console/reports/{secret['id']}/page",
            f"/console/audits/{audit['id']}",
            "/console/models/nobody",
            "/console/reports/not-an-id",
            "/console/models/..%2F..%2Fetc",
        ]:
            answer = client.get(path)
            assert answer.status_code == 404, path
            assert "Not found" in answer.text
            assert "secret" not in answer.text.replace("/console/models/secret", "")
    with browser(service) as admin:
        sign_in(admin, service.token("root", admin=True))
        assert admin.get("/console/models/secret").status_code == 200


def test_pages_carry_the_policy_no_script_and_escape_uploaded_text(
    service: LiveService,
) -> None:
    with service.client(service.token("alice")) as alice:
        claim = {"statements": ["<script>alert(1)</script> declared"], "violation": False}
        report = upload(alice, model="census", claim=claim)
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        for path in [
            "/console/login",
            "/console/models",
            "/console/models/census",
            f"/console/reports/{report['id']}",
        ]:
            answer = client.get(path)
            assert answer.status_code == 200, path
            assert answer.headers["content-security-policy"] == CONSOLE_POLICY
            assert answer.headers["x-frame-options"] == "DENY"
            assert answer.headers["cache-control"] == "no-store"
            assert "<script" not in answer.text
            assert " style=" not in answer.text  # style-src 'self': no inline styles
        model_page = client.get("/console/models/census").text
        assert "&lt;script&gt;alert(1)&lt;/script&gt; declared" in model_page
        full = client.get(f"/console/reports/{report['id']}/page")
        assert "sandbox" in full.headers["content-security-policy"]
        stylesheet = client.get("/console/static/console.css")
        assert stylesheet.headers["content-type"].startswith("text/css")


MALFORMED = [
    {"claim": [1]}, {"claim": "x"}, {"claim": {"summary": "x"}}, {"two_sided": "x"},
    {"two_sided": {"eps_tilde": "abc", "c_lb": 1.0, "c_plus_eps_lb": 1.2}},
    {"two_sided": {"eps_tilde": 0.1, "c_lb": "x", "c_plus_eps_lb": 0.2}},
    {"verdict": {"level": "x", "headline": "y"}},
    {"verdict": {"level": "leak_detected", "quote": {"value": "abc", "confidence": 0.9}}},
    {"claim": {"summary": {"epsilons": {"1e-05": "abc"}, "mu": "abc"}}},
    {"reference_audits": {"o1": {"eps_lb": "x"}}},
]  # fmt: skip
"""Uploaded report documents whose fields have the wrong types (the upload schema lets
unknown and loosely typed sections through): pages must still render."""


def test_malformed_uploaded_documents_never_break_a_page(service: LiveService) -> None:
    with service.client(service.token("mallory")) as mallory:
        reports = [
            upload(mallory, model=f"odd{index}", **changes)
            for index, changes in enumerate(MALFORMED)
        ]
    with browser(service) as client:
        sign_in(client, service.tokens["mallory"])
        assert client.get("/console/models").status_code == 200
        for index, report in enumerate(reports):
            model_page = client.get(f"/console/models/odd{index}")
            assert model_page.status_code == 200, MALFORMED[index]
            report_page = client.get(f"/console/reports/{report['id']}")
            assert report_page.status_code == 200, MALFORMED[index]
    with browser(service) as admin:  # one contributor's upload cannot break the admin's list
        sign_in(admin, service.token("root", admin=True))
        assert admin.get("/console/models").status_code == 200
    # an uploaded verdict is never shown: the digest reads it off the figures
    with service.client(service.tokens["mallory"]) as mallory:
        forged = {"level": "no_leak_detected", "headline": "No leak detected",
                  "sentence": "Trust me.", "quote": {"value": 0.0, "confidence": 0.95}}  # fmt: skip
        shown = upload(mallory, model="forged", verdict=forged)
    with browser(service) as client:
        sign_in(client, service.tokens["mallory"])
        page = client.get(f"/console/reports/{shown['id']}").text
        assert "Trust me." not in page
        assert "Leak detected" in page  # report_document_for_test's figures: ε̃ 0.13
    with service.client(service.tokens["mallory"]) as mallory:  # nor stored
        stored = mallory.get(f"/v1/reports/{shown['id']}").json()["document"]["verdict"]
        assert stored["level"] == "leak_detected"


UPLOADED = "uploaded by its owner, not run by the service"
"""How a page marks an uploaded report's verdict (its report page says "(uploaded)")."""


def _cell_with(page: str, text: str) -> str:
    """The one table cell of ``page`` that holds ``text``."""
    cells = [cell for cell in re.findall(r"<td[^>]*>(.*?)</td>", page, re.S) if text in cell]
    assert len(cells) == 1, (text, cells)
    return cells[0]


def test_an_uploaded_verdict_is_never_shown_as_a_models_latest_unmarked(
    service: LiveService,
) -> None:
    """Issue 68, finding 6: a contributor uploads a report after the service's audit of her
    model called a leak; the models list (hers and the admin's) and the model page's latest
    box show the latest verdict the service ran, and the uploaded one only marked as
    uploaded; a model with only uploaded reports shows its verdict marked too."""
    with service.client(service.token("alice")) as alice:
        audit = alice.post(
            "/v1/audits",
            json={"model": {"name": "census"}, "target": {"config": "mlp_generalised"}},
        ).json()
    assert service.store.claim(audit["id"], "w1") is not None
    content = ReportContent(report_document_for_test(shift=1.0), "<html></html>")
    audited = service.store.finish(audit["id"], "w1", content, {})  # Leak detected, 0.13
    with service.client(service.tokens["alice"]) as alice:
        forged = upload(alice, model="census", **report_document_for_test(shift=0.0))
        only = upload(alice, model="mine", **report_document_for_test(shift=0.0))
    no_leak = 'level-no_leak_detected">No leak detected'
    for token in (service.tokens["alice"], service.token("root", admin=True)):
        with browser(service) as client:
            sign_in(client, token)
            listing = client.get("/console/models").text
            census = listing.split('href="/console/models/census"')[1].split("</tr>")[0]
            assert 'level-leak_detected">Leak detected' in census
            assert "0.13" in census  # the service's figure, not the upload's 0.00
            assert UPLOADED in _cell_with(census, no_leak)
            mine = listing.split('href="/console/models/mine"')[1].split("</tr>")[0]
            assert UPLOADED in _cell_with(mine, no_leak)
            page = client.get("/console/models/census").text
            latest = page.split("<h2>ε̃ over time</h2>")[0]
            assert f'href="/console/reports/{audited}"' in latest
            assert "<h2>Leak detected</h2>" in latest
            assert "<h2>No leak detected</h2>" not in latest
            assert f'href="/console/reports/{forged["id"]}"' in latest  # the newer upload
            assert UPLOADED in latest
            own = client.get("/console/models/mine").text.split("<h2>ε̃ over time</h2>")[0]
            assert f'href="/console/reports/{only["id"]}"' in own
            assert "<h2>No leak detected</h2>" in own
            assert UPLOADED in own


def test_a_model_page_never_loads_report_documents(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        for version in ("1", "2"):
            upload(alice, model="census", version=version)
    principal = service.store.authenticate(service.tokens["alice"])
    assert principal is not None
    reports, _audits = service.store.model_history(principal, "census")
    assert len(reports) == 2
    assert all("document" not in report.__dict__ for report in reports)  # deferred, never read
    assert all(report.digest["verdict"]["level"] == "leak_detected" for report in reports)


def test_signing_out_ends_the_session_even_if_its_cookie_is_replayed(
    service: LiveService,
) -> None:
    token = service.token("alice")
    with browser(service) as client:
        sign_in(client, token)
        saved = client.cookies["panoramia_session"]
        out = client.post("/console/logout", content=f"csrf={page_csrf(client)}", headers=FORM)
        assert out.status_code == 303
        client.cookies.set("panoramia_session", saved, path="/console")
        assert client.get("/console/models").headers["location"] == "/console/login"
        client.cookies.clear()
        assert sign_in(client, token).status_code == 303  # signing in again works at once
        assert client.get("/console/models").status_code == 200


def test_sign_in_attempts_are_limited_per_address_whatever_the_headers(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}",
                            rate_limit="5/minute")  # fmt: skip
    with live_service(settings) as service, browser(service) as client:
        csrf = login_csrf(client)
        codes = [
            client.post(
                "/console/login", content=f"csrf={csrf}&token=wrong{attempt}",
                headers=FORM | {"authorization": f"Bearer fresh{attempt}"},
            ).status_code
            for attempt in range(8)
        ]  # fmt: skip
        assert codes[:5] == [303] * 5
        assert codes[5:] == [429] * 3


def test_a_bad_session_key_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PANORAMIA_SESSION_KEY", "not-hex")
    with pytest.raises(sessions.SessionKeyError, match="PANORAMIA_SESSION_KEY: not hexadecimal"):
        sessions.session_key(tmp_path)
    monkeypatch.delenv("PANORAMIA_SESSION_KEY")
    key = sessions.session_key(tmp_path)
    assert sessions.session_key(tmp_path) == key  # made once, then read
    assert (tmp_path / "session.key").stat().st_mode & 0o777 == 0o600
    (tmp_path / "session.key").chmod(0o644)
    with pytest.raises(sessions.SessionKeyError, match="readable by others"):
        sessions.session_key(tmp_path)
    (tmp_path / "session.key").write_text("")
    (tmp_path / "session.key").chmod(0o600)
    with pytest.raises(sessions.SessionKeyError, match="empty or cut short; delete it"):
        sessions.session_key(tmp_path)


def test_the_audit_form_and_the_model_deletion_answer_bad_input_in_one_line(
    service: LiveService,
) -> None:
    """Odd form input is a 4xx page, never a 500: a repeats of '²' (a digit to str.isdigit),
    a NUL in a name, another's group; the delete button deletes only her own entry (an admin
    sees others' and is told it is not hers), and its answer survives a reload."""
    import json

    from tests.service.test_uploads import CSV, _file, _tar, announce, send

    manifest = json.dumps({"format": "xgboost-json", "file": "model.json"}).encode()
    forest = _tar([_file("forest/target.json", manifest), _file("forest/model.json", b"{}")])
    with service.client(service.token("alice")) as alice:
        created = announce(alice, CSV)
        assert send(alice, created.json()["id"], 0, CSV).json()["state"] == "ready"
        model = announce(alice, forest, name="forest", kind="model", filename="forest.tar")
        assert send(alice, model.json()["id"], 0, forest).json()["state"] == "ready"
        upload(alice, model="census")
    with service.client(service.token("bob")) as bob:
        upload(bob, model="census")
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        assert client.get("/console/models?page=%C2%B2").status_code == 200
        form = client.get("/console/audits/new?members=members")
        assert form.status_code == 200
        assert 'for="label">Label column</label>' in form.text
        assert '<option value="colour">colour</option>' in form.text
        csrf = page_csrf(client)
        for body in (
            f"csrf={csrf}&members=members&label=y&model=nope&model_name=m&version=1&repeats=%C2%B2",
            f"csrf={csrf}&members=%00&label=y&model=x&model_name=m&version=1&repeats=1",
            f"csrf={csrf}&members=members&label=y&model=x&model_name=m&version=1&repeats=11",
            f"csrf={csrf}&members=members&label=y&model=x&model_name=a%20b&version=1&repeats=1",
        ):
            answer = client.post("/console/audits/new", content=body, headers=FORM)
            assert 400 <= answer.status_code < 500, (body, answer.status_code)
            assert 'role="alert"' in answer.text
        assert client.get(f"/console/repeats/{'0' * 36}").status_code == 404
        unticked = client.post("/console/models/census/delete", content=f"csrf={csrf}",
                               headers=FORM)  # fmt: skip
        assert unticked.status_code == 422  # one click deletes nothing
        assert "Nothing was deleted" in unticked.text
        assert client.get("/console/models/census").status_code == 200
        gone = client.post("/console/models/census/delete", content=f"csrf={csrf}&confirm=yes",
                           headers=FORM)  # fmt: skip
        assert gone.status_code == 303
        after = client.get(gone.headers["location"])
        assert (
            "Deleted model entry &#39;census&#39; (version 1): 1 report and 0 audits" in after.text
        )
        assert client.get("/console/models/census").status_code == 404
    with browser(service) as admin:
        sign_in(admin, service.token("root", admin=True))
        seen = admin.get("/console/models/census")
        assert seen.status_code == 200  # bob's entry
        assert "Only its owner deletes it" in seen.text
        assert 'action="/console/models/census/delete"' not in seen.text
    with service.client(service.tokens["bob"]) as bob:
        assert bob.get("/v1/models/census/reports").status_code == 200  # bob's stays
