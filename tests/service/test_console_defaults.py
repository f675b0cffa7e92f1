"""The audit form proposes from her uploads (issue 72): the members, held-out rows and model
by their names and kinds, the label from the model's classes or the column's name, and
nothing where nothing fits (she must choose); a refused form keeps her own choices."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from panoramia.service.console.form_defaults import (
    proposed_label,
    proposed_members,
    proposed_model,
    proposed_nonmembers,
)
from tests.service.test_console import FORM, browser, page_csrf, service, sign_in
from tests.service.test_uploads import _file, _tar, announce, send
from tests.service_support import LiveService

__all__ = ["service"]  # the fixture, imported for the tests below


def _row(name: str, **summary: object) -> SimpleNamespace:
    return SimpleNamespace(name=name, summary=summary)


def test_names_say_which_upload_is_which_and_nothing_is_proposed_where_none_fits() -> None:
    table = {"columns": [["x", "number"]]}
    data = [_row("held_out", **table), _row("census_rows", **table), _row("members", **table)]
    assert proposed_members(data) == "members"
    assert proposed_members(data[:2]) == "census_rows"  # not named held-out
    assert proposed_members([_row("test_split"), _row("nonmembers")]) is None
    assert proposed_nonmembers(data, "members") == "held_out"
    assert proposed_nonmembers(data[1:], "members") is None  # none named held-out
    assert proposed_nonmembers([_row("holdout"), _row("members", **table)], "members") is None
    models = [_row("control", modality="tabular"), _row("cnn", modality="image"),
              _row("xgb_overfit", modality="tabular")]  # fmt: skip
    assert proposed_model(models, "tabular") == "xgb_overfit"
    assert proposed_model(models[:2], "tabular") is None  # only a control fits the data


def test_the_label_comes_from_the_model_then_its_classes_then_the_columns_name() -> None:
    columns = ["age", "colour", "Target", "MOSTYPE", "CARAVAN"]
    values = {"values": {"colour": ["blue", "red"], "MOSTYPE": ["1", "17"], "CARAVAN": ["0", "1"]}}
    assert proposed_label(columns, values, {"label": "CARAVAN"}) == "CARAVAN"
    assert proposed_label(columns, values, {"classes": [0, 1]}) == "CARAVAN"  # 0 is "0"
    assert proposed_label(columns, values, {"classes": ["red", "blue", "green"]}) == "colour"
    assert proposed_label(columns, values, {}) == "Target"  # a label's name, any case
    assert proposed_label(["age", "colour"], values, {"classes": ["x", "y"]}) is None


def _ready(client: object, content: bytes, **fields: object) -> None:
    created = announce(client, content, **fields)  # type: ignore[arg-type]
    assert created.status_code == 201, created.text
    answer = send(client, created.json()["id"], 0, content)  # type: ignore[arg-type]
    assert answer.json()["state"] == "ready", answer.text


def _selected(page: str, field: str) -> list[str]:
    select = re.search(rf'<select id="{field}"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None, field
    return re.findall(r'<option value="([^"]*)"[^>]*\bselected\b', select.group(1))


def test_the_form_proposes_from_her_uploads_and_keeps_her_choices_after_a_refusal(
    service: LiveService,
) -> None:
    rows = b"age,colour,outcome_code\n31,red,no\n45,blue,yes\n52,red,yes\n"
    manifest = {"format": "xgboost-json", "file": "model.json", "classes": ["no", "yes"]}
    folder = _tar([_file("m/target.json", json.dumps(manifest).encode()),
                   _file("m/model.json", b"{}")])  # fmt: skip
    with service.client(service.token("alice")) as alice:
        _ready(alice, rows, name="held_out", filename="held_out.csv")  # sorts first
        _ready(alice, rows, name="members", filename="members.csv")
        _ready(alice, folder, name="a_control", kind="model", filename="c.tar")  # sorts first
        _ready(alice, folder, name="overfit", kind="model", filename="o.tar")
    with browser(service) as client:
        sign_in(client, service.tokens["alice"])
        first = client.get("/console/audits/new").text
        assert _selected(first, "members") == ["members"]
        second = client.get("/console/audits/new?members=members").text
        assert _selected(second, "nonmembers") == ["held_out"]
        assert _selected(second, "model") == ["overfit"]
        assert _selected(second, "label") == ["outcome_code"]  # the model's classes no/yes
        assert "Proposed: <strong>outcome_code</strong>" in second
        name_field = re.search(r'<input id="model_name"[^>]*>', second)
        assert name_field is not None
        assert 'value="overfit"' in name_field.group(0)  # the model's name, hers to change
        csrf = page_csrf(client)
        body = (f"csrf={csrf}&members=members&nonmembers=&label=colour&model=a_control"
                "&model_name=m&version=1&repeats=1")  # fmt: skip
        refused = client.post("/console/audits/new", content=body, headers=FORM)
        assert refused.status_code == 422, refused.text
        assert "does not predict" in refused.text  # colour's red/blue are not no/yes
        assert _selected(refused.text, "label") == ["colour"]  # hers, not the proposal
        assert _selected(refused.text, "model") == ["a_control"]
        assert _selected(refused.text, "nonmembers") == []  # "none", as she chose
        assert 'type="checkbox" name="slices" value="colour"' in second  # no Ctrl-click list
        good = (f"csrf={csrf}&members=members&nonmembers=held_out&label=outcome_code&model=overfit"
                "&slices=colour&slices=age&model_name=m&version=1&repeats=1")  # fmt: skip
        started = client.post("/console/audits/new", content=good, headers=FORM)
        assert started.status_code == 303, started.text
        audit_id = started.headers["location"].split("?")[0].rsplit("/", 1)[-1]
        stored = service.store.get_audit(None, audit_id)
        assert "audit.slices=['colour','age']" in stored.request["overrides_resolved"]


def test_a_control_s_runs_are_their_own_series_on_the_history() -> None:
    """Issue 72: her control's runs plotted among the target's read as if the target had
    quiet versions; they are drawn (and said) as the control's."""
    from datetime import UTC, datetime

    from panoramia.service.console.pages import history_plot, history_text

    def line(audit_id: str, version: str, value: float) -> dict:
        return {"audit_id": audit_id, "version": version, "claimed_epsilon": None,
                "created_at": datetime(2026, 12, 3, tzinfo=UTC),
                "verdict": {"quote": {"value": value, "game": "two_sided",
                                      "interval": [value * 0.8, value * 1.2]}}}  # fmt: skip

    lines = [line("a1", "3", 1.6), line("c1", "3-control", 0.1)]
    text = history_text(lines, controls=frozenset({"c1"}))
    assert "version 3-control (your control)" in text
    assert "version 3 2026" in text
    assert history_plot(lines, frozenset({"c1"})).startswith("data:image/png;base64,")
