"""Schemathesis over the service's own OpenAPI spec, on live servers: no request gets a 5xx.

Valid (positive) and malformed (negative) requests for every operation, with a contributor's
token and with an admin's, against stores that hold reports; audits go to a Redis queue with
no worker listening. Each generated request goes to two services, one on SQLite and one on
PostgreSQL, so both stores get the same requests in the same order (and the requests are
generated once: generating them is most of the fuzzer's time). ``PANORAMIA_FUZZ_EXAMPLES``
sets examples per operation, mode and token.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import schemathesis
import sqlalchemy
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.conftest import no_postgres
from tests.service_support import (
    LiveService,
    postgres_schema,
    queued_only_service,
    redis_database,
    report_document_for_test,
)

schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")
"""A chunk's body (tus's media type) is bytes, sent as schemathesis sends octet-stream."""
EXAMPLES = int(os.environ.get("PANORAMIA_FUZZ_EXAMPLES", "25"))
QUOTA_FULL = 507
"""Past her storage quota: her state, a refusal every route that gives it documents, not a
server fault (``benchmarks/api_contract.toml`` tells schemathesis the same)."""
BACKENDS = {"sqlite": 0, "postgresql": 1}
"""Each store's Redis slot (:func:`tests.service_support.redis_database`)."""


def fuzz(operation, mode, targets, tried, server_errors) -> None:  # type: ignore[no-untyped-def]
    """Send ``EXAMPLES`` generated requests of ``operation`` to each of ``targets`` (backend,
    URL, token); count them per backend, note any 5xx."""

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode))
    def exercise(case) -> None:  # type: ignore[no-untyped-def]
        for backend, url, token in targets:
            response = case.call(base_url=url, headers={"Authorization": f"Bearer {token}"})
            key = (backend, operation.label, mode.value)
            tried[key] = tried.get(key, 0) + 1
            if response.status_code >= 500 and response.status_code != QUOTA_FULL:
                server_errors.append(
                    f"{key} {response.status_code} path={case.path_parameters!r:.200} "
                    f"query={case.query!r:.200} body={case.body!r:.200}"
                )

    try:
        exercise()
    except Unsatisfiable:  # nothing to make malformed (an operation without parameters)
        assert mode == GenerationMode.NEGATIVE, operation.label


@contextmanager
def fuzzed_service(home: Path, backend: str, database_url: str) -> Iterator[LiveService]:
    """A live service on a fresh store at ``database_url``, its own Redis queue with no
    worker, and one report of alice's."""
    with queued_only_service(
        home, database_url, redis_database(BACKENDS[backend]),
        rate_limit="100000/minute", max_upload_bytes=2**20,
    ) as service:  # fmt: skip
        with service.client(service.token("alice")) as alice:
            body = {"model": {"name": "census"}, "report": report_document_for_test()}
            assert alice.post("/v1/reports", json=body).status_code == 201
        yield service


def database_urls(tmp_path: Path, stack: ExitStack) -> dict[str, str]:
    """A fresh SQLite file and a fresh PostgreSQL schema (held open by ``stack``); outside CI,
    SQLite alone where no PostgreSQL runs (with a warning)."""
    urls = {"sqlite": f"sqlite:///{tmp_path / 'sqlite' / 'panoramia.db'}"}
    try:
        urls["postgresql"] = stack.enter_context(postgres_schema())
    except sqlalchemy.exc.OperationalError as error:
        warnings.warn(f"{no_postgres(error)}: SQLite fuzzed alone", stacklevel=2)
    return urls


def test_no_request_generated_from_the_openapi_spec_gets_a_server_error(tmp_path: Path) -> None:
    tried: dict[tuple[str, str, str], int] = {}
    server_errors: list[str] = []
    with ExitStack() as stack:
        services = {
            backend: stack.enter_context(fuzzed_service(tmp_path / backend, backend, url))
            for backend, url in database_urls(tmp_path, stack).items()
        }
        specs = []
        for service in services.values():
            with service.client(None) as anyone:
                specs.append(anyone.get("/openapi.json").json())
        assert all(spec == specs[0] for spec in specs)  # one app: the same operations
        tokens = {b: (s.token("alice"), s.token("root", admin=True)) for b, s in services.items()}
        schema = schemathesis.openapi.from_dict(specs[0])  # each request names its server
        for result in schema.get_all_operations():
            operation = result.ok()
            for mode in GenerationMode:
                for who in (0, 1):  # alice, then the admin
                    targets = [(b, s.url, tokens[b][who]) for b, s in services.items()]
                    fuzz(operation, mode, targets, tried, server_errors)
    for backend in services:
        counts = {key[1:]: n for key, n in tried.items() if key[0] == backend}
        total = sum(counts.values())
        negative = sum(n for (_, mode), n in counts.items() if mode == "negative")
        print(f"fuzzer, {backend}: {total} requests ({negative} malformed) over "
              f"{len(counts)} operation/modes")  # fmt: skip
        # 13 (POST /v1/quotes among them), uploads (6), workers (2) and shared models (6)
        assert len({label for label, _ in counts}) == 27
        assert negative >= 5 * EXAMPLES
    assert not server_errors, server_errors[:5]
