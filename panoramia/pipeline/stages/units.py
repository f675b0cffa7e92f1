"""The contract of a reference-units stage: the O(1) audit's units where a modality drew its
members and real non-members by a unit larger than an example (docs/SPEC.md §2.4; text: the
document). The modality's stage writes it; the reporting reads it."""

from panoramia.pipeline.stages.artifacts import UnitLosses

STAGE = "reference_units"
"""The stage's name (one per audit; absent where the unit is the example)."""
UNIT_LOSSES = UnitLosses.FILE
"""``member`` (U,) int8 (1 = a member unit), ``loss`` (U,) f's mean loss over the unit's
examples, ``unit`` (U,) the unit's index: one row per unit."""
