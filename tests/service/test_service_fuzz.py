"""Schemathesis over the service's own OpenAPI spec, on a live server: no request gets a 5xx.

Valid (positive) and malformed (negative) requests for every operation, with a contributor's
token and with an admin's, against a store that holds reports; audits go to a Redis queue with
no worker listening. ``PANORAMIA_FUZZ_EXAMPLES`` sets examples per operation and mode.
"""

from __future__ import annotations

import os
from pathlib import Path

import redis
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.service_support import (
    REDIS_URL,
    live_service,
    redis_database,
    report_document_for_test,
    settings_for,
)

EXAMPLES = int(os.environ.get("PANORAMIA_FUZZ_EXAMPLES", "25"))


def fuzz(operation, mode, url, token, tried, server_errors) -> None:  # type: ignore[no-untyped-def]
    """Send ``EXAMPLES`` generated requests of ``operation``; count them, note any 5xx."""
    key = (operation.label, mode.value)

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode))
    def exercise(case) -> None:  # type: ignore[no-untyped-def]
        response = case.call(base_url=url, headers={"Authorization": f"Bearer {token}"})
        tried[key] = tried.get(key, 0) + 1
        if response.status_code >= 500:
            server_errors.append(
                f"{key} {response.status_code} path={case.path_parameters!r:.200} "
                f"query={case.query!r:.200} body={case.body!r:.200}"
            )

    try:
        exercise()
    except Unsatisfiable:  # nothing to make malformed (an operation without parameters)
        assert mode == GenerationMode.NEGATIVE, key


def test_no_request_generated_from_the_openapi_spec_gets_a_server_error(
    tmp_path: Path, database_url: str
) -> None:
    broker = f"{REDIS_URL}/{redis_database(1)}"
    redis.Redis.from_url(broker).flushdb()
    service_settings = settings_for(
        tmp_path, database_url, queue="celery", redis_url=broker,
        rate_limit="100000/minute", max_upload_bytes=2**20,
    )  # fmt: skip
    tried: dict[tuple[str, str], int] = {}
    server_errors: list[str] = []
    with live_service(service_settings) as service:
        tokens = [service.token("alice"), service.token("root", admin=True)]
        with service.client(tokens[0]) as alice:
            body = {"model": {"name": "census"}, "report": report_document_for_test()}
            assert alice.post("/v1/reports", json=body).status_code == 201
        schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
        for result in schema.get_all_operations():
            operation = result.ok()
            for mode in GenerationMode:
                for token in tokens:
                    fuzz(operation, mode, service.url, token, tried, server_errors)
    redis.Redis.from_url(broker).flushdb()
    total = sum(tried.values())
    negative = sum(n for (_, mode), n in tried.items() if mode == "negative")
    print(f"fuzzer: {total} requests ({negative} malformed) over {len(tried)} operation/modes")
    assert not server_errors, server_errors[:5]
    assert len({label for label, _ in tried}) == 18  # 10, and uploads (6) and workers (2)
    assert negative >= 5 * EXAMPLES
