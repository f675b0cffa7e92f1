"""The text audit's O(1) units: f's mean loss over each whole document (docs/SPEC.md §2.4).

The embedded text is split into members and real non-members by *document*
(:func:`panoramia.modalities.text.data._pools`), so a document, not a chunk, is the unit whose
membership was drawn at random: chunks of one document share their text and, under any
model, much of their loss. The stage scores every chunk of the data stage's members and real
non-members under f (all of them: which chunks the split stage drew is the same for both
sides only in expectation, and a document's score must not depend on its side) and keeps one
number per document. The reporting draws the paired game on them
(:func:`panoramia.measure.real_nonmembers.paired_unit_game`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from panoramia.modalities.text.data import MEMBERS, NONMEMBERS
from panoramia.modalities.text.documents import read_chunks
from panoramia.pipeline.graph import StageSpec
from panoramia.pipeline.stages.artifacts import UnitLosses
from panoramia.pipeline.stages.audit_protocol import Audit
from panoramia.pipeline.stages.losses import model_directory
from panoramia.pipeline.stages.runner import StageResult
from panoramia.pipeline.stages.stage_key import StageKey
from panoramia.pipeline.stages.units import STAGE
from panoramia.targets import load_target

UNIT_LOSSES = StageKey(STAGE)
"""f's losses per document: what it scores is its inputs' (f, the data stage's documents)."""


def document_losses(
    documents: np.ndarray, losses: np.ndarray, member: np.ndarray
) -> dict[str, np.ndarray]:
    """One row per document: its chunks' mean of ``losses`` (shape (N,), per chunk) and
    whether it is a member (``member`` (N,) 0/1, the same for all chunks of a document)."""
    units, inverse, counts = np.unique(documents, return_inverse=True, return_counts=True)
    side = np.bincount(inverse, member) / counts
    if np.any((side > 0) & (side < 1)):
        raise ValueError("a document has chunks among the members and the non-members")
    return {
        "member": side.astype(np.int8),
        "loss": np.bincount(inverse, losses) / counts,
        "unit": units,
    }


def build_reference_units(audit: Audit, target: StageResult, data: StageResult) -> StageResult:
    """f's mean loss per member and per real non-member document (:data:`UNIT_LOSSES`)."""

    def build(directory: Path) -> dict:
        adapter = load_target(
            model_directory(target), trusted_modules=audit.trusted_modules(),
            device=audit.inference_device("target"),
        )  # fmt: skip
        sets = [read_chunks(data.directory / name) for name in (MEMBERS, NONMEMBERS)]
        losses = [audit.side_losses(adapter, chunks).mean(axis=1) for chunks in sets]
        member = np.r_[np.ones(len(sets[0])), np.zeros(len(sets[1]))]
        rows = document_losses(
            np.concatenate([chunks.documents for chunks in sets]), np.concatenate(losses), member
        )
        UnitLosses(**rows).save(directory)
        return {
            "unit": "document",
            "members": int(rows["member"].sum()),
            "nonmembers": int((rows["member"] == 0).sum()),
        }

    return audit.runner.run(
        UNIT_LOSSES, build, config={"unit": "document"}, inputs=[target, data],
        label="losses under target, per document",
    )  # fmt: skip


def planned(audit: Audit) -> list[str]:
    """The stage runs where the audit drew the split by document (the embedded text, whole:
    ``data.max_members`` keeps the pool's first chunks in the corpus's order) and O(1) is on;
    elsewhere the per-chunk game stays, as a figure outside the verdict."""
    job, data = audit.job, audit.job.data
    drawn = data.source != "files" and data.max_members is None  # as the data stage's info says
    return [STAGE] if job.audit.real_nonmembers.o1 and drawn else []


REFERENCE_UNITS = StageSpec(
    STAGE, ("target", "data"),
    lambda audit, built: build_reference_units(audit, built["target"], built["data"]),
    names=planned,
)  # fmt: skip
"""The text graph's entry for it, after ``losses_target``."""
