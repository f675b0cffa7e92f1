"""The Docker deployment, checked without a Docker engine (the images are built and run for
real by ``make docker-test``: tests/docker/).

compose.yaml and its air-gapped override are parsed and cross-checked against the project
(services, volumes, commands, environment variables, healthchecks that are run for real
where they can be), and every Dockerfile passes hadolint (Dockerfile.cuda is only linted
where no GPU base can be built).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from panoramia.cli import app as cli
from panoramia.service.settings import ServiceSettings
from tests.service_support import live_service, settings_for

DOCKER = Path(__file__).parents[2] / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
AIRGAP = yaml.safe_load((DOCKER / "airgap" / "compose.airgap.yaml").read_text())
DOCKERFILES = [DOCKER / "Dockerfile", DOCKER / "Dockerfile.cuda",
               DOCKER / "airgap" / "Dockerfile.services"]  # fmt: skip


def test_compose_has_the_whole_deployment() -> None:
    assert set(SERVICES) == {"service", "worker", "worker-gpu", "postgres", "redis"}
    for name, service in SERVICES.items():
        assert "healthcheck" in service, name
        for dependency in service.get("depends_on", {}):
            assert dependency in SERVICES, (name, dependency)
        for volume in service.get("volumes", []):
            assert volume.split(":")[0] in COMPOSE["volumes"], (name, volume)
        if "build" in service:
            assert (DOCKER / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
    assert SERVICES["service"]["ports"] == ["${PANORAMIA_PORT:-8000}:8000"]
    assert "name" not in COMPOSE  # docker-compose 1.29 (Debian's) refuses a top-level name
    for name, service in AIRGAP["services"].items():  # the override only swaps images
        assert name in SERVICES, name
        if "build" in service:
            assert (DOCKER / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
    gpu = SERVICES["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"]
    assert SERVICES["worker-gpu"]["build"]["dockerfile"] == "docker/Dockerfile.cuda"


@pytest.mark.parametrize("name", ["service", "worker", "worker-gpu"])
def test_compose_commands_and_environment_are_the_projects(name: str) -> None:
    service = SERVICES[name]
    help_run = CliRunner().invoke(cli, [*service["command"], "--help"])
    assert help_run.exit_code == 0, help_run.output
    documented = set(re.findall(r"PANORAMIA_[A-Z_]+", ServiceSettings.__doc__ or ""))
    for variable in service["environment"]:
        assert variable in documented, variable
    assert service["environment"]["PANORAMIA_QUEUE"] == "celery"
    assert service["environment"]["PANORAMIA_DATABASE_URL"].startswith("postgresql://")
    if name == "service":
        assert service["volumes"] == ["panoramia:/var/lib/panoramia"]
    else:  # workers share no disk with the service: they fetch inputs over HTTP
        assert "volumes" not in service
        assert service["environment"]["PANORAMIA_SERVICE_URL"] == "http://service:8000"


def test_the_service_healthcheck_passes_against_a_live_service(tmp_path: Path) -> None:
    test = SERVICES["service"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    with live_service(settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}")) as live:
        code = test[3].replace("http://127.0.0.1:8000", live.url)
        assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode != 0


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfiles_run_as_a_non_root_user_and_copy_what_exists(dockerfile: Path) -> None:
    lines = dockerfile.read_text().splitlines()
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users, "no USER"
    assert users[-1].split(":")[0] not in ("0", "root")
    root = DOCKER.parent
    arguments = dict(re.findall(r"^ARG (\w+)=(\S+)$", dockerfile.read_text(), re.MULTILINE))
    for line in lines:
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                source = re.sub(r"\$\{(\w+)\}", lambda m: arguments[m.group(1)], source)
                assert (root / source).exists(), source
    if dockerfile.parent == DOCKER:  # the project's images: one torch, the same arguments
        assert "torch==2.13.0" in dockerfile.read_text()
        assert {"BASE_IMAGE", "TORCH_INDEX_URL", "PIP_INDEX_URL", "WHEELS"} <= set(arguments)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfiles_pass_hadolint(dockerfile: Path) -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    found = subprocess.run([str(hadolint), "--no-color", str(dockerfile)],
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert found.returncode == 0, found.stdout + found.stderr
