"""The API's contract (the OpenAPI document) against what the routes answer, on a live
service on SQLite: every status a route can give is documented with its body, the rules the
document states are the rules the service enforces, and a report stored without its page has
one. ``benchmarks/api_contract.py`` runs schemathesis (``--checks all``) over the same; these
checks take a few seconds and fail when a new route forgets its answers.
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest

from panoramia.service.api.body_rules import PLAIN_BODIES
from tests.service_support import (
    LiveService,
    live_service,
    report_document_for_test,
    settings_for,
)

MAX_UPLOAD_BYTES = 2**16
"""The request body limit of the service tested: a report fits, its 413 is cheap to send."""
PATH_VALUES = {"model": "census", "relative": "data.csv"}
"""A path parameter's value that names nothing stored (ids get a fresh UUID)."""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    home = tmp_path_factory.mktemp("contract") / "home"
    url = f"sqlite:///{home.parent / 'panoramia.db'}"
    settings = settings_for(home, url, max_upload_bytes=MAX_UPLOAD_BYTES, rate_limit="1000/minute")
    with live_service(settings) as running:
        yield running


@pytest.fixture(scope="module")
def document(service: LiveService) -> dict[str, Any]:
    with service.client(None) as anyone:
        return anyone.get("/openapi.json").json()


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def filled(path: str) -> str:
    """``path`` with every parameter naming nothing stored."""
    return re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES.get(m[1], str(uuid.uuid4())), path)


def send(client: httpx.Client, method: str, path: str, **options: Any) -> httpx.Response:
    headers = {"Upload-Offset": "0"} | options.pop("headers", {})
    return client.request(method.upper(), filled(path), headers=headers, **options)


def is_worker_route(path: str) -> bool:
    return path.startswith("/v1/worker/")


def test_every_refusal_a_route_gives_is_documented_with_its_body(
    service: LiveService, document: dict[str, Any]
) -> None:
    """Asked without a token, with an unknown id, with a body past the limit, not JSON, or
    not what the schema says, each operation's answer is one it documents, with its body."""
    worker = service.store.create_contributor("worker-1", worker=True)
    tokens = {"contributor": service.token("alice"), "worker": worker}
    checked: dict[int, int] = {}

    def answered(response: httpx.Response, operation: dict[str, Any], method: str) -> None:
        status = str(response.status_code)
        assert status in operation["responses"], (method, response.url, status)
        documented = operation["responses"][status]
        if method != "head":
            schema = documented["content"]["application/json"]["schema"]["$ref"]
            assert schema.rsplit("/", 1)[1] in ("ErrorBody", "HTTPValidationError")
            detail = response.json()["detail"]
            assert isinstance(detail, str if schema.endswith("ErrorBody") else list), detail
        checked[response.status_code] = checked.get(response.status_code, 0) + 1

    for path, method, operation in operations(document):
        assert "503" in operation["responses"], (method, path)  # every route reads the store
        if "security" in operation:
            with service.client(None) as anonymous:
                refused = send(anonymous, method, path)
            assert refused.status_code == 401
            answered(refused, operation, method)
            assert refused.headers["WWW-Authenticate"] == "Bearer"
        token = tokens["worker" if is_worker_route(path) else "contributor"]
        with service.client(token) as client:
            if "{" in path:
                missing = send(client, method, path)
                assert missing.status_code == 404, (method, path, missing.text)
                answered(missing, operation, method)
            body = operation.get("requestBody", {}).get("content", {})
            if "application/json" in body:
                for content, status in ((b"x" * (MAX_UPLOAD_BYTES + 1), 413),
                                        (b"{\xc3(", 400), (b"{}", 422)):  # fmt: skip
                    sent = send(client, method, path, content=content,
                                headers={"Content-Type": "application/json"})  # fmt: skip
                    assert sent.status_code == status, (method, path, sent.text)
                    answered(sent, operation, method)
    assert set(checked) == {400, 401, 404, 413, 422}, checked


