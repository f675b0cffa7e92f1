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

from panoramia.service import sessions
from panoramia.service.console import CONSOLE_POLICY
from panoramia.store.tokens import hash_token
from tests.service.test_service_api import upload
from tests.service_support import LiveService, queued_only_service, redis_database

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    """A live service whose audits stay queued (no worker): these tests run none."""
    with queued_only_service(
        tmp_path / "home", database_url, redis_database(3), rate_limit="1000/minute"
    ) as running:
        yield running


def browser(service: LiveService) -> httpx.Client:
    return httpx.Client(base_url=service.url, follow_redirects=False, timeout=30)


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


def test_forged_expired_and_revoked_sessions_go_back_to_sign_in(service: LiveService) -> None:
    token = service.token("alice")
    key = sessions.session_key(service.settings.home)
    digest = hash_token(token)
    with browser(service) as client:
        for cookie in [
            sessions.new_session(b"k" * 32, digest),  # another key
            sessions.new_session(key, digest, now=time.time() - sessions.SESSION_S - 1),
            sessions.new_session(key, digest)[:-1] + "0",  # a changed signature
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
