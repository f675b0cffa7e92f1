"""What a console page costs the server when a contributor's reports are large.

Uploads ``--reports`` reports of ``--mb`` MB each (the document padded) to one model, then
times the model page, the models list and one report page, and reports the server process's
peak resident memory during each request (Linux: /proc/self/clear_refs resets the peak).
The pages read each report's small stored digest, never its document.

    .venv/bin/python benchmarks/console_page_cost.py --reports 8 --mb 5
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.service_support import live_service, report_document_for_test, settings_for

FORM = {"content-type": "application/x-www-form-urlencoded"}


def peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def current_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=8)
    parser.add_argument("--mb", type=float, default=5.0)
    options = parser.parse_args()
    home = Path(tempfile.mkdtemp())
    settings = settings_for(home, f"sqlite:///{home}/db.sqlite", rate_limit="100000/minute")
    document = report_document_for_test() | {"padding": "x" * int(options.mb * 2**20)}
    with live_service(settings) as service:
        token = service.token("alice")
        with service.client(token) as api:
            ids = []
            for version in range(options.reports):
                body = {"model": {"name": "big", "version": str(version)}, "report": document}
                answer = api.post("/v1/reports", json=body)
                assert answer.status_code == 201, answer.text
                ids.append(answer.json()["id"])
        client = httpx.Client(base_url=service.url, timeout=120)
        page = client.get("/console/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        client.post("/console/login", content=f"csrf={csrf}&token={token}", headers=FORM)
        print(f"{options.reports} reports of {options.mb:g} MB on one model")
        for path in ("/console/models", "/console/models/big", f"/console/reports/{ids[0]}"):
            for attempt in ("first", "again"):
                before = current_mb()
                reset_peak()
                started = time.perf_counter()
                answer = client.get(path)
                seconds = time.perf_counter() - started
                print(
                    f"{path[:40]:40s} {attempt:5s} {answer.status_code} {seconds:6.3f} s  "
                    f"peak +{peak_mb() - before:6.1f} MB"
                )


if __name__ == "__main__":
    main()
