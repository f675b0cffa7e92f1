"""The report's charts: one chart per image, one colour per role on every chart, fonts that
stay readable at 100 % (≥ 11 px), each returned with the alt text that says what it shows.

Roles and their colours (:data:`ROLE_COLOURS`): the attack (with the model), the baseline
(without it), members, generated non-members, real non-members, the null draws. Symbols are
the page's own (c_lb, {c+ε}_lb, ε̃, θ), defined in its glossary.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from panoramia.measure import Measurement, max_precision_allowed
from panoramia.measure.jsonable import JSONDict
from panoramia.measure.null import NullTest

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

    from panoramia.accounting.report_section import ClaimSection
    from panoramia.accounting.tradeoff import TradeoffCurve

ROLE_COLOURS = {
    "attack": "#b2182b",
    "baseline": "#2166ac",
    "members": "#1b7837",
    "synthetic": "#762a83",
    "real non-members": "#8c510a",
    "null": "#7f7f7f",
    "threshold": "#000000",
}
"""One colour per role, on every chart (colour-blind-safe pairs: red/blue, green/purple)."""
GROUP_NAMES = {"synthetic": "generated non-members"}
"""How a chart names a group of records (the page's words)."""
LOSS_FLOOR = 1e-6
"""Losses below this are drawn at it (log axis); the share at the floor is labelled."""
FONTS: dict[RcKeyType, int] = {
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "legend.fontsize": 11,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
}
"""Points at 110 dpi, drawn ≤ 7 inches wide: ≥ 11 px when the page shows the image whole."""


@dataclass(frozen=True)
class Chart:
    """One PNG (base64) and the alt text that says what it shows."""

    png: str
    alt: str
    member_data: bool = False
    """It shows records (members, or samples of a generator trained on them)."""


@contextmanager
def _figure(width: float = 6.8, height: float = 4.0) -> Iterator[tuple[Figure, Axes]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(FONTS):
        figure, axis = plt.subplots(figsize=(width, height), layout="constrained")
        try:
            yield figure, axis
        finally:
            plt.close(figure)


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode()


def null_chart(null: NullTest) -> Chart:
    """The quoted game's gap against this audit's null draws."""
    game = "two-sided game" if null.game == "two_sided" else "paper's one-sided game"
    with _figure() as (figure, axis):
        axis.hist(
            null.centred,
            bins=40,
            color=ROLE_COLOURS["null"],
            label=f"null draws (B = {null.draws})",
        )
        axis.axvline(
            null.threshold,
            color=ROLE_COLOURS["threshold"],
            linestyle="--",
            label=f"{1 - null.false_alarm_rate:.0%} of the null: {null.threshold:.2f}",
        )
        axis.axvline(
            null.observed,
            color=ROLE_COLOURS["attack"],
            linewidth=2.5,
            label=f"this run: Δ = {null.observed:.2f}",
        )
        axis.set(
            xlabel="gap Δ = {c+ε}_lb − c_lb (nats)",
            ylabel="null draws",
            title=f"This run's gap against its null ({game}), p = {null.p_value:.3f}",
        )
        axis.legend(loc="best")
        png = _png(figure)
    where = "above" if null.observed > null.threshold else "not above"
    return Chart(
        png,
        (
            f"Histogram of {null.draws} null draws of the gap in the {game}; this run's gap "
            f"{null.observed:.2f} is {where} the threshold {null.threshold:.2f} (p = "
            f"{null.p_value:.3f})."
        ),
    )


def two_sided_charts(
    two_sided: JSONDict, scores: dict[str, tuple[np.ndarray, np.ndarray]]
) -> list[Chart]:
    """Per side of the two-sided game: its scores for members and generated non-members, the
    chosen thresholds (guess non-member below *low*, member above *high*) and its bound."""
    charts = []
    for side in ("baseline", "attack"):
        point = two_sided.get(side) or {}
        if side not in scores or "low" not in point:
            continue
        values, membership = scores[side]
        # matplotlib's stub types ``bins`` as a Sequence; its runtime takes any array.
        bins = cast("Sequence[float]", np.linspace(0.0, 1.0, 41))
        with _figure() as (figure, axis):
            for group, keep in (("members", membership == 1), ("synthetic", membership == 0)):
                label = "members" if group == "members" else "generated non-members"
                axis.hist(
                    values[keep],
                    bins=bins,
                    histtype="step",
                    linewidth=2,
                    color=ROLE_COLOURS[group],
                    label=f"{label} (n = {int(keep.sum())})",
                )
            for at, name in ((point["low"], "low"), (point["high"], "high")):
                axis.axvline(at, color=ROLE_COLOURS[side], linestyle="--", linewidth=1.5)
                axis.text(
                    at,
                    0.97,
                    f"{name} {at:.2f} ",
                    rotation=90,
                    ha="right",
                    va="top",
                    color=ROLE_COLOURS[side],
                    transform=axis.get_xaxis_transform(),
                )
            bound = "c_lb" if side == "baseline" else "{c+ε}_lb"
            axis.set(
                xlabel=f"{side}'s score (higher: more likely a member)",
                ylabel="records",
                title=f"Two-sided game, {side}: {bound} = {point['theta_lb']:.2f}",
            )
            axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
            png = _png(figure)
        charts.append(
            Chart(
                png,
                (
                    f"Two-sided game, {side}: scores of members and generated non-members. "
                    f"It guesses member above {point['high']:.2f} ({point['member_correct']} of "
                    f"{point['member_guesses']} right) and non-member below {point['low']:.2f} "
                    f"({point['nonmember_correct']} of {point['nonmember_guesses']} right); "
                    f"its bound {bound} is {point['theta_lb']:.2f}."
                ),
            )
        )
    return charts


def precision_chart(measurement: Measurement, members_share: float) -> Chart:
    """Precision against recall of both sides in the paper's game, the base rate (members'
    share: a coin's precision), the most precision each side's θ allows, and the chosen
    threshold of each."""
    with _figure(6.8, 5.6) as (figure, axis):
        for side, result in (("baseline", measurement.baseline), ("attack", measurement.attack)):
            table, colour = result.table, ROLE_COLOURS[side]
            has = table.r > 0
            axis.plot(
                table.recall[has], table.precision[has], color=colour, linewidth=2, label=f"{side}"
            )
            allowed = max_precision_allowed(
                table.r[has], theta=result.best.theta_lb, alpha=result.alpha
            )
            axis.plot(
                table.recall[has],
                np.minimum(allowed, 1.0),
                color=colour,
                linestyle=":",
                label=f"{side}: most precision θ = {result.best.theta_lb:.2f} allows",
            )
            best = result.best
            axis.scatter(
                [best.recall],
                [best.v / max(best.r, 1)],
                color=colour,
                s=60,
                zorder=3,
                edgecolor="black",
                label=f"{side}: chosen threshold",
            )
        axis.axhline(
            members_share,
            color=ROLE_COLOURS["null"],
            linestyle="--",
            label=f"base rate {members_share:.2f} (guessing)",
        )
        axis.set(
            xlabel="recall (share of members flagged)",
            ylabel="precision",
            title="Paper's one-sided game: precision against recall",
            ylim=(0.4, 1.02),
        )
        axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=10)
        png = _png(figure)
    attack, baseline = measurement.attack.best, measurement.baseline.best
    return Chart(
        png,
        (
            f"Precision against recall in the paper's one-sided game. At its chosen threshold "
            f"the attack flags {attack.r} records, {attack.v} of them members; the baseline "
            f"{baseline.r}, {baseline.v} members; guessing is right {members_share:.0%} "
            "of the time."
        ),
    )


def bound_chart(measurement: Measurement) -> Chart:
    """Each threshold's lower bound θ_lb against recall: the bound quoted is the highest."""
    with _figure() as (figure, axis):
        for side, result in (("baseline", measurement.baseline), ("attack", measurement.attack)):
            colour = ROLE_COLOURS[side]
            axis.plot(
                result.table.recall, result.table.theta_lb, color=colour, linewidth=2, label=side
            )
            axis.scatter(
                [result.best.recall],
                [result.best.theta_lb],
                color=colour,
                s=60,
                edgecolor="black",
                zorder=3,
            )
        axis.set(
            xlabel="recall",
            ylabel="θ_lb (nats)",
            title="Paper's game: lower bound θ_lb at each threshold",
        )
        axis.legend(loc="best")
        png = _png(figure)
    return Chart(
        png,
        (
            f"Lower bound θ_lb at each threshold against recall; the highest is quoted: "
            f"c_lb = {measurement.c_lb:.2f} for the baseline, {{c+ε}}_lb = "
            f"{measurement.c_plus_eps_lb:.2f} for the attack."
        ),
    )


def roc_chart(curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> Chart:
    """ROC curves on log axes, down to one example of each class."""
    with _figure(6.0, 4.6) as (figure, axis):
        floor_fpr = floor_tpr = 1.0
        for name, (scores, membership) in curves.items():
            order = np.argsort(-scores, kind="stable")
            hits = membership[order]
            positives, negatives = max(int(hits.sum()), 1), max(int((1 - hits).sum()), 1)
            floor_fpr, floor_tpr = min(floor_fpr, 1 / negatives), min(floor_tpr, 1 / positives)
            tpr, fpr = np.cumsum(hits) / positives, np.cumsum(1 - hits) / negatives
            axis.plot(
                np.maximum(fpr, 1 / negatives),
                np.maximum(tpr, 1 / positives),
                color=ROLE_COLOURS.get(name, "black"),
                linewidth=2,
                label=name,
            )
        axis.plot(
            [floor_fpr, 1],
            [floor_fpr, 1],
            color=ROLE_COLOURS["null"],
            linestyle="--",
            linewidth=1,
            label="guessing",
        )
        axis.set(
            xscale="log",
            yscale="log",
            xlim=(floor_fpr, 1),
            ylim=(floor_tpr, 1.05),
            xlabel=f"false-positive rate (from 1/{round(1 / floor_fpr)})",
            ylabel=f"true-positive rate (from 1/{round(1 / floor_tpr)})",
            title="ROC, log axes, down to one record",
        )
        axis.legend(loc="lower right")
        png = _png(figure)
    return Chart(
        png,
        (
            "ROC curves of the attack and the baseline on log axes, down to one record of each "
            "class; the dashed diagonal is guessing."
        ),
    )


def loss_charts(losses: dict[str, dict[str, np.ndarray]]) -> list[Chart]:
    """Per model, the cumulative share of each group's losses (log axis): no bin can flatten
    the difference, and the share at the floor is printed in the legend."""
    charts = []
    for model, groups in losses.items():
        with _figure() as (figure, axis):
            shown = []
            for group, values in groups.items():
                if not values.size:
                    continue
                clipped = np.sort(np.maximum(values, LOSS_FLOOR))
                floored = float(np.mean(values <= LOSS_FLOOR))
                share = np.arange(1, clipped.size + 1) / clipped.size
                colour = ROLE_COLOURS.get(group, "black")
                note = f", {floored:.0%} at ≤ 1e-6" if floored >= 0.005 else ""
                axis.step(
                    clipped,
                    share,
                    where="post",
                    color=colour,
                    linewidth=2,
                    label=f"{GROUP_NAMES.get(group, group)} (n = {values.size}{note})",
                )
                shown.append(f"{group} median {np.median(values):.3g}")
            axis.set(
                xscale="log",
                xlabel="per-example loss (nats, log scale)",
                ylabel="share of records at or below",
                title=f"Losses under {model}",
            )
            axis.legend(loc="lower right")
            png = _png(figure)
        charts.append(
            Chart(
                png,
                (
                    f"Cumulative distributions of per-example losses under {model}: "
                    + "; ".join(shown)
                    + ". A curve further left means lower losses."
                ),
            )
        )
    return charts


def gallery_chart(galleries: dict[str, np.ndarray], columns: int = 8) -> list[Chart]:
    """One grid of images per caption (uint8, N×H×W×C)."""
    charts = []
    for caption, images in galleries.items():
        n, h, w, c = images.shape
        rows = max(1, -(-n // columns))
        grid = np.full((rows * (h + 1), columns * (w + 1), c), 255, np.uint8)
        for index, image in enumerate(images):
            r, k = divmod(index, columns)
            grid[r * (h + 1) : r * (h + 1) + h, k * (w + 1) : k * (w + 1) + w] = image
        with _figure(4.4, 4.6) as (figure, axis):
            axis.imshow(grid[..., 0] if c == 1 else grid, cmap="gray" if c == 1 else None)
            axis.set_title(caption)
            axis.axis("off")
            png = _png(figure)
        charts.append(Chart(png, f"{n} example images: {caption}.", member_data=True))
    return charts


def tradeoff_chart(section: ClaimSection) -> Chart:
    """FNR against FPR: the claim's curves and the measured points with their CP boxes
    (``section``: a ``ClaimSection``)."""
    from matplotlib.patches import Rectangle

    from panoramia.accounting.tradeoff import eps_delta_tradeoff, gdp_tradeoff

    summary = section.summary
    curve = cast("TradeoffCurve", summary.curve)  # drawn only for a claim with a curve
    alphas = np.r_[0.0, np.geomspace(1e-6, 1.0, 400)]
    colours = {
        "attack": ROLE_COLOURS["attack"],
        "baseline": ROLE_COLOURS["baseline"],
        "rmrn": ROLE_COLOURS["real non-members"],
    }
    with _figure(6.4, 5.4) as (figure, axis):
        axis.plot(alphas, curve(alphas), color="black", label="f of the claim (one run)")
        if summary.tuned:
            check_curve = cast("TradeoffCurve", summary.check_curve)  # a curve, as the claim's
            axis.plot(
                alphas,
                check_curve(alphas),
                color="black",
                linestyle=":",
                label="after tuning (certified profile)",
            )
        if summary.mu is not None:
            axis.plot(
                alphas,
                gdp_tradeoff(alphas, summary.mu),
                color=ROLE_COLOURS["null"],
                linestyle="--",
                label=f"f_μ*, μ* = {summary.mu:.3g}",
            )
        if "1e-05" in summary.epsilons and summary.mu is not None:
            epsilon = summary.epsilons["1e-05"]
            axis.plot(
                alphas,
                eps_delta_tradeoff(alphas, epsilon, 1e-5),
                color="#4d4d4d",
                linestyle="-.",
                label=f"naive f_(ε,δ), ε = {epsilon:.3g}, δ = 1e-5",
            )
        for name, check in section.checks.items():
            fpr, fnr = check.fpr, 1 - check.tpr
            colour = colours.get(name, "#4d4d4d")
            axis.plot(fpr, fnr, ".", color=colour, markersize=4, label=f"{name} operating points")
            for k in np.linspace(0, fpr.size - 1, min(fpr.size, 12)).astype(int):
                axis.add_patch(
                    Rectangle(
                        (fpr[k], fnr[k]),
                        check.fpr_upper[k] - fpr[k],
                        check.fnr_upper[k] - fnr[k],
                        fill=False,
                        edgecolor=colour,
                        linewidth=0.8,
                    )
                )
        axis.plot([0, 1], [1, 0], color="lightgray", linewidth=0.8)
        axis.set(
            xlim=(0, 1),
            ylim=(0, 1),
            xlabel="FPR α (non-member called member)",
            ylabel="FNR β (member missed)",
            title="A point below the claim's curve contradicts it",
        )
        axis.legend(fontsize=10, loc="upper right")
        png = _png(figure)
    below = sum(int(check.violations.size) for check in section.checks.values())
    return Chart(
        png,
        (
            "Trade-off plane of the declared guarantee: its curve of FNR against FPR with the "
            f"measured operating points and their confidence boxes; {below} point(s) fall below it."
        ),
    )
