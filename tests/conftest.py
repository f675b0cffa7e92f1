"""Shared fixtures; tests never reach the network."""

from __future__ import annotations

import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Three workers on two cores (the third fills the time the others wait on servers, sockets
    # and child processes): one BLAS/torch thread each (children inherit it), else every
    # process starts a thread per core and they all fight over the same cores.
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import binom

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PANORAMIA_CHECK_READS", "1")  # a stage reading an undeclared setting fails

DATA = Path(__file__).parent / "fixtures"
OFFICIAL_SCORES = DATA / "panoramia_official_adult_scores.csv"
SMALL_NULL = "audit.null.draws=199"
"""The tiny audits' null: 199 draws instead of 999 (~0.2 s instead of ~0.9 s per report; the
fewest for a 0.05 false-alarm rate is 19). The default's 999 runs end to end in the tabular
audit's full-report test and the shipped configs; the null's own tests in test_null.py."""
TINY_AUDIT = [
    SMALL_NULL,
    "data.max_members=800",
    "data.pool_size=2000",
    "target.epochs=2",
    "target.hidden=[16,8]",
    "helper.epochs=2",
    "helper.hidden=[16,8]",
    "helper.n_rows=300",
    "generator.filter.extra_fraction=0.5",
    "distinguisher.grid=[{max_depth:3,n_estimators:40,learning_rate:0.1}]",
    "audit.fpr_negatives=200",
]
"""Overrides of a tabular audit that runs in ~12 s (real Lightning, sdv, xgboost); its
attacker's pool of generated non-members is small (~170 rows beside the audit's ~50)."""
TINY_IMAGE_AUDIT = [
    SMALL_NULL,
    "generator=dcgan",
    "target.epochs=2",
    "target.width=8",
    "helper.epochs=1",
    "helper.n_images=200",
    "generator.epochs=2",
    "generator.labeler_epochs=1",
    "generator.filter.extra_fraction=0.5",
    "distinguisher.epochs=2",
    "distinguisher.width=8",
    "audit.fpr_negatives=200",
]
"""Overrides of an image audit on sklearn's digits (``data.source: digits``) as in
``+experiment=digits_tiny``, in the form a service request may carry (~1 min)."""
TINY_TEXT_AUDIT = [
    SMALL_NULL,
    "data.max_members=700",
    "generator.epochs=1",
    "helper.epochs=1",
    "helper.n_chunks=200",
    "distinguisher.epochs=1",
    "distinguisher.head_epochs=1",
    "distinguisher.d_model=16",
    "distinguisher.layers=1",
    "distinguisher.heads=2",
    "distinguisher.hidden=16",
    "audit.ensemble=1",
    "audit.fpr_negatives=200",
]
"""Overrides of a text audit of a brought causal LM (``target.path``) in the form a service
request may carry (~30 s with a tiny model)."""


HEAVY_FIRST = (
    "tests/pipeline/", "tests/service/test_service_workers.py",
    "tests/service/test_service_security_workers.py", "tests/models/test_dp_training.py",
    "tests/service/test_service_fuzz.py", "tests/generators/test_image_generator.py",
    "tests/accounting/", "tests/targets/",
)  # fmt: skip
"""Test paths that run audits, services or training: collected first, so that the xdist
workers end on short tests instead of one idling while another finishes a long one."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return next((i for i, p in enumerate(HEAVY_FIRST) if path.startswith(p)), len(HEAVY_FIRST))

    items.sort(key=rank)  # stable: the order within each group is unchanged


def shared_store(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """One artifact store ``name`` for the whole session, shared by the xdist workers (the store
    publishes stages atomically, so concurrent writers are safe): a stage that one test built
    is reused by every later test with the same settings."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' base directories share this parent
    path = root / name
    path.mkdir(exist_ok=True)
    return path


def stage(artifacts: Path, report: dict, name: str) -> Path:
    """The directory of stage ``name`` that produced ``report`` (by its key in the report's
    timings): never another test's stage of a shared store."""
    return artifacts / name / report["timings"][name]["key"]


@pytest.fixture
def official_scores_path() -> Path:
    return OFFICIAL_SCORES


def bisection_theta_lb(r: int, v: int, alpha: float) -> float:
    """Independent oracle: sup{θ >= 0 : P[Bin(r, sigmoid θ) >= v] <= alpha} by bisection."""
    if v == 0:
        return 0.0

    def tail(theta: float) -> float:
        return float(binom.sf(v - 1, r, expit(theta)))

    if tail(0.0) > alpha:
        return 0.0
    low, high = 0.0, 60.0
    for _ in range(200):
        middle = (low + high) / 2
        if tail(middle) <= alpha:
            low = middle
        else:
            high = middle
    return low


def simulated_scores(
    rng: np.random.Generator, m: int, *, shift: float
) -> tuple[np.ndarray, np.ndarray]:
    """Membership ~ Bernoulli(1/2) and probability scores sigmoid(N(shift · s, 1))."""
    membership = rng.integers(0, 2, m)
    return membership, expit(rng.normal(size=m) + shift * membership)


def fresh_database(request: pytest.FixtureRequest, directory: Path):  # type: ignore[no-untyped-def]
    """Yield a fresh, empty database of kind ``request.param``: a SQLite file in ``directory``,
    or a new schema in the local PostgreSQL (skipped where none runs, except in CI)."""
    if request.param == "sqlite":
        yield f"sqlite:///{directory / 'panoramia.db'}"
        return
    import sqlalchemy

    from tests.service_support import postgres_schema

    try:
        with postgres_schema() as url:
            yield url
    except sqlalchemy.exc.OperationalError as error:
        pytest.skip(no_postgres(error))


def no_postgres(error: Exception) -> str:
    """Why a test goes without PostgreSQL, from the ``error`` of connecting to it; in CI, where
    PostgreSQL must run, ``error`` is raised."""
    if os.environ.get("CI"):
        raise error
    return f"no PostgreSQL at 127.0.0.1:5432 ({str(error).splitlines()[0]})"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A fresh, empty database for one test: a SQLite file, or a new PostgreSQL schema."""
    yield from fresh_database(request, tmp_path)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A fresh, empty database shared by one module's tests."""
    yield from fresh_database(request, tmp_path_factory.mktemp("database"))
