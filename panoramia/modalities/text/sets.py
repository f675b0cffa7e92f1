"""A text audit's example sets: TextSets of token chunks in ``.npz`` files."""

from __future__ import annotations

from panoramia.modalities.text.data import MEMBERS, NONMEMBERS
from panoramia.modalities.text.documents import concat_chunks, read_chunks
from panoramia.pipeline.stages.example_sets import ExampleSets, fill_arrays, write_taken

TEXT_SETS = ExampleSets(
    suffix=".npz", members_file=MEMBERS, nonmembers_file=NONMEMBERS, read=read_chunks,
    write=write_taken, stack=lambda members, others: concat_chunks([members, others]),
    fill=fill_arrays,
)  # fmt: skip
