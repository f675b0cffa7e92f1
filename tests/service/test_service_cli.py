"""``panoramia db|tokens|reports|audits`` against a live service (real HTTP, real database)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from panoramia.cli import app as cli
from tests.service_support import (
    free_port,
    live_service,
    report_document_for_test,
    settings_for,
)


def run(*args: str, env: dict | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, list(args), env=env)


def test_db_upgrade_and_tokens_create(tmp_path: Path) -> None:
    env = {"PANORAMIA_HOME": str(tmp_path), "PANORAMIA_DATABASE_URL": ""}
    upgraded = run("db", "upgrade", env=env)
    assert upgraded.exit_code == 0, upgraded.output
    assert "revision 0008" in upgraded.output
    assert (tmp_path / "panoramia.db").is_file()
    token = run("tokens", "create", "--contributor", "alice", env=env)
    assert token.exit_code == 0
    assert token.output.strip().startswith("pan_")
    again = run("tokens", "create", "--contributor", "alice", env=env)
    assert again.exit_code == 2
    assert "already has a token" in again.output


def test_client_commands_round_trip(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps(report_document_for_test()))
    (run_dir / "report.html").write_text("<html>page</html>")
    settings = settings_for(tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}")
    with live_service(settings) as service:
        env = {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": service.token("alice")}
        uploaded = run("reports", "upload", str(run_dir), "--model", "census", env=env)
        assert uploaded.exit_code == 0, uploaded.output
        report_id = uploaded.output.strip()
        listed = run("reports", "list", "--model", "census", "--json", env=env)
        assert [r["id"] for r in json.loads(listed.output)] == [report_id]
        page = tmp_path / "page.html"
        shown = run("reports", "show", report_id, "--html", str(page), env=env)
        assert shown.exit_code == 0
        assert "ε̃ =" in shown.output
        assert "census version 1 (tabular)" in shown.output
        assert page.read_text() == "<html>page</html>"  # a run from before page_parts.json
        table = run("reports", "list", "--model", "census", "--latest", env=env)
        assert "tabular" in table.output
        assert report_id in table.output  # whole, though the output is not a terminal
        drawn_dir = tmp_path / "drawn"
        drawn_dir.mkdir()
        (drawn_dir / "report.json").write_text(json.dumps(report_document_for_test()))
        (drawn_dir / "report.html").write_text("<html>not sent</html>")
        (drawn_dir / "page_parts.json").write_text('{"charts": [{"png": "Uk9D", "alt": "ROC"}]}')
        drawn = run("reports", "upload", str(drawn_dir), "--model", "census", "--version",
                    "2", env=env)  # fmt: skip
        assert drawn.exit_code == 0, drawn.output
        run("reports", "show", drawn.output.strip(), "--html", str(page), env=env)
        assert "<h1>Privacy audit of census version 2</h1>" in page.read_text()
        assert "Uk9D" in page.read_text()
        submitted = run("audits", "submit", "--model", "census", "--target-config",
                        "mlp_generalised", "-o", "seed=4", env=env)  # fmt: skip
        assert submitted.exit_code == 0, submitted.output
        audit_id = submitted.output.strip()
        status = json.loads(run("audits", "status", audit_id, "--json", env=env).output)
        assert status["request"]["overrides"] == ["seed=4"]
        cancelled = json.loads(run("audits", "cancel", audit_id, env=env).output)
        assert cancelled["status"] in ("cancelled", "running")
        bad = run("audits", "submit", "--model", "census", "--target-config", "nope", env=env)
        assert bad.exit_code == 2
        assert "target.config: no target config 'nope'" in bad.output
        image = run("audits", "submit", "--model", "mnist-cnn", "--target-config", "cnn_overfit",
                    "--source", "mnist", env=env)  # fmt: skip
        assert image.exit_code == 0, image.output
        image_status = json.loads(run("audits", "status", image.output.strip(), "--json",
                                       env=env).output)  # fmt: skip
        assert image_status["request"]["data"]["source"] == "mnist"
        run("audits", "cancel", image.output.strip(), env=env)
        mismatched = run("audits", "submit", "--model", "mnist-cnn", "--target-config",
                         "mlp_overfit", "--source", "mnist", env=env)  # fmt: skip
        assert mismatched.exit_code == 2
        assert "'mlp_overfit' is not a target of an audit of image data" in mismatched.output
        other = {**env, "PANORAMIA_TOKEN": service.token("bob")}
        denied = run("reports", "show", report_id, env=other)
        assert denied.exit_code == 2
        assert f"GET /v1/reports/{report_id}: 404 not found" in denied.output
        wrong = run("reports", "list", "--model", "census", env={**env, "PANORAMIA_TOKEN": "x"})
        assert "401 missing or unknown bearer token" in wrong.output
    closed = {"PANORAMIA_URL": f"http://127.0.0.1:{free_port()}", "PANORAMIA_TOKEN": "t"}
    unreachable = run("reports", "list", "--model", "census", env=closed)
    assert unreachable.exit_code == 2
    assert "unreachable" in unreachable.output
    assert len(unreachable.output.strip().splitlines()) == 1


def test_audits_submit_wait_follows_the_stages_to_the_end(tmp_path: Path) -> None:
    from tests.conftest import TINY_AUDIT

    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5)
    with live_service(settings) as service:
        env = {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": service.token("alice")}
        overrides = [part for line in TINY_AUDIT for part in ("-o", line)]
        junit = tmp_path / "gate.xml"  # --gate waits as --wait does, then gates the report
        done = run("audits", "submit", "--model", "census", "--target-config",
                   "mlp_generalised", *overrides, "--gate", "strict", "--junit", str(junit),
                   env=env)  # fmt: skip
        assert done.exit_code == 0, done.output
        assert "gate passed (strict): census version 1: claim_must_hold, fail_levels" in (
            done.output
        )
        assert 'name="census version 1: fail_levels"' in junit.read_text()
        status = [line for line in done.output.splitlines() if " report=" in line]
        assert len(status) == 1, done.output
        assert status[0].startswith("succeeded stages=21/21 report="), done.output
        assert "running stages=" in done.output  # the stages as they went by
        after = done.output.split(status[0], 1)[1]  # then the answer itself: the report
        assert "census version 1 (tabular)" in after
        assert "paper's one-sided game: c_lb = " in after
        audit_id = done.output.strip().splitlines()[0]
        readable = run("audits", "status", audit_id, env=env).output
        assert readable.startswith(f"audit {audit_id}: succeeded stages=21/21")
        assert "panoramia reports show " in readable


def test_audits_submit_audits_ones_own_csv_files(tmp_path: Path) -> None:
    """A contributor's own CSV members and held-out rows, with their columns named on the
    command line, audited through the service to the end."""
    from panoramia.modalities.tabular.adult import load_adult
    from tests.conftest import TINY_AUDIT

    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5)
    train, test = load_adult()
    folder = settings.data_dir / "alice"
    folder.mkdir(parents=True)
    train.iloc[:800].to_csv(folder / "members.csv", index=False)
    test.iloc[:400].to_csv(folder / "held_out.csv", index=False)
    with live_service(settings) as service:
        env = {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": service.token("alice")}
        overrides = [part for line in TINY_AUDIT for part in ("-o", line)]
        done = run("audits", "submit", "--model", "census", "--target-config",
                   "mlp_generalised", "--members", "members.csv", "--nonmembers",
                   "held_out.csv", "--label", "income", "--categorical", "sex",
                   "--categorical", "race", "--continuous", "age", "--continuous",
                   "hours-per-week", *overrides, "--wait", env=env)  # fmt: skip
        assert done.exit_code == 0, done.output
        report_id = done.output.split("report=")[1].split()[0]
        with service.client(service.tokens["alice"]) as alice:
            document = alice.get(f"/v1/reports/{report_id}").json()["document"]
        assert document["data"]["source"] == "csv"
        assert document["reference_audits"]["o1"] is not None  # the held-out rows were used
        assert document["config"]["data"]["categorical"] == ["sex", "race"]


def test_repeats_wait_for_the_pooled_verdict_then_the_model_entry_is_deleted(
    tmp_path: Path,
) -> None:
    """``audits submit --repeats 2 --wait`` runs two real tiny audits at seeds 0 and 1 and
    prints the pooled verdict with one line per run; ``reports delete --model`` then removes
    the entry, its reports and audits, in one sentence."""
    from tests.conftest import TINY_AUDIT

    settings = settings_for(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}", heartbeat_s=0.5)
    with live_service(settings) as service:
        env = {"PANORAMIA_URL": service.url, "PANORAMIA_TOKEN": service.token("alice")}
        overrides = [part for line in TINY_AUDIT for part in ("-o", line)]
        done = run("audits", "submit", "--model", "census", "--target-config", "mlp_generalised",
                   *overrides, "--repeats", "2", "--gate", "lenient", env=env)  # fmt: skip
        assert done.exit_code == 0, done.output
        lines = done.output.splitlines()
        # --gate waits, then gates the pooled verdict read anew from the runs' reports
        assert lines[-1].startswith("gate passed (lenient): census version 1 (2 repeats): ")
        assert "census version 1: 2 repeats" in lines
        assert any(line.endswith("(pooled)") or "(pooled)" in line for line in lines), lines
        assert any("Pooled over 2 runs" in line for line in lines), lines
        seeds = [line for line in lines if line.startswith("  seed ")]
        assert [line.split(":")[0] for line in seeds] == ["  seed 0", "  seed 1"]
        assert all("succeeded" in line and "reports show" in line for line in seeds), seeds
        too_many = run("audits", "submit", "--model", "census", "--target-config",
                       "mlp_generalised", "--repeats", "11", env=env)  # fmt: skip
        assert too_many.exit_code == 2
        gone = run("reports", "delete", "--model", "census", env=env)
        assert gone.exit_code == 0, gone.output
        assert gone.output.startswith(
            "Deleted model entry 'census' (version 1): 2 reports and 2 audits"
        )
        again = run("reports", "delete", "--model", "census", env=env)
        assert again.exit_code == 2
        assert "404" in again.output
