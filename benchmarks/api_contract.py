"""The API's contract checked by an independent fuzzer: schemathesis ``st run --checks all``
against a live service on SQLite and on PostgreSQL, with a contributor's token.

For each backend: a fresh store (a SQLite file; a fresh schema of the local PostgreSQL), the
real app under uvicorn on a loopback port, audits sent to a Celery queue in Redis with no
worker listening (a generated audit stays queued: nothing trains on this machine), one report
of the contributor's stored, then ``st run <service>/openapi.json --checks all`` with her
token. Every check is on: no 5xx (but 507, her storage quota, a documented refusal:
``benchmarks/api_contract.toml``), every status and body as the OpenAPI document lists them,
schema-valid bodies accepted and invalid ones refused, a created resource readable, the
token's absence refused. Prints the requests generated, the 5xx answers by status and each
failure; exits 1 if any backend had one.

    .venv/bin/python benchmarks/api_contract.py [--backends sqlite,postgresql]
        [--max-examples N] [--seed 1] [--keep DIR]

Needs PostgreSQL (``PANORAMIA_TEST_POSTGRES_URL``, default 127.0.0.1:5432 db ``test``, trust
auth) and Redis (``PANORAMIA_TEST_REDIS_URL``, default 127.0.0.1:6379; databases 2 and 3).
schemathesis is pinned in ``constraints.txt`` (the ``[dev]`` extra); docs/SERVICE.md has the
figures measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from panoramia.service.resource_limits import AuditLimits
from tests.service_support import (
    LiveService,
    postgres_schema,
    queued_only_service,
    report_document_for_test,
)

BIN = Path(sys.executable).parent
CONFIG = Path(__file__).with_name("api_contract.toml")
"""schemathesis's configuration: its one setting, 507 (her storage quota) an expected answer."""
REDIS_DATABASES = {"sqlite": 2, "postgresql": 3}
"""Redis databases 1–3 are no test process's (tests/service_support.py: 4–15), so the
benchmark may run beside the tests."""
CONTRIBUTOR = "alice"
BUDGET = 1e20
"""``PANORAMIA_MAX_AUDIT_COST`` of the service fuzzed: past every audit a valid request can
ask (ten repeats of the heaviest demo target with a control). An audit's price is estimated
from its composed config, a rule the document names (``AuditRequest``) but no schema can
state; the default budget (5e14) refuses ten repeats of an image audit (7.9e14) with 422."""


@contextmanager
def contract_service(home: Path, backend: str) -> Iterator[LiveService]:
    """A live service on a fresh ``backend`` store, its audits queued with no worker, one
    report of :data:`CONTRIBUTOR`'s stored."""
    with ExitStack() as stack:
        if backend == "sqlite":
            url = f"sqlite:///{home / 'panoramia.db'}"
        else:
            url = stack.enter_context(postgres_schema())
        service = stack.enter_context(
            queued_only_service(
                home, url, REDIS_DATABASES[backend], rate_limit="1000000/minute",
                max_upload_bytes=2**20, limits=replace(AuditLimits(), max_audit_cost=BUDGET),
            )
        )  # fmt: skip
        with service.client(service.token(CONTRIBUTOR)) as client:
            body = {"model": {"name": "census"}, "report": report_document_for_test()}
            assert client.post("/v1/reports", json=body).status_code == 201
        yield service


def fuzz(service: LiveService, report_dir: Path, args: argparse.Namespace) -> dict:
    """Run ``st run --checks all`` against ``service``; its exit status, the requests it sent,
    its failures (check name, operation, status, message) and its seconds."""
    token = service.token(CONTRIBUTOR)
    command = [
        str(BIN / "st"), "--config-file", str(CONFIG), "run", f"{service.url}/openapi.json",
        "--checks", "all", "--header", f"Authorization: Bearer {token}",
        "--seed", str(args.seed), "--workers", "1",
        "--report", "ndjson", "--report-dir", str(report_dir),
        "--suppress-health-check", "all", "--no-color",
    ]  # fmt: skip
    if args.max_examples:
        command += ["--max-examples", str(args.max_examples)]
    hooks = Path(__file__).with_name("api_contract_hooks.py")
    env = dict(os.environ)
    if args.hooks:
        env |= {"SCHEMATHESIS_HOOKS": str(hooks), "PANORAMIA_CONTRACT_URL": service.url,
                "PANORAMIA_CONTRACT_TOKEN": token}  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(  # in the scratch folder: st keeps its crash cache in the cwd
        command, capture_output=True, text=True, check=False, env=env, cwd=report_dir
    )
    seconds = time.monotonic() - started
    (report_dir / "st.log").write_text(done.stdout + done.stderr)
    requests, failures, server_errors = read_events(next(report_dir.glob("*.ndjson")))
    return {
        "rc": done.returncode,
        "requests": requests,
        "server_errors": server_errors,
        "failures": failures,
        "seconds": seconds,
        "output": done.stdout[-4000:] + done.stderr[-2000:],
    }


def read_events(path: Path) -> tuple[int, list[dict], Counter[int]]:
    """The requests sent, the distinct failures (check, operation, status, message) and the
    5xx answers by status, from schemathesis's NDJSON events."""
    requests = 0
    failures: dict[tuple, dict] = {}
    server_errors: Counter[int] = Counter()
    for line in path.read_text().splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished.get("recorder") or {}
        interactions = recorder.get("interactions") or {}
        requests += len(interactions)
        for interaction in interactions.values():
            status = ((interaction or {}).get("response") or {}).get("status_code")
            if isinstance(status, int) and status >= 500:
                server_errors[status] += 1
        for case_id, checks in (recorder.get("checks") or {}).items():
            for check in checks:
                if str(check.get("status")).lower() != "failure":
                    continue
                info = (check.get("failure_info") or {}).get("failure") or {}
                response = (interactions.get(case_id) or {}).get("response") or {}
                found = {
                    "check": check.get("name"),
                    "code": info.get("code"),
                    "operation": info.get("operation"),
                    "title": info.get("title"),
                    "message": " ".join(str(info.get("message") or "").split())[:300],
                    "status": response.get("status_code"),
                }
                failures.setdefault((found["code"], found["operation"], found["message"]), found)
    return requests, list(failures.values()), server_errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--max-examples", type=int, help="per operation (st's default: 100)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep schemathesis's reports here")
    parser.add_argument(
        "--no-hooks", dest="hooks", action="store_false",
        help="without benchmarks/api_contract_hooks.py (the rules the schema cannot state)",
    )  # fmt: skip
    args = parser.parse_args()
    print(f"schemathesis {version('schemathesis')}, --checks all, --max-examples "
          f"{args.max_examples or 'default'}, --seed {args.seed}")  # fmt: skip
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        for backend in args.backends.split(","):
            home = Path(scratch) / backend
            reports = (args.keep or Path(scratch) / "reports") / backend
            reports.mkdir(parents=True, exist_ok=True)
            with contract_service(home, backend) as service:
                result = fuzz(service, reports, args)
            kinds = Counter(f["check"] for f in result["failures"])
            print(f"{backend}: {result['requests']} requests, {len(result['failures'])} "
                  f"failures {dict(kinds)}, 5xx answers {dict(result['server_errors'])}, "
                  f"st exit {result['rc']}, {result['seconds']:.0f} s")  # fmt: skip
            for failure in result["failures"]:
                print(f"  {failure['code']} {failure['operation']} (status {failure['status']}): "
                      f"{failure['title']}: {failure['message']}")  # fmt: skip
            if result["rc"] != 0 and not result["failures"]:
                print(result["output"])
            failed |= result["rc"] != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
