"""The page of a report stored without one: ``POST /v1/reports`` takes its page as optional
(a CLI run's ``page_parts.json``, or an older run's ``report.html``), so a report uploaded
without either has no page of its own; its
``/html`` then answers this page, written from the report's stored figures, rather than a 404
that says the report does not exist. It has no charts (they are drawn from the run's scores,
which the service never receives) and says so, and how to store the full page."""

from __future__ import annotations

import html

from panoramia.service.schemas import ReportSummary

STYLE = (
    "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:46rem;padding:1rem;"
    "line-height:1.5}table{border-collapse:collapse}th,td{border-bottom:1px solid #ccc;"
    "padding:.3rem .6rem;text-align:left}.note{background:#f4f4f4;padding:.6rem}"
)


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def summary_page(report: ReportSummary) -> str:
    """A self-contained page of ``report``'s verdict and figures (nothing to load, no
    script; every value escaped)."""
    title = html.escape(f"{report.model} version {report.version}")
    rows = [("verdict", report.level or "—"), ("p-value", _figure(report.p_value))]
    if report.quoted is not None:
        interval = report.quoted.interval
        shown = _figure(report.quoted.value)
        if interval and len(interval) == 2:
            shown += f" (interval {interval[0]:.3f}–{interval[1]:.3f})"
        rows.append((f"quoted ε̃ ({report.quoted.game} game, nats)", shown))
    rows += [
        ("paper's one-sided game: c_lb (baseline)", _figure(report.c_lb)),
        ("paper's one-sided game: {c+ε}_lb (attack)", _figure(report.c_plus_eps_lb)),
        ("paper's one-sided game: ε̃", _figure(report.eps_tilde)),
        ("stored", report.created_at.isoformat()),
    ]
    table = "".join(
        f"<tr><th scope=row>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
        for name, value in rows
    )
    headline = f"<p>{html.escape(report.headline)}</p>" if report.headline else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>PANORAMIA audit — {title}</title><style>{STYLE}</style></head>
<body><main><h1>Privacy audit of {title}</h1>
<p>{html.escape(report.modality)} audit, report {html.escape(report.id)}.</p>
{headline}
<table><tbody>{table}</tbody></table>
<p class=note>This report was stored without its page: the service wrote this one from the
report's figures, without the charts, exposed records and groups of the run's own
<code>page_parts.json</code>. <code>panoramia reports upload RUN_DIR</code> stores a run's
report with its page.</p>
</main></body></html>"""
