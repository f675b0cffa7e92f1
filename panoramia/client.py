"""HTTP client of the report service (used by ``panoramia reports …`` / ``panoramia audits …``).

Errors (unreachable server, bad token, 404, 422) raise :class:`ServiceError`, an
:class:`InputError` whose one-line message names the request and the server's reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx

from panoramia.errors import InputError
from panoramia.hashing import file_sha256


class ServiceError(InputError):
    """A request the service refused or could not be sent."""


def _reason(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:300] or response.reason_phrase
    if isinstance(detail, list):  # FastAPI validation errors: name the fields
        return "; ".join(
            f"{'.'.join(str(p) for p in item.get('loc', [])[1:])}: {item.get('msg')}"
            for item in detail
        )
    return str(detail)


LAST_CHUNK_WAIT_S = 1900.0
"""Seconds the answer to an upload's last chunk may take: it comes once the upload is checked
(a check may take 900 s of processor, and wait its turn behind the sender's own)."""


class ServiceClient:
    """Talks to ``url`` with ``token`` (``Authorization: Bearer``)."""

    def __init__(self, url: str, token: str | None, *, timeout: float = 60.0):
        if not token:
            raise ServiceError("--token: no token (set PANORAMIA_TOKEN or pass --token)")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.HTTPError as error:
            raise ServiceError(f"{self.url}: unreachable ({error})") from None
        if response.status_code >= 400:
            raise ServiceError(f"{method} {path}: {response.status_code} {_reason(response)}")
        return response

    def submit_audit(self, body: dict) -> dict:
        return self.request("POST", "/v1/audits", json=body).json()

    def audit(self, audit_id: str) -> dict:
        return self.request("GET", f"/v1/audits/{audit_id}").json()

    def cancel_audit(self, audit_id: str) -> dict:
        return self.request("DELETE", f"/v1/audits/{audit_id}").json()

    def repeats(self, group_id: str) -> dict:
        """A group of repeats: its runs and, once all have ended, the pooled verdict."""
        return self.request("GET", f"/v1/repeats/{group_id}").json()

    def delete_model(self, name: str, version: str | None = None) -> dict:
        """Delete her model entry (one version, or all) with its reports and audits."""
        params = {"version": version} if version is not None else {}
        return self.request("DELETE", f"/v1/models/{name}", params=params).json()

    def upload_report(self, model: dict, report_json: Path, page: Path | None = None) -> dict:
        """Upload ``report.json`` of a CLI run for ``model``, with its page: ``page`` is its
        charts (``page_parts.json``: the service renders the page) or, from a run made before
        those were kept, the finished ``report.html``."""
        body = {"model": model, "artifact_location": str(report_json.parent.resolve())}
        reading = report_json
        try:
            body["report"] = json.loads(report_json.read_text())
            reading = page or report_json
            if page is not None and page.suffix == ".json":
                body["page_parts"] = {"charts": json.loads(page.read_text())["charts"]}
            elif page is not None:
                body["html"] = page.read_text()
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ServiceError(f"{reading}: cannot read the report ({error})") from None
        return self.request("POST", "/v1/reports", json=body).json()

    def models(self) -> list[dict]:
        return self.request("GET", "/v1/models").json()

    def reports(self, model: str, **filters: object) -> list[dict]:
        params = {k: v for k, v in filters.items() if v is not None and v is not False}
        return self.request("GET", f"/v1/models/{model}/reports", params=params).json()

    def report(self, report_id: str) -> dict:
        return self.request("GET", f"/v1/reports/{report_id}").json()

    def report_html(self, report_id: str) -> str:
        return self.request("GET", f"/v1/reports/{report_id}/html").text

    def publish_shared(self, body: dict) -> dict:
        """Publish a model upload as a shared model version (``POST /v1/shared-models``)."""
        return self.request("POST", "/v1/shared-models", json=body).json()

    def shared_models(self) -> list[dict]:
        """The shared model versions she may audit and those she published."""
        return self.request("GET", "/v1/shared-models").json()

    def withdraw_shared(self, owner: str, name: str, version: str) -> dict:
        path = f"/v1/shared-models/{quote(owner, safe='')}/{name}/{version}"
        return self.request("DELETE", path).json()

    def participate(self, owner: str, name: str, version: str, **choices: bool) -> dict:
        """Her choices for a version she audited (``named``, ``withdrawn``)."""
        params = {k: str(v).lower() for k, v in choices.items()}
        path = f"/v1/shared-models/{quote(owner, safe='')}/{name}/{version}/participation"
        return self.request("PUT", path, params=params).json()

    def leakage(self, owner: str, name: str, version: str | None = None) -> dict:
        """One version's leakage report, or (no version) every version's side by side."""
        base = f"/v1/shared-models/{quote(owner, safe='')}/{name}"
        if version is None:
            return self.request("GET", base).json()
        return self.request("GET", f"{base}/{version}/leakage").json()

    def uploads(self) -> list[dict]:
        return self.request("GET", "/v1/uploads").json()

    def delete_upload(self, id_or_name: str) -> dict:
        return self.request("DELETE", f"/v1/uploads/{id_or_name}").json()

    def find_upload(self, id_or_name: str) -> dict | None:
        """Her upload of this id or name, or None."""
        try:
            response = self.http.get(f"/v1/uploads/{id_or_name}")
        except httpx.HTTPError as error:
            raise ServiceError(f"{self.url}: unreachable ({error})") from None
        if response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise ServiceError(
                f"GET /v1/uploads/{id_or_name}: {response.status_code} {_reason(response)}"
            )
        return response.json()

    def send_file(
        self,
        path: Path,
        *,
        name: str,
        kind: str,
        filename: str,
        chunk_bytes: int = 8 * 2**20,
        progress: Callable[[int, int], None] = lambda _sent, _size: None,
    ) -> dict:
        """Upload the file at ``path`` as ``name`` in chunks of ``chunk_bytes``; an upload of
        that name with the same size and SHA-256 that is still arriving is resumed from the
        bytes the service holds (``HEAD``), not sent again. ``progress(sent, size)`` after
        each chunk. Returns the upload as the service describes it once ready."""
        size = path.stat().st_size
        digest = file_sha256(path)
        found = self.find_upload(name)
        if (
            found is not None
            and found["state"] == "receiving"
            and (found["size"], found["sha256"]) == (size, digest)
        ):
            upload_id = found["id"]
            held = int(self.request("HEAD", f"/v1/uploads/{upload_id}").headers["Upload-Offset"])
        else:
            body = {"name": name, "kind": kind, "filename": filename, "size": size,
                    "sha256": digest}  # fmt: skip
            upload_id = self.request("POST", "/v1/uploads", json=body).json()["id"]
            held = 0
        progress(held, size)
        view: dict = {}
        with path.open("rb") as source:
            source.seek(held)
            first = True
            while held < size or (first and found is not None and found.get("state") != "ready"):
                first = False  # all bytes held but unchecked: an empty last chunk checks it
                chunk = source.read(chunk_bytes)
                headers = {"Upload-Offset": str(held),
                           "Content-Type": "application/offset+octet-stream"}  # fmt: skip
                last = held + len(chunk) >= size  # its answer waits for the check
                answer = self.request(
                    "PATCH", f"/v1/uploads/{upload_id}", content=chunk, headers=headers,
                    **({"timeout": httpx.Timeout(self.timeout, read=LAST_CHUNK_WAIT_S)}
                       if last else {}),
                )  # fmt: skip
                view = answer.json()
                held += len(chunk)
                progress(held, size)
        return view or self.request("GET", f"/v1/uploads/{upload_id}").json()
