"""The contributor console in Chromium (Playwright), against a live service on SQLite and
PostgreSQL: sign in, only one's own models, a model page and a report, an audit followed to
its end, another contributor's ids as 404 pages, sign out. Screenshots of every page go to
``$PANORAMIA_SCREENSHOTS`` (default ``artifacts/console``, git-ignored).

Skipped, with the reason, where no Chromium is installed (``apt-get install chromium``; CI
installs it). Set ``PANORAMIA_CHROMIUM`` to use another Chromium build.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TINY_AUDIT
from tests.service.test_service_api import upload
from tests.service_support import LiveService, live_service, settings_for

CHROMIUM = os.environ.get("PANORAMIA_CHROMIUM") or shutil.which("chromium")
SCREENSHOTS = Path(os.environ.get("PANORAMIA_SCREENSHOTS", "artifacts/console"))
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium (apt-get install chromium, or PANORAMIA_CHROMIUM)"
)


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    settings = settings_for(tmp_path / "home", database_url, heartbeat_s=0.5)
    with live_service(settings) as running:
        yield running


@pytest.fixture
def page(database_url: str) -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        opened = context.new_page()
        opened.set_default_timeout(30_000)
        problems: list[str] = []
        opened.on("console", lambda message: problems.append(message.text))
        opened.problems = problems  # type: ignore[attr-defined]
        try:
            yield opened
        finally:
            context.close()
            browser.close()


def shot(page, name: str, database_url: str) -> None:  # type: ignore[no-untyped-def]
    kind = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{kind}-{name}.png", full_page=True)


def test_a_contributor_uses_the_console(service: LiveService, page, database_url: str) -> None:  # type: ignore[no-untyped-def]
    expect = sync_api.expect
    with service.client(service.token("bob")) as bob:
        secret = upload(bob, model="secret")
    with service.client(service.token("alice")) as alice:
        upload(alice, model="census", version="1")
        upload(alice, model="census", version="2")
        body = {"model": {"name": "census", "version": "3"},
                "target": {"config": "mlp_overfit"}, "overrides": TINY_AUDIT}  # fmt: skip
        audit = alice.post("/v1/audits", json=body).json()
    token = service.tokens["alice"]

    page.goto(f"{service.url}/console")
    expect(page).to_have_url(f"{service.url}/console/login")
    shot(page, "1-sign-in", database_url)
    page.fill("#token", "pan_not-a-token")
    page.click("button[type=submit]")
    expect(page.get_by_role("alert")).to_contain_text("unknown, revoked or expired")
    page.fill("#token", token)
    page.click("button[type=submit]")

    expect(page).to_have_url(f"{service.url}/console/models")
    expect(page.locator("h1")).to_have_text("Your models")
    expect(page.get_by_role("link", name="census").first).to_be_visible()
    assert page.get_by_text("secret").count() == 0
    shot(page, "2-models", database_url)

    page.get_by_role("link", name="census").first.click()
    expect(page.locator(".verdict h2")).to_be_visible()
    expect(page.locator("img.plot")).to_be_visible()
    assert page.locator("img.plot").evaluate("image => image.naturalWidth") > 0
    expect(page.locator("table").first).to_contain_text("ε̃ one-sided")
    shot(page, "3-model", database_url)

    page.locator("table a").first.click()
    expect(page.locator("h1")).to_contain_text("census")
    expect(page.locator("table.figures")).to_contain_text("ε̃, one-sided game")
    shot(page, "4-report", database_url)
    page.get_by_role("link", name="Open the full report").click()
    expect(page.locator("body")).to_contain_text("report")

    page.goto(f"{service.url}/console/audits/{audit['id']}")
    expect(page.locator(".status-box h2")).to_be_visible()
    shot(page, "5-audit-running", database_url)
    # the page reloads itself (meta refresh, no script) until the audit ends
    expect(page.locator(".status-box h2")).to_have_text("Succeeded", timeout=240_000)
    shot(page, "6-audit-done", database_url)
    page.get_by_role("link", name="See its report").click()
    expect(page.locator(".verdict h2")).to_be_visible()
    expect(page.locator("h1")).to_contain_text("version 3")

    for path in ["/console/models/secret", f"/console/reports/{secret['id']}"]:
        answer = page.goto(f"{service.url}{path}")
        assert answer is not None
        assert answer.status == 404
        expect(page.locator("h1")).to_have_text("Not found")
    shot(page, "7-not-found", database_url)

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{service.url}/console/login")
    page.goto(f"{service.url}/console/models")
    expect(page).to_have_url(f"{service.url}/console/login")
    assert not [problem for problem in page.problems if "Content Security Policy" in problem]
