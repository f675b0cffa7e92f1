"""Human-readable rendering of measurement results with rich (the CLI's non-JSON output)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from panoramia.measure import INTERPRETATION, Measurement, O1Result, OperatingPoint, RocSummary
from panoramia.measure.two_sided import TwoSidedMeasurement


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or value != value else f"{value:.{digits}f}"


def _point_row(label: str, point: OperatingPoint, roc: RocSummary) -> list[str]:
    return [
        label,
        f"{point.theta_lb:.3f}",
        _fmt(point.threshold, 3),
        str(point.r),
        str(point.v),
        _fmt(point.precision) + ("*" if point.saturated else ""),
        _fmt(point.recall),
        _fmt(point.ceiling),
        _fmt(roc.auc),
    ]


def measurement_view(attack_name: str, result: Measurement) -> Group:
    """A table of the baseline and attack maximisers, ε̃, and what the numbers mean."""
    table = Table(
        title=(
            f"attack {attack_name!r}: {result.strategy} (K = {result.n_thresholds}), "
            f"m = {result.m}, confidence {result.confidence:g}, "
            f"α per test = {result.alpha_per_test:.3g}"
        ),
        title_justify="left",
    )
    for header in ("bound", "value", "τ", "r", "v", "prec.", "recall", "ceiling", "AUC"):
        table.add_column(header, justify="left" if header == "bound" else "right")
    table.add_row(*_point_row("c_lb", result.baseline.best, result.baseline.roc))
    table.add_row(*_point_row("{c+ε}_lb", result.attack.best, result.attack.roc))
    lines: list[RenderableType] = [table, Text(f"ε̃ = {result.eps_tilde:.3f}", style="bold")]
    if result.gamma or result.delta:
        lines.append(Text(f"relaxed tests: γ = {result.gamma:g}, δ = {result.delta:g}"))
    if result.saturated:
        lines.append(
            Text(
                "* saturated: the maximiser has precision 1, so its bound counts error-free "
                "guesses and sits at the ceiling for its r; it does not measure a precision gap.",
                style="yellow",
            )
        )
    lines.append(Text(INTERPRETATION, style="dim"))
    return Group(*lines)


def two_sided_line(game: TwoSidedMeasurement) -> Text:
    """One line: the two-sided game's bounds and ε̃, read beside the paper's."""
    flag = " (saturated)" if game.saturated else ""
    return Text(
        f"two-sided game (docs/SPEC.md §2.6, beside the paper's): c_lb = {game.c_lb:.3f}, "
        f"{{c+ε}}_lb = {game.c_plus_eps_lb:.3f}, ε̃ = {game.eps_tilde:.3f}{flag}",
        style="bold",
    )


def o1_view(result: O1Result) -> Group:
    """The O(1) audit's best (k₊, k₋) and its lower bound on ε."""
    table = Table(
        title=(
            f"O(1) audit — n = {result.n}, {result.n_grid} (k₊, k₋) pairs, "
            f"confidence {result.confidence:g}, δ = {result.delta:g}"
        ),
        title_justify="left",
    )
    for header in ("ε_lb", "k₊", "k₋", "guesses r", "correct v", "precision", "ceiling"):
        table.add_column(header, justify="right")
    table.add_row(
        f"{result.eps_lb:.3f}",
        str(result.k_plus),
        str(result.k_minus),
        str(result.r),
        str(result.v),
        _fmt(result.v / result.r),
        _fmt(result.ceiling),
    )
    note = Text(
        "A lower bound on ε only if membership was randomised (each example trained on with "
        "probability 1/2); with a post-hoc held-out split it is a reference measurement.",
        style="dim",
    )
    return Group(table, note)
