"""The report page's charts, drawn by the audit run from its live figures and kept as
:class:`~panoramia.report.page_parts.PageParts`, so that the page can be rendered again from
what is stored (:func:`panoramia.report.html.render_page`)."""

from __future__ import annotations

import numpy as np

from panoramia.accounting.report_section import ClaimSection
from panoramia.measure import Measurement
from panoramia.measure.jsonable import JSONDict
from panoramia.measure.null import NullTest
from panoramia.report import plots
from panoramia.report.page_parts import ChartPart, PageParts


def page_parts(
    document: JSONDict,
    measurement: Measurement,
    roc_curves: dict[str, tuple[np.ndarray, np.ndarray]],
    losses: dict[str, dict[str, np.ndarray]],
    galleries: dict[str, np.ndarray] | None = None,
    *,
    claim: ClaimSection | None = None,
    null: NullTest | None = None,
) -> PageParts:
    """The charts, in the order that backs the quoted figure: its null, the two-sided game's
    panels where it is played, the paper's game, ROC, losses, the claim, example images.

    ``roc_curves``: (scores, 0/1 membership) of ``attack`` and ``baseline`` on the audit
    set; ``losses``: per model, per-example losses by group; ``galleries``: uint8 images
    (N, H, W, C) by caption; ``null``: the quoted game's null test.
    """
    charts = [plots.null_chart(null)] if null is not None else []
    if "eps_tilde" in (document.get("two_sided") or {}):
        charts += plots.two_sided_charts(document["two_sided"], roc_curves)
    membership = next(iter(roc_curves.values()))[1] if roc_curves else np.zeros(1)
    charts += [
        plots.precision_chart(measurement, float(np.mean(membership))),
        plots.bound_chart(measurement),
        plots.roc_chart(roc_curves),
        *plots.loss_charts(losses),
    ]
    if claim is not None and claim.summary.curve is not None:
        charts.append(plots.tradeoff_chart(claim))
    if galleries:
        charts += plots.gallery_chart(galleries)
    return PageParts(
        charts=[ChartPart(png=c.png, alt=c.alt, member_data=c.member_data) for c in charts]
    )