def test_every_status_a_route_raises_is_documented(service: LiveService) -> None:
    """Read from each route's own code: every ``HTTPException(<status>`` and ``JSONResponse(…,
    <status>)`` it raises or returns, and 429 where slowapi limits it, is in its answers."""
    app: Any = service.app
    document = app.openapi()
    limited = set(app.state.limiter._route_limits)  # slowapi's own registry of limited routes
    found = 0
    routes = api_routes(app)
    read = {(route.path_format, method.lower()) for route in routes for method in route.methods}
    assert read == {(path, method) for path, method, _ in operations(document)}
    for router_route in routes:
        source = inspect.getsource(inspect.unwrap(router_route.endpoint))
        raised = {int(s) for s in re.findall(r"HTTPException\(\s*(\d{3})", source)}
        raised |= {
            int(s)
            for s in re.findall(r"JSONResponse\([^()]*(?:\([^()]*\))?[^()]*,\s*(\d{3})\)", source)
        }
        endpoint = router_route.endpoint
        if f"{endpoint.__module__}.{endpoint.__name__}" in limited:
            raised.add(429)
        for method in router_route.methods:
            answers = document["paths"][router_route.path_format][method.lower()]["responses"]
            missing = {status for status in raised if str(status) not in answers}
            assert not missing, (method, router_route.path, missing)
            found += len(raised)
    assert found >= 15  # not vacuous: the routes' own 404s, 409s, 202 and rate limits were read


def api_routes(app: Any) -> list[Any]:
    """The documented routes of ``app`` (FastAPI keeps each included router's routes under
    it, as ``original_router``)."""
    from fastapi.routing import APIRoute

    found, pending = [], list(app.router.routes)
    while pending:
        route = pending.pop()
        inner = getattr(getattr(route, "original_router", None), "routes", None)
        if inner is not None:
            pending += inner
        elif isinstance(route, APIRoute) and route.include_in_schema:
            found.append(route)
    return found


