"""An image audit's example sets: ImageSets in ``.npz`` files."""

from __future__ import annotations

from panoramia.modalities.image.data import MEMBERS, NONMEMBERS
from panoramia.modalities.image.images import concat, read_npz
from panoramia.pipeline.stages.example_sets import ExampleSets, fill_arrays, write_taken

IMAGE_SETS = ExampleSets(
    suffix=".npz", members_file=MEMBERS, nonmembers_file=NONMEMBERS, read=read_npz,
    write=write_taken, stack=lambda members, others: concat([members, others]),
    fill=fill_arrays,
)  # fmt: skip
