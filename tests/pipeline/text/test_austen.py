"""The embedded real prose (issue 70): Jane Austen's novels, one document a chapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.modalities.text.config import TextDataConfig, TextTargetConfig
from panoramia.modalities.text.data import build_text_data
from panoramia.modalities.text.datasets import load_austen
from panoramia.modalities.text.documents import read_chunks


def test_austen_is_269_chapters_of_real_prose() -> None:
    chapters = load_austen()
    assert len(chapters) == 269  # Emma 55, Mansfield Park 48, Northanger Abbey 31,
    assert sum(len(text.split()) for text in chapters) == 716_827  # Persuasion 24, P&P 61, S&S 50
    assert chapters[0].startswith("Emma Woodhouse, handsome, clever, and rich")
    assert not any(text.lstrip().lower().startswith("chapter") for text in chapters)


def test_austen_splits_by_chapter_into_three_pools(tmp_path: Path) -> None:
    info = build_text_data(
        TextDataConfig(source="austen", vocab_size=512), TextTargetConfig(), tmp_path
    )
    assert info["documents"] == 269
    assert info["held_out_drawn"] is True
    parts = [read_chunks(tmp_path / name) for name in
             ("members.npz", "control_pool.npz", "nonmembers.npz")]  # fmt: skip
    documents = [set(np.unique(part.documents)) for part in parts]
    assert not documents[0] & documents[1]  # no chapter in two pools
    assert not documents[0] & documents[2]
    assert not documents[1] & documents[2]
    assert len(parts[0]) >= 1600
    assert len(parts[2]) > 1600  # real non-members to spare
