"""The text audit's O(1) units (issue 75): one row per document, and where they are played."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from panoramia.modalities.text.reference_units import document_losses, planned
from panoramia.pipeline.reporting import _held_out_drawn
from panoramia.pipeline.stages.units import STAGE


def test_document_losses_average_each_document_once() -> None:
    documents = np.array([4, 4, 9, 2, 2, 2])
    losses = np.array([1.0, 3.0, 5.0, 0.0, 3.0, 6.0])
    member = np.array([1, 1, 0, 1, 1, 1])
    rows = document_losses(documents, losses, member)
    assert rows["unit"].tolist() == [2, 4, 9]
    assert rows["loss"].tolist() == [3.0, 2.0, 5.0]
    assert rows["member"].tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match="among the members and the non-members"):
        document_losses(documents, losses, np.array([1, 0, 0, 1, 1, 1]))


def _audit(source: str = "python_docs", max_members: int | None = None, o1: bool = True):
    data = SimpleNamespace(source=source, max_members=max_members)
    audit = SimpleNamespace(real_nonmembers=SimpleNamespace(o1=o1))
    return SimpleNamespace(job=SimpleNamespace(data=data, audit=audit))


def test_the_document_game_is_played_only_where_the_audit_drew_the_split() -> None:
    assert planned(_audit()) == [STAGE]
    assert planned(_audit(source="files")) == []  # her own held-out documents
    assert planned(_audit(max_members=300)) == []  # the pool's first chunks, in corpus order
    assert planned(_audit(o1=False)) == []


def test_held_out_drawn_follows_the_data_stage_where_it_says() -> None:
    def stages(info: dict) -> dict:
        return {"data": SimpleNamespace(info=info)}

    embedded = SimpleNamespace(data=SimpleNamespace(nonmembers_path="/ignored.jsonl"))
    assert _held_out_drawn(embedded, stages({"held_out_drawn": True})) is True
    assert _held_out_drawn(embedded, stages({"held_out_drawn": False})) is False
    hers = SimpleNamespace(data=SimpleNamespace(nonmembers_path="held_out.csv"))
    assert _held_out_drawn(hers, stages({})) is False  # tables and images: her own file
    adult = SimpleNamespace(data=SimpleNamespace(nonmembers_path=None))  # every data section has it
    assert _held_out_drawn(adult, stages({})) is True
