"""How the toy's point sets are stored, stacked and dealt into the game."""

from __future__ import annotations

from panoramia.pipeline.stages.example_sets import ExampleSets, fill_arrays, write_taken
from tests.toy_modality.data import MEMBERS, NONMEMBERS
from tests.toy_modality.points import PointSet

TOY_SETS = ExampleSets(
    suffix=".npz", members_file=MEMBERS, nonmembers_file=NONMEMBERS, read=PointSet.read,
    write=write_taken, stack=PointSet.concat, fill=fill_arrays,
)  # fmt: skip
