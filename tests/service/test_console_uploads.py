"""The console's upload form takes an upload's kind from the file by default (issue 72): a
file that is not an archive is data, an archive is data unless it holds a model (its
target.json), which is then taken again as a model, leaving nothing of the first try; an
explicit "data" or "model" that does not fit the file is refused in one line, nothing kept."""

from __future__ import annotations

import gzip
import json
import re
import tarfile

import httpx

from tests.service.test_console import browser, service, sign_in
from tests.service.test_uploads import CSV, _file, _tar, stored_files
from tests.service_support import LiveService

__all__ = ["service"]  # the fixture, imported for the tests below

MANIFEST = json.dumps({"format": "xgboost-json", "file": "model.json"}).encode()


def _tar_gz(entries: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    return gzip.compress(_tar(entries))


def _model_tar_gz() -> bytes:
    """A model folder (``forest/`` with its target.json) as a .tar.gz."""
    return _tar_gz([_file("forest/target.json", MANIFEST), _file("forest/model.json", b"{}")])


def _form_csrf(client: httpx.Client) -> str:
    page = client.get("/console/uploads")
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


def _post(
    client: httpx.Client, csrf: str, filename: str, content: bytes, kind: str | None = None
) -> httpx.Response:
    """The upload form sent with ``filename``'s ``content`` (and ``kind``, unless None: a
    form without one)."""
    fields = {"csrf": csrf} | ({"kind": kind} if kind else {})
    return client.post("/console/uploads", data=fields, files={"file": (filename, content)})


def _cells(page: str, name: str) -> list[str]:
    """The listing's cells of her upload ``name``: name, state, delete link, what it holds,
    kind, bytes, sent."""
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        cells = [cell.strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no row of {name!r} in the listing")


def _notice(answer: httpx.Response, client: httpx.Client) -> str:
    """The success notice of the page an accepted form redirects to."""
    assert answer.status_code == 303, answer.text
    page = client.get(answer.headers["location"]).text
    found = re.search(r'<p class="notice" role="status">(.*?)</p>', page, re.S)
    assert found is not None, page
    return found.group(1)


def _upload_folders(service: LiveService) -> list[str]:
    """The upload ids with a folder under the service's uploads directory."""
    return sorted(path.name for path in service.settings.uploads_dir.glob("*/*"))


def test_from_the_file_a_model_archive_is_a_model_and_anything_else_data(
    service: LiveService,
) -> None:
    folder = _tar_gz([_file("tables/a.csv", CSV), _file("tables/b.csv", CSV)])
    with browser(service) as client:
        sign_in(client, service.token("alice"))
        form = client.get("/console/uploads").text
        assert re.search(r'<input type="radio" name="kind" value="auto" checked>', form)
        assert "from the file (a .tar.gz holding a target.json is a model)" in form
        assert not re.search(r'value="(data|model)" checked', form)
        csrf = _form_csrf(client)
        notice = _notice(_post(client, csrf, "census.csv", CSV, "auto"), client)
        assert notice.startswith("Uploaded and checked: <strong>census</strong> (data: not an")
        notice = _notice(_post(client, csrf, "forest.tar.gz", _model_tar_gz(), "auto"), client)
        assert notice.startswith(
            "Uploaded and checked: <strong>forest</strong> (a model: it holds a target.json)."
        )
        notice = _notice(_post(client, csrf, "tables.tar.gz", folder), client)  # no kind sent
        assert "<strong>tables</strong> (data: an archive without a target.json)" in notice
        listing = client.get("/console/uploads").text
    assert _cells(listing, "census")[4] == "data"
    assert _cells(listing, "census")[3].startswith("3 rows; columns x (")
    forest = _cells(listing, "forest")
    assert (forest[1], forest[4]) == ("ready", "model")
    assert forest[3] == "a xgboost-json model, 2 files"
    tables = _cells(listing, "tables")
    assert (tables[3], tables[4]) == ("2 files", "data")
    with service.client(service.token("alice")) as alice:
        uploads = alice.get("/v1/uploads").json()
    assert sorted(u["name"] for u in uploads) == ["census", "forest", "tables"]
    assert _upload_folders(service) == sorted(u["id"] for u in uploads)  # no first try's left
    kept = {path.parent.name for path in service.settings.uploads_dir.rglob("incoming")}
    assert kept == set()  # every upload moved into its content/, none half-received


def test_an_explicit_kind_that_does_not_fit_the_file_is_refused_and_nothing_kept(
    service: LiveService,
) -> None:
    with browser(service) as client:
        sign_in(client, service.token("alice"))
        csrf = _form_csrf(client)
        refused = _post(client, csrf, "forest.tar.gz", _model_tar_gz(), "data")
        assert refused.status_code == 422, refused.text
        alert = re.search(r'<p class="error" role="alert">(.*?)</p>', refused.text, re.S)
        assert alert is not None
        assert alert.group(1).startswith(
            "forest.tar.gz: holds a model (its target.json): upload it as a model"
        )
        assert alert.group(1).endswith("(nothing was kept)")
        assert stored_files(service) == []
        assert _upload_folders(service) == []
        refused = _post(client, csrf, "census.csv", CSV, "model")
        assert refused.status_code == 422, refused.text
        assert "census.csv: a model upload is one of .tar, .tar.gz, .tgz" in refused.text
        assert stored_files(service) == []
        chosen = _notice(_post(client, csrf, "forest.tar.gz", _model_tar_gz(), "model"), client)
        assert chosen.startswith("Uploaded and checked: <strong>forest</strong>. ")  # she said
        listing = client.get("/console/uploads").text
    assert _cells(listing, "forest")[4] == "model"
    with service.client(service.token("alice")) as alice:
        assert [u["name"] for u in alice.get("/v1/uploads").json()] == ["forest"]
