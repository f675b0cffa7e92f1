"""Helpers of the Docker tests (``make docker-test``): the images are built before pytest
runs (``docker/airgap/build.sh``); every test here talks to real containers."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
IMAGE = "panoramia-audit:cpu"
COMPOSE_FILES = ["-f", "docker/compose.yaml", "-f", "docker/airgap/compose.airgap.yaml"]


def docker(*arguments: str, timeout: float = 600, check: bool = True) -> str:
    """``docker …``'s standard output; AssertionError with its last lines when it fails."""
    done = subprocess.run(
        ["docker", *arguments], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(arguments[:3])} …: {done.stderr[-2000:]}")
    return done.stdout


def compose_command() -> list[str]:
    """``docker compose`` (v2) where the plugin exists, else Debian's ``docker-compose``."""
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True)
    if plugin.returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    if found is None:
        pytest.fail("neither `docker compose` nor docker-compose is installed")
    return [found]


@pytest.fixture(scope="session", autouse=True)
def _images_built() -> None:
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        pytest.fail(f"{IMAGE} is not built: run `make docker-test` (docker/airgap/build.sh)")


@pytest.fixture
def volume() -> Iterator[str]:
    """A fresh named volume, removed afterwards."""
    name = f"panoramia-test-{uuid.uuid4().hex[:8]}"
    docker("volume", "create", name)
    yield name
    docker("volume", "rm", "-f", name, check=False)