def request_schemas(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(body's component, each string schema) under every JSON request body."""
    components = document["components"]["schemas"]
    for _path, _method, operation in operations(document):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is None:
            continue
        root = body["schema"]["$ref"].rsplit("/", 1)[1]
        seen: set[str] = set()
        pending: list[Any] = [components[root]]
        while pending:
            node = pending.pop()
            if isinstance(node, list):
                pending += node
            elif isinstance(node, dict):
                reference = node.get("$ref", "")
                name = reference.rsplit("/", 1)[-1]
                if reference and name not in seen:
                    seen.add(name)
                    pending.append(components[name])
                if node.get("type") == "string":
                    yield root, node
                pending += [v for k, v in node.items() if k not in ("not", "enum", "const")]


def test_the_document_states_what_every_body_refuses(document: dict[str, Any]) -> None:
    """Every text of a request body refuses a NUL character, and ``${`` where the body's text
    reaches an audit's config; every free-form section is a JSON value held to the same."""
    bodies: set[str] = set()
    for root, schema in request_schemas(document):
        bodies.add(root)
        if "enum" in schema or "const" in schema or schema.get("format", "").startswith("date"):
            continue
        pattern = schema["pattern"]
        assert not re.search(pattern, "seed=a\x00"), (root, pattern)
        if root in PLAIN_BODIES:
            assert not re.search(pattern, "seed=${oc.env:HOME}"), (root, pattern)
    assert bodies == {"AuditRequest", "ReportUpload", "SharedPublication", "UploadCreate"}
    values = document["components"]["schemas"]["JsonValue"]["anyOf"]
    assert {"type": "integer", "minimum": -(2**63 - 1), "maximum": 2**63 - 1} in values


def validator(document: dict[str, Any], component: str) -> Any:
    root = {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def report_body(**changes: Any) -> dict[str, Any]:
    return {"model": {"name": "census"}, "report": report_document_for_test(), **changes}


UPLOAD = {"name": "members", "filename": "members.csv", "size": 10, "sha256": "0" * 64}
DOCUMENT = report_document_for_test()
CASES = [
    # (component, route, body, valid): the document and the service agree on each
    ("AuditRequest", "/v1/audits", {"model": {"name": "m"}, "target": {}}, False),
    (
        "AuditRequest",
        "/v1/audits",
        {"model": {"name": "m"}, "target": {"config": "mlp_overfit", "path": "x"}},
        False,
    ),
    (
        "AuditRequest",
        "/v1/audits",
        {"model": {"name": "m"}, "target": {"config": "cnn_overfit"}},
        False,
    ),  # an image model
    (
        "AuditRequest",
        "/v1/audits",
        {
            "model": {"name": "m"},
            "target": {"config": "mlp_overfit"},
            "control": {"config": "mlp_generalised"},
        },
        False,
    ),  # a control needs repeats
    (
        "AuditRequest",
        "/v1/audits",
        {"model": {"name": "m"}, "target": {"path": "forest"}, "data": {"source": "csv"}},
        False,
    ),
    (
        "AuditRequest",
        "/v1/audits",
        {"model": {"name": "m"}, "target": {"config": "mlp_overfit"}, "overrides": ["seed=${x}"]},
        False,
    ),
    (
        "AuditRequest",
        "/v1/audits",
        {
            "model": {"name": "m", "claim": {"kind": "eps_delta", "epsilon": "1", "delta": 0.1}},
            "target": {"config": "mlp_overfit"},
        },
        False,
    ),
    (
        "AuditRequest",
        "/v1/audits",
        {"model": {"name": "m"}, "target": {"path": "no-such-model"}},
        True,
    ),  # 404: none of hers
    ("UploadCreate", "/v1/uploads", UPLOAD | {"filename": "members.exe"}, False),
    ("UploadCreate", "/v1/uploads", UPLOAD | {"kind": "model", "filename": "m.csv"}, False),
    ("UploadCreate", "/v1/uploads", UPLOAD | {"filename": "a\x01b.csv"}, False),
    ("UploadCreate", "/v1/uploads", UPLOAD | {"size": "10"}, False),
    ("UploadCreate", "/v1/uploads", UPLOAD | {"filename": "MEMBERS.CSV.GZ"}, True),
    (
        "UploadCreate",
        "/v1/uploads",
        UPLOAD | {"name": "model", "kind": "model", "filename": "forest.tgz"},
        True,
    ),
    ("ReportUpload", "/v1/reports", report_body(html="<p>\x00</p>"), False),
    (
        "ReportUpload",
        "/v1/reports",
        report_body(model={"name": "census", "declared": {"a\x00": 1}}),
        False,
    ),
    (
        "ReportUpload",
        "/v1/reports",
        report_body(report=DOCUMENT | {"extra": {"deep": [2**63]}}),
        False,
    ),
    ("ReportUpload", "/v1/reports", report_body(report=DOCUMENT | {"seed": "1"}), False),
    ("ReportUpload", "/v1/reports", report_body(report=DOCUMENT | {"created": 1.5}), False),
    (
        "ReportUpload",
        "/v1/reports",
        report_body(report=DOCUMENT | {"created": "2026-12-02"}),
        False,
    ),
    (
        "ReportUpload",
        "/v1/reports",
        report_body(model={"name": "census", "claim": {"kind": None}}),
        True,
    ),
    (
        "ReportUpload",
        "/v1/reports",
        report_body(report=DOCUMENT | {"extra": {"deep": [2**63 - 1, "${ok here}"]}}),
        True,
    ),
]


@pytest.mark.parametrize(("component", "route", "body", "valid"), CASES)
def test_the_document_and_the_service_agree_on_a_body(
    service: LiveService, document: dict[str, Any], component: str, route: str, body: Any,
    valid: bool,
) -> None:  # fmt: skip
    assert validator(document, component).is_valid(body) == valid
    with service.client(service.token("bob")) as bob:
        answer = bob.post(route, json=body)
    assert (answer.status_code != 422) == valid, answer.text
    assert answer.status_code < 500


def test_report_times_are_rfc_3339_text(service: LiveService) -> None:
    """``since``/``until`` read as the document says (a date or a date-time): a number is no
    longer seconds since 1970 (``20260101`` was 1970-08-23)."""
    with service.client(service.token("carol")) as carol:
        assert carol.post("/v1/reports", json=report_body()).status_code == 201
        for value, status in (("20260101", 422), ("0.5", 422), ("2026-13-01", 422),
                              ("2000-01-01", 200), ("2000-01-01T00:00:00Z", 200)):  # fmt: skip
            listed = carol.get("/v1/models/census/reports", params={"since": value})
            assert listed.status_code == status, (value, listed.text)
        assert len(listed.json()) == 1


def test_a_report_stored_without_its_page_has_one(service: LiveService) -> None:
    """Regression (schemathesis ST302): ``POST /v1/reports`` takes its page as optional, and a
    report stored without one answered 404 on ``/html``, as if it did not exist. It now
    answers a page written from its figures; the page uploaded with a report is served as
    it was; an unknown or another contributor's report is still 404."""
    with service.client(service.token("dora")) as dora:
        bare = dora.post("/v1/reports", json=report_body())
        assert bare.status_code == 201
        location = bare.headers["Location"]
        page = dora.get(f"{location}/html")
        assert page.status_code == 200, page.text
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        summary = bare.json()
        assert summary["headline"] in page.text
        assert f"{summary['eps_tilde']:.3f}" in page.text
        assert "stored without its page" in page.text
        full = dora.post("/v1/reports", json=report_body(html="<p>the run's own page</p>"))
        own = dora.get(f"{full.headers['Location']}/html")
        assert own.status_code == 200
        assert own.text == "<p>the run's own page</p>"
        assert dora.get(f"/v1/reports/{uuid.uuid4()}/html").status_code == 404
    with service.client(service.token("eve")) as eve:
        assert eve.get(f"{location}/html").status_code == 404


def test_a_method_a_path_does_not_take_lists_every_one_it_does(service: LiveService) -> None:
    with service.client(service.token("alice")) as alice:
        refused = alice.put(f"/v1/uploads/{uuid.uuid4()}")
        assert refused.status_code == 405
        assert refused.headers["Allow"] == "DELETE, GET, HEAD, PATCH"
        assert alice.put("/v1/uploads").headers["Allow"] == "GET, POST"


def test_the_check_s_own_rules_are_named_in_the_document(document: dict[str, Any]) -> None:
    """What benchmarks/api_contract_hooks.py tells schemathesis is what the document says the
    schema language cannot: the two formats it names, and the two relations it describes."""
    text = str(document)
    for named in ("panoramia-override", "panoramia-filename",
                  "max(0, c_plus_eps_lb − c_lb)", "privacy loss spans"):  # fmt: skip
        assert named in text, named
    hooks = (Path(__file__).parents[2] / "benchmarks" / "api_contract_hooks.py").read_text()
    for named in ("panoramia-override", "panoramia-filename", "eps_tilde", "MAX_LOSS_SPAN"):
        assert named in hooks, named


def test_the_override_keys_the_document_states_are_the_door_s() -> None:
    """``OVERRIDE_KEY`` (the document's pattern) spells the keys ``check_overrides`` lets a
    contributor set, and no other top-level key."""
    from panoramia.service.schemas import OVERRIDE_KEY
    from panoramia.service.submission.command import GROUPS, KEY_PREFIXES, KEYS

    allowed = [*KEYS, *GROUPS, *(prefix + "lr" for prefix in KEY_PREFIXES)]
    assert all(re.fullmatch(OVERRIDE_KEY, key) for key in allowed), allowed
    for refused in ("data.path", "hydra.run.dir", "model", "data.split", "target"):
        assert not re.fullmatch(OVERRIDE_KEY, refused), refused
