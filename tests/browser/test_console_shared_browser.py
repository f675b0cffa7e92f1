"""A shared model in Chromium (issue 69): its owner publishes her model upload through the
console's form, a contributor of its audience audits it through the audit form, two more
audit it through the API, their audits are finished as a worker finishes them (the service
here has no worker), and the leakage page answers the owner (the verdict and every row) and
the contributor (the verdict and her own row) in a browser, at 1280 and 390 px, with axe-core
finding nothing serious. Screenshots go where ``tests/browser/test_console_browser.py``'s
do (``$PANORAMIA_SCREENSHOTS``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.test_console_browser import CHROMIUM, _chromium_page, shot
from tests.conftest import fresh_database
from tests.service.test_shared_models import OWNER, _audit_body, finish, shared_service
from tests.service_support import LiveService

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium (apt-get install chromium, or PANORAMIA_CHROMIUM)"
)
LEAKAGE = "/console/shared/olivia/census"


@pytest.fixture(params=["postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """PostgreSQL, the deployment's database, as the console's other walk."""
    yield from fresh_database(request, tmp_path)


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[LiveService]:
    """Olivia's model upload ``forest``; alice, bob and carol each hold data ``mine``; audits
    stay queued (no worker)."""
    with shared_service(tmp_path, database_url, 2, ("alice", "bob", "carol")) as running:
        yield running


@pytest.fixture
def page(database_url: str) -> Iterator[object]:
    yield from _chromium_page()


def sign_in(page, service: LiveService, name: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{service.url}/console/login")
    page.fill("#token", service.token(name))
    page.click("button[type=submit]")
    sync_api.expect(page.locator("h1")).to_have_text("Your models")


def test_an_owner_publishes_a_model_and_reads_its_contributors_audits(  # type: ignore[no-untyped-def]
    service: LiveService, page, database_url: str
) -> None:
    expect = sync_api.expect
    sign_in(page, service, OWNER)
    page.get_by_role("navigation").get_by_role("link", name="Shared models").click()
    expect(page.locator("h1")).to_have_text("Shared models")
    page.get_by_label("Model upload").select_option("forest")
    page.get_by_label("Name", exact=True).fill("census")
    page.get_by_label("Version").fill("1")
    page.get_by_label("only the contributors named below").check()
    page.get_by_label("Contributors' names").fill("alice, bob")  # carol forgotten
    shot(page, "s1-publish-form", database_url)
    page.get_by_label("Contributors' names").fill("")
    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("alert")).to_contain_text("Audience: name at least one")
    expect(page.get_by_label("Name", exact=True)).to_have_value("census")  # what she typed
    page.get_by_label("Contributors' names").fill("alice, bob, carol")
    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("status")).to_contain_text("Published version 1")
    expect(page.locator("h1")).to_contain_text("olivia/census")
    shot(page, "s2-published", database_url)
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, service, "alice")
    page.get_by_role("navigation").get_by_role("link", name="Start an audit").click()
    page.get_by_label("Data (members)").select_option("mine")
    page.get_by_role("button", name="Next").click()
    page.get_by_label("Model", exact=True).select_option(label="Shared: olivia/census version 1")
    page.get_by_label("Label column").select_option("income")
    page.get_by_label("Repeats").fill("1")
    shot(page, "s3-audit-form", database_url)
    page.get_by_role("button", name="Start the audit").click()
    expect(page.locator("h1")).to_contain_text("Audit of olivia.census")
    audit_id = page.url.split("/audits/")[1].split("?")[0]
    expect(page.locator("main")).not_to_contain_text("forest")  # never the owner's upload
    expect(page.get_by_role("link", name="olivia/census")).to_have_attribute("href", LEAKAGE)

    started = [audit_id]
    for name in ("bob", "carol"):
        with service.client(service.token(name)) as client:
            answer = client.post("/v1/audits", json=_audit_body())
            assert answer.status_code == 202, answer.text
            started.append(answer.json()["id"])
    for index, (started_id, leaks) in enumerate(zip(started, (True, True, False), strict=True)):
        finish(service, started_id, leaks=leaks, seed=index + 1)

    page.goto(f"{service.url}{LEAKAGE}")
    expect(page.locator(".versions .verdict")).to_contain_text("Leaks: at least one")
    expect(page.get_by_role("heading", name="Your audit")).to_be_visible()
    expect(page.locator("main")).to_contain_text("The model-level test finds your data.")
    assert page.get_by_role("heading", name="Contributors' audits").count() == 0
    shot(page, "s4-leakage-contributor", database_url)
    page.get_by_role("button", name="Show my name to the owner").click()
    expect(page.get_by_role("status")).to_contain_text("now sees your name")
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, service, OWNER)
    page.get_by_role("navigation").get_by_role("link", name="Shared models").click()
    page.get_by_role("link", name="olivia/census").click()
    expect(page.locator(".versions .verdict h3")).to_have_text("Version 1")
    expect(page.locator(".versions .verdict")).to_contain_text(
        "Leaks: at least one contributor's data is found"
    )
    expect(page.locator(".versions .verdict")).to_contain_text("Holm's test over the 3")
    rows = page.get_by_role("region", name="contributors' audits of version 1").locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text="alice")).to_contain_text("(named)")
    expect(rows.filter(has_text="yes")).not_to_have_count(0)
    shot(page, "s5-leakage-owner", database_url)

    # a second version, to every contributor: the two side by side
    page.get_by_role("link", name="All shared models").click()
    expect(page.get_by_role("region", name="shared models you published")).to_contain_text(
        "alice, bob, carol"
    )
    page.get_by_label("Name", exact=True).fill("census")
    page.get_by_label("Version").fill("2")
    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("status")).to_contain_text("Published version 2")
    cards = page.locator(".versions .verdict")
    expect(cards).to_have_count(2)
    expect(cards.nth(1)).to_contain_text("Not audited yet")
    expect(page.locator("table.side thead")).to_contain_text("Version 2")
    page.get_by_label("no new audit may name version 1").check()
    page.get_by_role("button", name="Withdraw version 1").click()
    expect(page.get_by_role("status")).to_contain_text("Withdrew version 1")
    expect(cards.nth(0).locator("h3")).to_contain_text("(withdrawn)")
    shot(page, "s6-two-versions-one-withdrawn", database_url)
    assert not [problem for problem in page.problems if "Content Security Policy" in problem]
