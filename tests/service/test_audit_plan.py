"""The audit plan: typed, stored with the audit, turned into a command line only at launch;
nothing parsed back out of a command line the service wrote."""

from __future__ import annotations

import pytest

from panoramia.service.submission.plan import (
    MAX_SEED,
    AuditPlan,
    PlanError,
    PlannedFile,
    repeated,
    split_seed,
)

PLAN = AuditPlan(
    "tabular",
    ("target=mlp_path", "target.name='census-2'", "data=csv", "data.label='income'"),
    {
        "data.members_path": PlannedFile(upload="u-members"),
        "target.path": PlannedFile(path="/srv/models/census"),
    },
    ("helper.epochs=3",),
    7,
)


def test_a_plan_gives_its_command_line_with_the_copies_the_worker_made() -> None:
    assert PLAN.command_line() == [
        "target=mlp_path", "target.name='census-2'", "data=csv", "data.label='income'",
        "target.path='/srv/models/census'", "data.members_path='upload:u-members'",
        "helper.epochs=3", "seed=7",
    ]  # fmt: skip
    copies = {"data.members_path": "/run/inputs/it's.csv", "target.path": "/run/inputs/target"}
    launched = PLAN.command_line(copies)
    assert "data.members_path='/run/inputs/it\\'s.csv'" in launched  # quoted, never parsed
    assert "target.path='/run/inputs/target'" in launched
    assert AuditPlan("text", ("--config-name=text",)).command_line() == ["--config-name=text"]


def test_a_stored_plan_reads_back_as_it_was_and_a_malformed_one_is_refused() -> None:
    stored = PLAN.as_json()
    assert stored["files"] == {
        "data.members_path": {"upload": "u-members"}, "target.path": {"path": "/srv/models/census"}
    }  # fmt: skip
    assert AuditPlan.from_json(stored) == PLAN
    for broken in ({**stored, "version": 2}, {**stored, "seed": -1},
                   {**stored, "lines": [3]}, {**stored, "files": {"data.label": {"path": "x"}}},
                   {**stored, "seed": True}, {**stored, "lines": "target=x"},
                   {**stored, "modality": "not-installed"},
                   {**stored, "files": {"target.path": {}}}):  # fmt: skip
        with pytest.raises((ValueError, TypeError)):
            AuditPlan.from_json(broken)


def test_her_seed_is_read_once_from_her_text_and_repeats_change_the_plans_seed() -> None:
    assert split_seed(["a.b=1", "seed=12", "c=2"]) == (["a.b=1", "c=2"], 12, 1)
    assert split_seed(["a.b=1"]) == (["a.b=1"], None, -1)
    for bad in ("seed=-1", "seed=1.5", "seed=x"):
        # left among her overrides for the composed config's check to name, as before
        kept, seed, where = split_seed(["a.b=1", bad])
        assert (kept, seed) == (["a.b=1", bad], None)
        with pytest.raises(PlanError) as refused:  # and refused where she asks for repeats
            repeated(AuditPlan("tabular", (), overrides=tuple(kept)), 2, where)
        assert refused.value.position == 1
    # a whole number past the largest seed is hers: the composed config or the count refuses it
    assert split_seed([f"seed={MAX_SEED + 1}"]) == ([], MAX_SEED + 1, 0)
    runs = repeated(PLAN, 3)
    assert [run.seed for run in runs] == [7, 8, 9]
    assert [run.command_line()[-1] for run in runs] == ["seed=7", "seed=8", "seed=9"]
    assert repeated(AuditPlan("tabular", ()), 2)[0].seed == 0  # no seed of hers: from 0
    with pytest.raises(PlanError, match="pass"):
        repeated(AuditPlan("tabular", (), seed=MAX_SEED), 2, position=4)
