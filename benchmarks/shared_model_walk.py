"""The shared-model walk of issue 69, with real audits: an owner and three contributors.

    python benchmarks/shared_model_walk.py [--database-url URL | --postgres] [--repeats 3]
        [--json OUT]

The owner (olivia) trains an over-fitted xgboost on alice's and bob's Adult rows only (carol's
are disjoint and never seen), uploads it and publishes it as ``census`` version 1; each of the
three uploads her own members and held-out rows and audits it with ``repeats`` seeds through
``POST /v1/audits`` (``shared``); the service's worker code runs every audit (the confined
child, one at a time). Then the owner publishes version 2 (a regularised xgboost on the same
rows), all three audit it again, and carol deletes her data. Prints, per step, the per-model
report as the owner reads it (the versions side by side, one row per contributor) and as a
contributor reads it, and the wall time of each audit. A live service on loopback, a SQLite
file in a temporary folder (or ``--database-url``, e.g. a PostgreSQL schema), Redis for the
queue (``PANORAMIA_TEST_REDIS_URL``, database 3), nothing else.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.service.test_upload_deletion import _send
from tests.service_support import LiveService, queued_only_service

OWNER, CONTRIBUTORS = "olivia", ("alice", "bob", "carol")
ROWS = 1000
"""Members per contributor (Adult training rows, disjoint slices)."""
HELD_OUT = 400
"""Held-out rows per contributor (Adult test rows, disjoint slices)."""
SETTINGS = ["data.max_members=1000", "audit.null.draws=199"]
"""The audit's settings beyond its defaults: her rows, and the tests' null of 199 draws
(p ≥ 0.005; Holm over three contributors holds the smallest to 0.0167)."""


def _archive(rows, folder: Path, *, overfit: bool) -> bytes:  # type: ignore[no-untyped-def]
    """An xgboost trained on ``rows`` as people save one (over-fitted, or regularised),
    packed as a tar.gz with its target.json."""
    import io
    import tarfile

    import xgboost as xgb

    from panoramia.modalities.tabular.adult import SCHEMA

    features = rows.drop(columns=["income"]).copy()
    for column in SCHEMA.categorical:
        features[column] = features[column].astype("category")
    shape = (
        {"n_estimators": 400, "max_depth": 10, "min_child_weight": 0, "learning_rate": 0.3}
        if overfit
        else {"n_estimators": 60, "max_depth": 3, "subsample": 0.7, "reg_lambda": 10.0}
    )
    model = xgb.XGBClassifier(**shape, enable_categorical=True, n_jobs=1, random_state=0)
    model.fit(features, (rows["income"] == ">50K").astype(int))
    folder.mkdir(parents=True)
    model.save_model(folder / "model.json")
    manifest = {"format": "xgboost-json", "file": "model.json", "classes": ["<=50K", ">50K"]}
    (folder / "target.json").write_text(json.dumps(manifest))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return buffer.getvalue()


def _audit_all(service: LiveService, version: str, repeats: int, timings: list) -> None:
    """Each contributor submits ``repeats`` audits of ``version``; the worker runs them."""
    from panoramia.service.worker.run import run_audit

    for name in CONTRIBUTORS:
        with service.client(service.tokens[name]) as client:
            body = {"shared": {"owner": OWNER, "name": "census", "version": version},
                    "data": {"source": "csv", "members": "mine", "nonmembers": "held-out",
                             "label": "income"},
                    "overrides": SETTINGS, "repeats": repeats}  # fmt: skip
            answer = client.post("/v1/audits", json=body)
            assert answer.status_code == 202, answer.text
        principal = service.store.authenticate(service.tokens[name])
        group = answer.json()["repeat_group"]
        ids = (
            [a.id for a in service.store.repeat_audits(principal, group)]
            if group
            else [answer.json()["id"]]
        )
        for audit_id in ids:
            began = time.monotonic()
            status = run_audit(service.store, service.settings, audit_id)
            timings.append((name, version, str(status), round(time.monotonic() - began, 1)))
            print(f"  {name} v{version} {audit_id[:8]}: {status} in {timings[-1][3]} s",
                  file=sys.stderr, flush=True)  # fmt: skip


def _show(title: str, found: dict) -> None:
    from panoramia.cli.shared import leakage_lines

    print(f"\n### {title}\n")
    for line in leakage_lines(OWNER, "census", found["versions"]):
        print(line)
    for entry in found["versions"]:
        if entry.get("rows"):
            print(f"\n| v{entry['version']} contributor | runs | level | p | found | "
                  "ε̃ (95 % interval) | O(1) ε_lb |")  # fmt: skip
            print("|---|---|---|---|---|---|---|")
            for row in entry["rows"]:
                figure = row["eps_tilde"] or {}
                interval = figure.get("interval")
                spread = f" ({interval[0]:.2f}–{interval[1]:.2f})" if interval else ""
                o1 = "—" if row["o1_eps_lb"] is None else f"{row['o1_eps_lb']:.2f}"
                print(f"| {row['who']} | {row['runs']} | {row['level']} | {row['p_value']:.4f} "
                      f"| {'yes' if row['found'] else 'no'} | "
                      f"{figure.get('value', float('nan')):.2f}{spread} | {o1} |")  # fmt: skip


def walk(database_url: str | None, repeats: int) -> dict:
    """The whole walk (see the module docstring); what each viewer read at each step."""
    import os

    from panoramia.modalities.tabular.adult import load_adult

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    train, test = load_adult()
    parts = {name: train.iloc[ROWS * i : ROWS * (i + 1)] for i, name in enumerate(CONTRIBUTORS)}
    held = {
        name: test.iloc[HELD_OUT * i : HELD_OUT * (i + 1)] for i, name in enumerate(CONTRIBUTORS)
    }
    trained_on = train.iloc[: 2 * ROWS]  # alice's and bob's rows only
    seen: dict = {"timings": []}
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        url = database_url or f"sqlite:///{home / 'store.sqlite'}"
        with queued_only_service(home, url, 3, rate_limit="1000/minute") as service:
            with service.client(service.token(OWNER)) as owner:
                for version, overfit in (("1", True), ("2", False)):
                    name = f"census-v{version}"
                    _send(owner, name, "model", f"{name}.tar.gz",
                          _archive(trained_on, Path(scratch) / name, overfit=overfit))  # fmt: skip
            for name in CONTRIBUTORS:
                with service.client(service.token(name)) as client:
                    _send(
                        client, "mine", "data", "mine.csv", parts[name].to_csv(index=False).encode()
                    )
                    _send(client, "held-out", "data", "held-out.csv",
                          held[name].to_csv(index=False).encode())  # fmt: skip
            began = time.monotonic()
            for version in ("1", "2"):
                with service.client(service.tokens[OWNER]) as owner:
                    body = {"name": "census", "version": version, "upload": f"census-v{version}",
                            "audience": list(CONTRIBUTORS)}  # fmt: skip
                    assert owner.post("/v1/shared-models", json=body).status_code == 201
                _audit_all(service, version, repeats, seen["timings"])
            with service.client(service.tokens[OWNER]) as owner:
                seen["owner"] = owner.get("/v1/shared-models/olivia/census").json()
            with service.client(service.tokens["alice"]) as alice:
                seen["alice"] = alice.get("/v1/shared-models/olivia/census").json()
            with service.client(service.tokens["carol"]) as carol:
                assert carol.delete("/v1/uploads/mine").status_code == 200
            with service.client(service.tokens[OWNER]) as owner:
                seen["after_deletion"] = owner.get("/v1/shared-models/olivia/census").json()
            seen["wall_s"] = round(time.monotonic() - began, 1)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--postgres", action="store_true", help="A fresh schema of the local PostgreSQL."
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.postgres:
        from tests.service_support import postgres_schema

        with postgres_schema() as url:
            seen = walk(url, args.repeats)
    else:
        seen = walk(args.database_url, args.repeats)
    _show("The owner reads (both versions, one row per contributor)", seen["owner"])
    _show("alice reads", seen["alice"])
    _show("The owner, once carol deleted her data", seen["after_deletion"])
    times = [t[3] for t in seen["timings"]]
    print(f"\n{len(times)} audits, {sum(times):.0f} s of audits "
          f"({min(times):.0f}–{max(times):.0f} s each); walk {seen['wall_s']} s")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(seen, indent=2, default=str))


if __name__ == "__main__":
    main()
