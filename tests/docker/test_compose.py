"""The whole deployment (docker/compose.yaml with the air-gapped override: service, Celery
worker, PostgreSQL, Redis): health checks green, a contributor's audit over HTTP, another
contributor refused, ``down``/``up`` with nothing lost, and a worker stopped (SIGTERM) while
it runs an audit finishing it first."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.conftest import TINY_AUDIT
from tests.docker.conftest import COMPOSE_FILES, ROOT, compose_command, docker
from tests.service_support import free_port, wait_for

pytestmark = pytest.mark.docker
BODY = {"model": {"name": "census", "version": "1"}, "target": {"config": "mlp_generalised"},
        "overrides": TINY_AUDIT}  # fmt: skip
SERVICES = ("postgres", "redis", "service", "worker")


@dataclass
class Stack:
    project: str
    port: int

    def compose(self, *arguments: str, timeout: float = 600) -> str:
        env = os.environ | {"PANORAMIA_PORT": str(self.port)}
        done = subprocess.run(
            [*compose_command(), "-p", self.project, *COMPOSE_FILES, *arguments],
            capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).strip()

    def healthy(self) -> bool:
        for service in SERVICES:
            container = self.container(service)
            state = docker("inspect", "-f", "{{.State.Health.Status}}", container, check=False)
            if state.strip() != "healthy":
                return False
        return True

    def up(self) -> float:
        started = time.perf_counter()
        self.compose("up", "-d")
        wait_for(self.healthy, timeout=300, every=2)
        return time.perf_counter() - started

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    def token(self, contributor: str) -> str:
        made = self.compose("exec", "-T", "service", "panoramia", "tokens", "create",
                            "--contributor", contributor)  # fmt: skip
        return made.strip().splitlines()[-1].strip()


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    running = Stack(f"panoramiatest{uuid.uuid4().hex[:6]}", free_port())
    try:
        print(f"compose up, all healthy: {running.up():.1f} s")
        yield running
    finally:
        running.compose("down", "-v", "-t", "5")


def _finished(client: httpx.Client, audit_id: str) -> dict:
    return wait_for(
        lambda: (
            (a := client.get(f"/v1/audits/{audit_id}").json())["status"]
            in ("succeeded", "failed", "cancelled")
            and a
        ),
        timeout=300,
        every=1,
    )


def test_an_audit_over_http_succeeds_and_another_contributor_sees_nothing(stack: Stack) -> None:
    alice, bob = stack.client(stack.token("alice")), stack.client(stack.token("bob"))
    started = time.perf_counter()
    submitted = alice.post("/v1/audits", json=BODY)
    assert submitted.status_code == 202, submitted.text
    audit = _finished(alice, submitted.json()["id"])
    assert audit["status"] == "succeeded", audit["error"]
    assert audit["progress"]["done"] == audit["progress"]["total"] == 21
    assert audit["timings"]["confinement"].startswith("landlock ABI")
    print(f"audit over HTTP: {time.perf_counter() - started:.1f} s")
    report = alice.get(f"/v1/reports/{audit['report_id']}")
    assert report.status_code == 200
    assert report.json()["model"] == "census"
    page = alice.get(f"/v1/reports/{audit['report_id']}/html")
    assert page.status_code == 200
    assert "<html" in page.text.lower()
    assert bob.get(f"/v1/reports/{audit['report_id']}").status_code == 404
    assert bob.get(f"/v1/audits/{audit['id']}").status_code == 404
    assert bob.get("/v1/models").json() == []
    # the console's templates and stylesheet are in the image (package data)
    console = httpx.Client(base_url=str(alice.base_url), timeout=30)
    assert "Sign in" in console.get("/console/login").text
    assert console.get("/console/static/console.css").status_code == 200


def test_down_and_up_again_loses_nothing(stack: Stack) -> None:
    token = stack.token("carol")
    with stack.client(token) as carol:
        audit = _finished(carol, carol.post("/v1/audits", json=BODY).json()["id"])
        assert audit["status"] == "succeeded", audit["error"]
        reports = carol.get("/v1/models/census/reports").json()
    stack.compose("down", "-t", "30")  # the volumes stay
    print(f"compose up again, all healthy: {stack.up():.1f} s")
    with stack.client(token) as carol:  # her token, her audit, her report and its page
        assert carol.get("/v1/models/census/reports").json() == reports
        assert carol.get(f"/v1/audits/{audit['id']}").json()["status"] == "succeeded"
        assert carol.get(f"/v1/reports/{audit['report_id']}/html").status_code == 200


def test_a_worker_stopped_while_it_runs_an_audit_finishes_it_first(stack: Stack) -> None:
    dave = stack.client(stack.token("dave"))
    audit_id = dave.post("/v1/audits", json=BODY).json()["id"]
    wait_for(lambda: dave.get(f"/v1/audits/{audit_id}").json()["status"] == "running",
             timeout=120)  # fmt: skip
    stack.compose("stop", "-t", "120", "worker")  # SIGTERM: Celery's warm shutdown
    assert dave.get(f"/v1/audits/{audit_id}").json()["status"] == "succeeded"
    stack.compose("start", "worker")


CANARY = "Canaryland-compose-41d7"


def test_the_readme_walkthrough_over_the_network_with_a_worker_that_shares_no_disk(
    stack: Stack, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """From this machine, which has no access to the service's disk: upload a CSV (with a
    planted canary) and an xgboost model with the CLI, submit, wait, read the verdict, delete
    the uploads; the worker container mounts no volume of the service's, and afterwards the
    canary is in no file of the service's volume and the worker's disk holds nothing."""
    import json
    import sys
    from pathlib import Path

    import xgboost as xgb

    from panoramia.modalities.tabular.adult import SCHEMA, load_adult

    mounts = json.loads(docker("inspect", "-f", "{{json .Mounts}}", stack.container("worker")))
    assert f"{stack.project}_panoramia" not in [m.get("Name") for m in mounts]
    train, test = load_adult()
    members = train.iloc[:800].copy()
    members.loc[members.index[:60], "native-country"] = CANARY
    members.to_csv(tmp_path / "census.csv", index=False)
    test.iloc[:400].to_csv(tmp_path / "held-out.csv", index=False)
    features = members.drop(columns=["income"]).copy()
    for column in SCHEMA.categorical:
        features[column] = features[column].astype("category")
    model = xgb.XGBClassifier(n_estimators=20, max_depth=3, enable_categorical=True, n_jobs=1)
    model.fit(features, (members["income"] == ">50K").astype(int))
    forest = tmp_path / "forest"
    forest.mkdir()
    model.save_model(forest / "model.json")
    (forest / "target.json").write_text(
        json.dumps({"format": "xgboost-json", "file": "model.json", "classes": ["<=50K", ">50K"]})
    )
    cli = Path(sys.executable).parent / "panoramia"
    env = os.environ | {"PANORAMIA_URL": f"http://127.0.0.1:{stack.port}",
                        "PANORAMIA_TOKEN": stack.token("erin")}  # fmt: skip

    def run(*arguments: str) -> str:
        done = subprocess.run([str(cli), *arguments], capture_output=True, text=True, env=env,
                              timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr[-2000:]
        print(f"$ panoramia {' '.join(arguments)}\n{done.stdout.strip()}")
        return done.stdout

    assert "ready" in run("data", "upload", str(tmp_path / "census.csv"))
    assert "ready" in run("data", "upload", str(tmp_path / "held-out.csv"))
    assert "ready" in run("models", "upload", str(forest))
    overrides = [part for o in TINY_AUDIT if not o.startswith("target.") for part in ("-o", o)]
    finished = run("audits", "submit", "--model", "census-forest", "--target-path", "forest",
                   "--members", "census", "--nonmembers", "held-out", "--label", "income",
                   *overrides, "--wait")  # fmt: skip
    assert "succeeded" in finished
    report_id = finished.split("report=")[1].split()[0]
    assert "ε̃" in run("reports", "show", report_id)  # the verdict and its quoted figure
    for name in ("census", "held-out", "forest"):
        run("data" if name != "forest" else "models", "delete", name)
    found = subprocess.run(
        [*compose_command(), "-p", stack.project, *COMPOSE_FILES, "exec", "-T", "service",
         "grep", "-rl", CANARY, "/var/lib/panoramia"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert found.stdout.strip() == "", found.stdout
    left = stack.compose("exec", "-T", "worker", "find", "/var/lib/panoramia", "-type", "f")
    assert left.strip() == "", left
