"""What a modality shows in its report besides the figures: one value the job asks of the
plug-in (:meth:`panoramia.pipeline.graph.AuditPipeline.report_inputs`) and hands to the report
(:func:`panoramia.pipeline.reporting.build_report`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ReportInputs:
    """What a modality shows in its report besides the figures, from its stages
    (:meth:`panoramia.pipeline.graph.AuditPipeline.report_inputs`): ``galleries``, uint8
    images (N, H, W, C) by caption, drawn as grids in the page; ``examples``, texts by caption
    (decoded chunks), shown in the page and kept in report.json; ``members``, the audited
    members as a table and the columns to group them by, for the exposed records and groups;
    ``reference_groups``, the reference attack's scored rows as a table and the group
    columns. Empty or None where the modality shows none."""

    galleries: dict[str, np.ndarray] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    members: tuple | None = None
    reference_groups: tuple | None = None
