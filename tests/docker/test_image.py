"""The CPU image on its own: the CLI, a measurement, an audit whose report outlives its
container, a non-root user, the kernel's confinement inside the container, and a volume
written by an older store that the service migrates without losing anything."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import insert

from panoramia.store import make_engine, upgrade
from panoramia.store.tables import Report
from panoramia.store.tokens import hash_token
from tests.conftest import OFFICIAL_SCORES, TINY_AUDIT
from tests.docker.conftest import IMAGE, docker
from tests.service_support import free_port, report_document_for_test, wait_for

pytestmark = pytest.mark.docker


def test_help_and_a_measurement_of_a_read_only_scores_file() -> None:
    assert "measure" in docker("run", "--rm", IMAGE, "--help")
    measured = docker(
        "run", "--rm", "--network", "none",
        "-v", f"{OFFICIAL_SCORES.parent}:/scores:ro",
        IMAGE, "measure", f"/scores/{OFFICIAL_SCORES.name}",
        "--baseline-col", "baseline_pred", "--mia-col", "mia_mlp100_pred",
    )  # fmt: skip
    assert "c_lb" in measured
    assert "ε̃" in measured


def test_the_boosters_model_libraries_load_in_the_image() -> None:
    """LightGBM links the system's OpenMP runtime (libgomp.so.1), which slim bases lack: the
    image installs it, so the lightgbm-text and catboost-cbm targets open there."""
    versions = docker(
        "run", "--rm", "--network", "none", "--entrypoint", "python", IMAGE, "-c",
        "import catboost, lightgbm; print(lightgbm.__version__, catboost.__version__)",
    )  # fmt: skip
    assert versions.split() == ["4.7.0", "1.2.10"]


def test_it_runs_as_a_user_and_confines_audits_inside_the_container() -> None:
    who = docker("run", "--rm", "--entrypoint", "id", IMAGE, "-u")
    assert who.strip() == "1000"
    confinement = docker(
        "run", "--rm", "--entrypoint", "python", IMAGE, "-c",
        "from panoramia.sandbox import describe; print(describe())",
    )  # fmt: skip
    assert confinement.startswith("landlock ABI"), confinement
    assert confinement.strip().endswith("sockets: seccomp (socketpair only)"), confinement
    probe = (
        "import socket\n"
        "from panoramia.sandbox import Confinement, restrict\n"
        "restrict(Confinement().with_defaults())\n"
        "try:\n    socket.socket(socket.AF_UNIX); print('opened')\n"
        "except PermissionError:\n    print('refused')\n"
    )
    refused = docker("run", "--rm", "--entrypoint", "python", IMAGE, "-c", probe)
    assert refused.strip() == "refused", refused  # the filter loads inside Docker's profile


def test_an_audit_report_outlives_its_container_in_the_volume(volume: str) -> None:
    started = time.perf_counter()
    docker(
        "run", "--rm", "--network", "none", "-v", f"{volume}:/var/lib/panoramia",
        "--entrypoint", "panoramia-audit", IMAGE, *TINY_AUDIT, "threads=1",
    )  # fmt: skip
    kept = docker(
        "run", "--rm", "-v", f"{volume}:/var/lib/panoramia", "--entrypoint", "sh", IMAGE,
        "-c", "cat /var/lib/panoramia/outputs/*/*/report.json",
    )  # fmt: skip
    report = json.loads(kept)
    assert report["modality"] == "tabular"
    assert report["c_lb"] >= 0
    print(f"tabular audit in a container: {time.perf_counter() - started:.1f} s")


def _older_store(folder: Path, token: str) -> None:
    """What an older image left in its volume: a SQLite store at revision 0002 with a
    contributor and her report, and her data folder."""
    engine = make_engine(f"sqlite:///{folder / 'panoramia.db'}")
    upgrade(engine, "0002")
    now = datetime(2026, 11, 1, tzinfo=UTC)
    with engine.begin() as connection:
        alice = connection.exec_driver_sql(  # the columns of revision 0002, not today's
            "INSERT INTO contributors (name, token_hash, is_admin, created_at) "
            f"VALUES ('alice', '{hash_token(token)}', 0, '2026-11-01 00:00:00') RETURNING id"
        ).scalar_one()
        model = connection.exec_driver_sql(
            "INSERT INTO models (name, version, declared, created_at) "
            "VALUES ('census', '1', '{}', '2026-11-01 00:00:00') RETURNING id"
        ).scalar_one()
        document = report_document_for_test()
        connection.execute(insert(Report.__table__).values(
            id="old-report", model_id=model, contributor_id=alice, modality="tabular",
            c_lb=document["c_lb"], c_plus_eps_lb=document["c_plus_eps_lb"],
            eps_tilde=document["eps_tilde"], document=document, created_at=now))  # fmt: skip
    engine.dispose()
    (folder / "data" / "alice").mkdir(parents=True)
    (folder / "data" / "alice" / "members.csv").write_text("age,income\n39,<=50K\n")


def test_a_volume_of_an_older_store_is_migrated_and_nothing_is_lost(
    volume: str, tmp_path: Path
) -> None:
    token = "pan_older-volume-token"
    _older_store(tmp_path, token)
    docker(  # as the older image's user (1000) left it
        "run", "--rm", "--user", "0", "-v", f"{volume}:/var/lib/panoramia",
        "-v", f"{tmp_path}:/old:ro", "--entrypoint", "sh", IMAGE, "-c",
        "cp -a /old/. /var/lib/panoramia/ && chown -R 1000:1000 /var/lib/panoramia",
    )  # fmt: skip
    port = free_port()
    container = docker(
        "run", "-d", "--rm", "--network", "host", "-v", f"{volume}:/var/lib/panoramia",
        IMAGE, "serve", "--host", "127.0.0.1", "--port", str(port),
    ).strip()  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"

        def healthy() -> dict | None:
            try:
                return httpx.get(f"{base}/healthz", timeout=2).json()
            except httpx.HTTPError:
                return None

        health = wait_for(healthy, timeout=120, every=1)
        assert health["schema_revision"] == "0008"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as alice:
            assert [m["name"] for m in alice.get("/v1/models").json()] == ["census"]
            listed = alice.get("/v1/models/census/reports").json()
            assert [r["id"] for r in listed] == ["old-report"]
        kept = docker(
            "run", "--rm", "-v", f"{volume}:/var/lib/panoramia", "--entrypoint", "cat", IMAGE,
            "/var/lib/panoramia/data/alice/members.csv",
        )  # fmt: skip
        assert kept.startswith("age,income")
    finally:
        docker("stop", "-t", "5", container, check=False)
