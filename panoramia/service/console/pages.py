"""The contributor's console: server-rendered pages under ``/console`` (Jinja2, no script).

A contributor signs in with her token (a POST form; the token never appears in a URL or a
log), then sees her models, each model's reports and audits over time with a plot of ε̃ in
both games beside the declared guarantee, the latest verdict, running audits (the page
reloads itself while one runs, when the reader asks it to follow) and each report. Every page
checks tenancy through the store exactly as the API does: another contributor's model, report
or audit is the same 404 page as one that does not exist. Sessions and CSRF:
:mod:`panoramia.service.console.sessions`.
Pages carry :data:`CONSOLE_POLICY` (no script at all, styles from ``/console/static`` only).
"""

import base64
import functools
import io
import re
import secrets
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, cast
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from panoramia.plugins import MODALITIES
from panoramia.report.digest import report_digest
from panoramia.report.plain import plain_paragraph
from panoramia.report.verdict import WORDS, split_caveats
from panoramia.report.verdict_rule import finite_number as number
from panoramia.service.check_pool import CheckPool
from panoramia.service.console import sessions
from panoramia.service.console.audit_form import add_audit_pages, retry_link
from panoramia.service.console.progress_words import progress_words
from panoramia.service.console.shared_pages import add_shared_pages, shared_address
from panoramia.service.console.uploads_page import add_upload_pages
from panoramia.service.model_deletion import model_deletion_sentence, remove_run_folders
from panoramia.service.routing import FormNeeds, Queue, SignedIn
from panoramia.service.schemas import CONTROL_SUFFIX, IDENTIFIER_PATTERN, NAME_PATTERN
from panoramia.service.settings import ServiceSettings
from panoramia.service.submission.repeats import repeat_summary
from panoramia.store.model_rows import ModelDeletion, ModelInUse
from panoramia.store.repository import Principal, ReportStore, as_utc, utcnow
from panoramia.store.tables import Audit, Report
from panoramia.store.tokens import hash_token

CONSOLE_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""The console's pages: no script, no inline style, no framing; forms post to this origin."""
PAGE_HEADERS = {
    "Content-Security-Policy": CONSOLE_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # with no-referrer, Chromium posts forms as Origin: null
    "Cache-Control": "no-store",
}
REFRESH_S = 3
"""How often a page with a queued or running audit reloads itself (seconds)."""
MAX_FORM_BYTES = 4096
ACTIVE = ("queued", "running")
STATIC = Path(__file__).parent / "static"


class NotSignedIn(Exception):
    """The request has no valid session: answered with a redirect to the sign-in page."""


def _templates() -> Environment:
    environment = Environment(
        loader=PackageLoader("panoramia.service.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["when"] = _when
    environment.filters["figure"] = _figure
    environment.filters["share"] = _share
    environment.filters["price"] = _price
    environment.globals["plain_paragraph"] = plain_paragraph
    environment.globals["split_caveats"] = split_caveats
    environment.globals["shared_address"] = shared_address
    return environment


def _when(moment: datetime | None) -> str:
    moment = as_utc(moment)
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _share(value: Any) -> str:
    """A share as a percentage; "too few records" where the counts do not resolve it."""
    found = number(value)
    return "too few records" if found is None else f"{found:.1%}"


SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
"""Digits as exponents (10⁹)."""


def _price(cost: Any, budget: Any = None) -> str:
    """An audit's price as a person reads it: "3.1 × 10⁹ multiply-adds (2 % of your budget)"
    (the share left out where the budget is not a positive finite number)."""
    found, limit = number(cost), number(budget)
    if found is None:
        return "a price that cannot be estimated"
    mantissa, _, exponent = f"{found:.1e}".partition("e")
    said = f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPTS)} multiply-adds"
    if limit is not None and limit > 0:
        share = found / limit
        said += f" ({share:.0%} of your budget)" if share >= 0.01 else " (under 1 % of your budget)"
    return said


def _figure(value: Any, digits: int = 2) -> str:
    """A finite number with ``digits`` decimals; "—" for anything else."""
    found = number(value)
    return "—" if found is None else f"{found:.{digits}f}"


def report_line(report: Report) -> dict[str, Any]:
    """A report's line in a model's history: its figures, verdict and the claim's ε and μ,
    from the digest stored with it (an older row without one: from its document)."""
    digest = report.digest if isinstance(report.digest, dict) else None
    if digest is None:
        digest = report_digest(report.__dict__.get("document"))  # loaded, or None
    return digest | {
        "id": report.id,
        "version": report.model.version,
        "modality": report.modality,
        "created_at": as_utc(report.created_at),
        "eps_tilde": number(report.eps_tilde),
        "c_lb": number(report.c_lb),
        "audit_id": report.audit_id,
    }


Follow = Annotated[str | None, Query(max_length=8)]
"""``?follow=1``: the page reloads itself (every ``REFRESH_S`` seconds) while an audit runs,
because the reader asked for it; without it, a running audit's page offers that and a reload
link instead (a refresh nobody asked for is a barrier to a screen-reader user: axe-core's
``meta-refresh``)."""
PageNumber = Annotated[str | None, Query(alias="page", max_length=20)]
"""``?page=N`` of a paged console list, from 1 (anything else: the first page)."""


def page_number(raw: str | None) -> int:
    """The page ``raw`` names, from 1; the first page for anything that is not one."""
    if raw is None or not re.fullmatch(r"[0-9]{1,7}", raw):  # not str.isdigit: "²" is a digit
        return 1
    return int(raw) if 1 <= int(raw) <= 1_000_000 else 1


def _deletion_said(
    name: str | None, versions: str | None, reports: str | None, audits: str | None
) -> str | None:
    """The deletion sentence a model deletion's redirect carries in its address (each part
    checked; anything else: nothing said)."""
    if name is None or not _valid(NAME_PATTERN, name, 100):
        return None
    listed = (versions or "").split(",")
    counts = [reports or "", audits or ""]
    if not all(_valid(NAME_PATTERN, v, 100) for v in listed) or not all(
        re.fullmatch(r"[0-9]{1,9}", c) for c in counts
    ):
        return None
    gone = ModelDeletion(name, listed, int(counts[0]), [""] * int(counts[1]))
    return model_deletion_sentence(gone)


MODELS_PER_PAGE = 50
"""Model names a page of the list shows, each with its latest verdict (one query each)."""


def model_rows(store: ReportStore, principal: Principal, page: int = 1) -> list[dict[str, Any]]:
    """One row per model name the principal may see, ``MODELS_PER_PAGE`` names to a page
    (``page`` from 1): its versions, owners, report count, latest report time, ``latest``:
    the line of the newest report one of the service's audits wrote (None without one), with
    ``pooled``, its group of repeats, and ``uploaded``: the line of an uploaded report newer
    than that (None without one), which the page shows marked as uploaded, never as the
    model's latest verdict."""
    names = store.model_names(principal, limit=MODELS_PER_PAGE, offset=(page - 1) * MODELS_PER_PAGE)
    rows: dict[str, dict[str, Any]] = {}
    for summary in store.list_models(principal, names=names) if names else ():
        row = rows.setdefault(
            summary.name,
            {"name": summary.name, "versions": [], "owners": set(), "reports": 0,
             "latest_at": None, "declared": False, "latest": None, "uploaded": None},
        )  # fmt: skip
        row["versions"].append(summary.version)
        row["owners"].add(summary.owner or "—")
        row["reports"] += summary.reports
        row["declared"] = row["declared"] or bool(summary.claim)
        latest = summary.latest_report_at
        if latest is not None and (row["latest_at"] is None or latest > row["latest_at"]):
            row["latest_at"] = latest
    ordered = sorted(rows.values(), key=lambda row: row["name"])
    for row in ordered:
        versions = sorted(row["versions"], key=version_order)
        row["versions"] = [v for v in versions if not v.endswith(CONTROL_SUFFIX)]
        row["controls"] = [v.removesuffix(CONTROL_SUFFIX) for v in versions
                           if v.endswith(CONTROL_SUFFIX)]  # fmt: skip
        if row["reports"]:
            audited, newest = store.latest_reports(principal, row["name"])
            row["latest"] = report_line(audited) if audited is not None else None
            row["pooled"] = _group_of(store, principal, audited) if audited is not None else None
            row["uploaded"] = (
                report_line(newest) if newest is not None and newest.audit_id is None else None
            )
    return ordered


def version_order(version: str) -> tuple[tuple[int, int | str], ...]:
    """A version's place among its model's: its digit runs as numbers, the rest as text, so
    that 2 comes before 10 (and 1.9 before 1.10)."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.findall(r"[0-9]+|[^0-9]+", version)
    )


def _group_of(store: ReportStore, principal: Principal, report: Report) -> dict[str, Any] | None:
    """The group of repeats the report's audit is one of (its summary), else None: a listing
    shows a group's one verdict, never one of its runs alone."""
    if not report.audit_id:
        return None
    audit = store.get_audit(principal, report.audit_id)
    if audit is None or not audit.repeat_group:
        return None
    return repeat_summary(store, principal, audit.repeat_group)


MAX_HISTORY = 100
"""Reports a model page lists and plots (the newest)."""


def history_plot(
    lines: list[dict[str, Any]], controls: frozenset[str] = frozenset(), *, narrow: bool = False
) -> str | None:
    """A PNG (data URI) of each report's quoted ε̃, oldest first, one marker per report (never
    joined: versions are not a trend), with this run's interval where the report has one,
    each game its own marker, her control's runs (``controls``: their audit ids) as a series
    of their own in hollow grey, and the claimed ε (δ = 1e-5) as a dashed line where one was
    declared; None without reports. ``narrow``: drawn for a phone (a squarer figure, fewer
    labelled reports, its legend's words wrapped), which the page serves below 600 px."""
    if not lines:
        return None
    points = []
    for line in lines:
        role = "control" if (line.get("audit_id") or "") in controls else "target"
        found = line.get("verdict") or {}
        quote = found.get("quote") or {}
        interval = quote.get("interval")
        stamp = line.get("created_at")
        points.append((
            line.get("version") or "",
            number(quote.get("value")),
            str(quote.get("game") or ""),
            tuple(interval) if isinstance(interval, list) and len(interval) == 2 else None,
            stamp.strftime("%Y-%m-%d %H:%M") if stamp is not None else "",
            number(found.get("null_threshold")),
            role,
        ))  # fmt: skip
    claimed = [line["claimed_epsilon"] for line in lines if line["claimed_epsilon"] is not None]
    return _plot(tuple(points), claimed[-1] if claimed else None, narrow)


GAME_MARKERS = {"one_sided": ("o", "#1f4e79", "paper's one-sided game"),
                "two_sided": ("s", "#7a1010", "two-sided game")}  # fmt: skip
"""How each game's quoted figures are drawn on a model's history."""


HISTORY_TICKS = {False: 6, True: 3}
"""Reports labelled on the history plot's axis, at most (wide, narrow): each label is a
version over its date, ~90 px at 11 pt, so six fit the 790 px figure and three the phone's."""


def history_ticks(stamps: list[tuple[str, str]], most: int) -> list[tuple[int, str]]:
    """Where the history plot labels its axis (positions 1…n, one per report, ``stamps``:
    each report's version and "YYYY-MM-DD HH:MM" stored): at most ``most`` positions a whole
    step apart (never two neighbours, whose labels would overlap), counted back from the
    newest, the oldest too where it lies far enough from the last of them; each labelled with
    its version (long ones cut to 12 characters) over its date, the time under it only where
    two labelled reports share a date."""
    count = len(stamps)
    step = max(1, -(-(count - 1) // max(1, most - 1)))  # ceiling
    chosen = list(range(count, 0, -step))[::-1]
    if chosen[0] != 1 and chosen[0] - 1 >= 0.6 * step and len(chosen) < most:
        chosen.insert(0, 1)
    days = [stamps[x - 1][1].split(" ")[0] for x in chosen]
    timed = len(set(days)) < len(days)
    labels = []
    for x, day in zip(chosen, days, strict=True):
        version, stamp = stamps[x - 1]
        short = version if len(version) <= 12 else version[:11] + "…"
        clock = stamp.split(" ")[1] if timed and " " in stamp else ""
        labels.append((x, "\n".join(part for part in (short, day, clock) if part)))
    return labels


@functools.lru_cache(maxsize=256)
def _plot(
    points: tuple[tuple[str, float | None, str, tuple | None, str, float | None, str], ...],
    claimed: float | None,
    narrow: bool = False,
) -> str:
    """The plot of :func:`history_plot` for these (version, quoted ε̃, game, interval, time
    stored, null threshold, role) points, one position per report in the order stored, a few
    labelled with their version and date (:func:`history_ticks`; cached: a page that reloads
    while an audit runs draws it once). Each report's grey bar is what reads like no leak in
    that run (up to its null's threshold); points are never joined. ``narrow``: 4.4 × 4.4
    inches (484 px, read at ~360 px on a phone) instead of 7.2 × 3.6."""
    import textwrap

    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    def words(text: str) -> str:
        return textwrap.fill(text, 44) if narrow else text

    with matplotlib.rc_context({"font.size": 11, "legend.fontsize": 10}):
        figure = Figure(figsize=(4.4, 4.4) if narrow else (7.2, 3.6), dpi=110, layout="constrained")
        axes = figure.add_subplot()
        order = list(range(1, len(points) + 1))
        bands = [(x, p[5]) for x, p in zip(order, points, strict=True) if p[5] is not None]
        if bands:
            null = words("reads like no leak in that run (null)")
            axes.bar([x for x, _ in bands], [max(0.0, t) for _, t in bands], width=0.5,
                     color="#dddddd", label=null)  # fmt: skip
        for role in ("target", "control"):
            for game, (marker, colour, label) in GAME_MARKERS.items():
                drawn = [
                    (x, p)
                    for x, p in zip(order, points, strict=True)
                    if p[2] == game and p[1] is not None and p[6] == role
                ]
                if not drawn:
                    continue
                xs = [x for x, _ in drawn]
                ys = [cast(float, p[1]) for _, p in drawn]  # not None (drawn)
                # a bootstrap interval need not hold its own figure: bars never go below 0
                low = [max(0.0, p[1] - p[3][0]) if p[3] else 0.0 for _, p in drawn]
                high = [max(0.0, p[3][1] - p[1]) if p[3] else 0.0 for _, p in drawn]
                style: dict[str, Any] = (
                    {"color": colour, "label": words(f"ε̃ quoted, {label}, with its interval")}
                    if role == "target"
                    else {"color": "#6b6b6b", "markerfacecolor": "white",
                          "label": words(f"your control's ε̃ (never saw these members), {label}")}
                )  # fmt: skip
                axes.errorbar(xs, ys, yerr=[low, high], fmt=marker, capsize=4, markersize=7,
                              linestyle="none", **style)  # fmt: skip
        if claimed is not None:
            axes.axhline(claimed, color="#b42318", ls="--", label=f"claimed ε = {claimed:.3g}")
        shown = [v for p in points for v in (p[1], p[5], *(p[3] or ())) if v is not None]
        highest = min(max([0.2, *shown, *([claimed] if claimed is not None else [])]), 1e6)
        axes.set_ylim(0, highest * 1.3)
        axes.set_xlabel(
            "report: version, date (UTC)"
            if narrow
            else "report, in the order stored: version, date (UTC)"
        )
        axes.set_ylabel("ε̃ quoted (nats)")
        axes.yaxis.set_major_locator(MaxNLocator(5 if narrow else 6))
        ticks = history_ticks([(p[0], p[4]) for p in points], HISTORY_TICKS[narrow])
        axes.set_xticks([x for x, _ in ticks], [label for _, label in ticks])
        axes.set_xlim(0.5, len(order) + 0.5)
        axes.legend(loc="lower left", bbox_to_anchor=(0, 1.01), frameon=False,
                    fontsize=10 if narrow else "small")  # fmt: skip
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def history_rows(
    lines: list[dict[str, Any]],
    groups: dict[str, str],
    pooled: dict[str, dict[str, Any] | None],
) -> list[dict[str, Any]]:
    """A model's report table, newest first: one row per report, except that the reports of
    one group of repeats are one row (``kind`` "group": its pooled verdict, or how many of
    its runs have ended), placed where its newest report is. ``groups``: audit id → group;
    ``pooled``: group → :func:`~panoramia.service.submission.repeats.repeat_summary`."""
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()
    controls = control_audit_ids(pooled)
    for line in reversed(lines):
        audit_id = line.get("audit_id") or ""
        group = groups.get(audit_id)
        if group is None:
            rows.append({"kind": "report", "line": line})
        elif audit_id in controls:
            continue  # a control's run: counted in its group's row, never a version of its own
        elif group not in placed and pooled.get(group) is not None:
            placed.add(group)
            rows.append({"kind": "group", "line": line, "group": pooled[group]})
    return rows


def control_audit_ids(pooled: dict[str, dict[str, Any] | None]) -> set[str]:
    """The audits that ran a group's control (``pooled``: group → its summary)."""
    return {a for summary in pooled.values() if summary for a in summary["control_audits"]}


def history_text(
    lines: list[dict[str, Any]], most: int = 20, controls: frozenset[str] = frozenset()
) -> str:
    """The history plot in words (its alt text): each report's version, date and quoted ε̃
    with its game and interval (her control's runs, ``controls``, said as such), the newest
    ``most``, and the claimed ε."""
    shown = []
    for line in lines[-most:]:
        quote = (line.get("verdict") or {}).get("quote") or {}
        value = number(quote.get("value"))
        if value is None:
            continue
        interval = quote.get("interval")
        spread = (
            f", interval {interval[0]:.2f}–{interval[1]:.2f}"
            if isinstance(interval, list) and len(interval) == 2 and None not in interval
            else ""
        )
        stamp = line.get("created_at")
        when = stamp.strftime("%Y-%m-%d") if stamp is not None else ""
        game = str(quote.get("game") or "").replace("_", "-")
        role = " (your control)" if (line.get("audit_id") or "") in controls else ""
        shown.append(f"version {line.get('version')}{role} {when}: {value:.2f} ({game}{spread})")
    claimed = [line["claimed_epsilon"] for line in lines if line.get("claimed_epsilon") is not None]
    text = "Quoted ε̃ of each report, oldest first: " + "; ".join(shown or ["none"]) + "."
    if claimed:
        text += f" Claimed ε: {claimed[-1]:.3g} (dashed line)."
    return text


def _form(body: bytes) -> dict[str, str]:
    """An urlencoded form's fields (the first value of each); {} for anything else."""
    if len(body) > MAX_FORM_BYTES:
        return {}
    try:
        fields = parse_qs(body.decode("ascii"), max_num_fields=10)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {name: values[0] for name, values in fields.items()}


def _signed_out_since(principal: Principal, issued: float) -> bool:
    """Whether the contributor signed out after this session's sign-in (Unix seconds)."""
    after = principal.sessions_after
    return after is not None and issued <= after.timestamp()


def _valid(pattern: str, value: str, longest: int) -> bool:
    return len(value) <= longest and re.fullmatch(pattern, value) is not None


def _same_origin(request: Request) -> bool:
    """False when the browser says the form came from elsewhere: an ``Origin`` other than
    this server's (``null`` included) or a ``Sec-Fetch-Site`` other than ``same-origin``."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("origin")
    return origin is None or origin == f"{request.url.scheme}://{request.url.netloc}"


class _Pages:
    """The console's page maker: ``page(request, template, status, **context)`` renders one of
    its templates with :data:`PAGE_HEADERS`; :meth:`not_found` is its 404 page."""

    def __init__(self, templates: Environment) -> None:
        self.templates = templates

    def __call__(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        context.setdefault("principal", None)
        context.setdefault("refresh", None)
        html = self.templates.get_template(template).render(request=request, **context)
        return HTMLResponse(html, status, headers=PAGE_HEADERS)

    def not_found(
        self, request: Request, session: tuple[Principal, str] | None, what: str
    ) -> HTMLResponse:
        """The 404 page for ``what`` (signed in with ``session``, or not)."""
        principal, csrf = session or (None, "")
        return self(request, "not_found.html", 404, principal=principal, csrf=csrf, what=what)


def _signed_in(store: ReportStore, key: bytes) -> SignedIn:
    """The dependency of a signed-in page: sessions sealed with ``key``, checked in ``store``."""

    async def signed_in(request: Request) -> tuple[Principal, str]:
        """The principal and the forms' CSRF token of a valid session; else NotSignedIn."""
        cookie = request.cookies.get(sessions.SESSION_COOKIE)
        found = sessions.read_session(key, cookie)
        principal = None
        if found is not None:
            principal = await run_in_threadpool(store.authenticate_digest, found[0])
        if (
            principal is None
            or principal.is_worker  # a worker's credential never signs in to the console
            or _signed_out_since(principal, found[1])  # type: ignore[index]
        ):
            raise NotSignedIn
        return principal, sessions.csrf_token(key, cookie or "")

    return signed_in


def _secure(request: Request) -> bool:
    """Whether the request came over HTTPS (its cookies are then sent only over HTTPS)."""
    return request.url.scheme == "https"


def _form_is_genuine(request: Request, csrf: str, sent: str | None) -> bool:
    """Whether a form came from this origin with the session's CSRF token ``csrf``."""
    return _same_origin(request) and sessions.csrf_matches(csrf, sent)


def console_router(
    settings: ServiceSettings,
    store: ReportStore,
    *,
    report_policy: str,
    rate_limit: Callable[[Callable], Callable],
    limit_by: Callable[[Callable[[Request], str]], Callable[[Callable], Callable]],
    checks: CheckPool,
    queue: Queue,
) -> APIRouter:
    """The console's routes; ``report_policy`` is the CSP of stored report pages (the API's),
    ``rate_limit`` the limiter's decorator for the sign-in form, ``limit_by(key)`` the
    API's rate limit counted by ``key(request)`` (her forms), ``checks`` the pool uploads'
    checks run in, ``queue`` where the audit form's audits go."""
    router = APIRouter(prefix="/console", include_in_schema=False)
    page = _Pages(_templates())
    key = sessions.session_key(settings.home)
    signed_in = _signed_in(store, key)

    def signed_in_key(request: Request) -> str:
        """Her forms' rate-limit bucket: the API's for her token, else the address's."""
        found = sessions.read_session(key, request.cookies.get(sessions.SESSION_COOKIE))
        return "token:" + found[0] if found else "address:" + (request.client or ("-",))[0]

    forms = FormNeeds(settings, store, page, signed_in, _form_is_genuine, limit_by(signed_in_key))
    add_upload_pages(router, forms, checks)
    add_audit_pages(router, forms, queue, REFRESH_S)
    add_shared_pages(router, forms)
    add_sign_in_pages(router, store, key, page=page, rate_limit=rate_limit)
    add_sign_out(router, store, page=page, signed_in=signed_in)
    add_model_pages(router, store, page=page, signed_in=signed_in)
    add_model_deletion(
        router, settings, store, page=page, signed_in=signed_in,
        rate_limit=limit_by(signed_in_key),
    )  # fmt: skip
    add_report_pages(router, store, page=page, signed_in=signed_in, report_policy=report_policy)
    add_audit_page(router, store, page=page, signed_in=signed_in)
    add_other_pages(router, page=page)
    return router


def add_sign_in_pages(
    router: APIRouter,
    store: ReportStore,
    key: bytes,
    *,
    page: _Pages,
    rate_limit: Callable[[Callable], Callable],
) -> None:
    """Add ``/console`` (to her models or the sign-in page) and ``/console/login`` (GET: the
    form; POST: sign in, held to ``rate_limit``) to ``router``; sessions are sealed with
    ``key``."""

    @router.get("")
    @router.get("/")
    async def home(request: Request) -> Response:
        cookie = request.cookies.get(sessions.SESSION_COOKIE)
        target = "/console/models" if sessions.session_digest(key, cookie) else "/console/login"
        return RedirectResponse(target, 303)

    @router.get("/login")
    def login_form(request: Request, failed: str | None = None) -> Response:
        nonce = secrets.token_urlsafe(24)
        message = (
            "That token is unknown, revoked or expired." if failed == "token"
            else "The form expired; sign in again." if failed == "form" else None
        )  # fmt: skip
        response = page(request, "login.html", 401 if failed else 200, csrf=nonce, message=message)
        response.set_cookie(
            sessions.LOGIN_CSRF_COOKIE, nonce, max_age=3600, path="/console",
            httponly=True, samesite="strict", secure=_secure(request),
        )  # fmt: skip
        return response

    @router.post("/login")
    @rate_limit
    async def login(request: Request) -> Response:
        fields = _form(await request.body())
        expected = request.cookies.get(sessions.LOGIN_CSRF_COOKIE)
        if (
            not _same_origin(request)
            or not expected
            or not sessions.csrf_matches(expected, fields.get("csrf"))
        ):
            return RedirectResponse("/console/login?failed=form", 303)
        token = fields.get("token", "").strip()
        principal = None
        if 0 < len(token) <= 200:
            principal = await run_in_threadpool(store.authenticate, token)
        if principal is None or principal.is_worker:
            return RedirectResponse("/console/login?failed=token", 303)
        response = RedirectResponse("/console/models", 303)
        response.set_cookie(
            sessions.SESSION_COOKIE, sessions.new_session(key, hash_token(token)),
            max_age=sessions.SESSION_S, path="/console", httponly=True, samesite="strict",
            secure=_secure(request),
        )  # fmt: skip
        response.delete_cookie(sessions.LOGIN_CSRF_COOKIE, path="/console")
        return response


def add_sign_out(
    router: APIRouter, store: ReportStore, *, page: _Pages, signed_in: SignedIn
) -> None:
    """Add ``/console/logout`` (POST: every session of hers ends) to ``router``."""
    Session = Annotated[tuple[Principal, str], Depends(signed_in)]

    @router.post("/logout")
    async def logout(request: Request, session: Session) -> Response:
        fields = _form(await request.body())
        if not _same_origin(request) or not sessions.csrf_matches(session[1], fields.get("csrf")):
            principal, csrf = session
            return page(request, "not_found.html", 403, principal=principal, csrf=csrf, what="form")
        await run_in_threadpool(store.end_sessions, session[0])
        response = RedirectResponse("/console/login", 303)
        response.delete_cookie(sessions.SESSION_COOKIE, path="/console")
        return response


def add_model_pages(
    router: APIRouter, store: ReportStore, *, page: _Pages, signed_in: SignedIn
) -> None:
    """Add ``/console/models`` (her models, a page at a time, with what a deletion removed)
    and ``/console/models/{name}`` (a model's history, plot and audits) to ``router``."""
    Session = Annotated[tuple[Principal, str], Depends(signed_in)]

    @router.get("/models")
    def models(
        request: Request,
        session: Session,
        requested: PageNumber = None,
        deleted: Annotated[str | None, Query(max_length=100)] = None,
        versions: Annotated[str | None, Query(max_length=2000)] = None,
        reports: Annotated[str | None, Query(max_length=12)] = None,
        audits: Annotated[str | None, Query(max_length=12)] = None,
    ) -> Response:
        principal, csrf = session
        shown = page_number(requested)
        found = model_rows(store, principal, shown)
        said = _deletion_said(deleted, versions, reports, audits)
        return page(
            request,
            "models.html",
            principal=principal,
            csrf=csrf,
            models=found,
            page_number=shown,
            more=len(found) == MODELS_PER_PAGE,
            deleted=said,
        )

    @router.get("/models/{name}")
    def model(
        request: Request,
        session: Session,
        name: str,
        follow: Follow = None,
    ) -> Response:
        principal, csrf = session
        if not _valid(NAME_PATTERN, name, 100):
            return page.not_found(request, session, "model")
        reports, audits = store.model_history(principal, name, limit=MAX_HISTORY)
        if not reports and not audits:
            return page.not_found(request, session, "model")
        lines = [report_line(report) for report in reversed(reports)]  # oldest first
        audited, newest = store.latest_reports(principal, name)
        shown = audited or newest  # the service's latest; with only uploads, the newest
        latest = report_line(shown) if shown else None
        newer_upload = report_line(newest) if newest and shown and newest.id != shown.id else None
        active = any(audit.status in ACTIVE for audit in audits)
        groups = {a.id: a.repeat_group for a in audits if a.repeat_group}
        pooled = {group: repeat_summary(store, principal, group) for group in set(groups.values())}
        controls = control_audit_ids(pooled)
        plotted = frozenset(controls)
        return page(
            request, "model.html", principal=principal, csrf=csrf, name=name, lines=lines,
            rows=history_rows(lines, groups, pooled), latest=latest, newer_upload=newer_upload,
            newest=lines[-1] if lines else None,
            latest_group=pooled.get(groups.get(latest["audit_id"] or "", "")) if latest else None,
            audits=audits, plot=history_plot(lines, plotted),
            plot_narrow=history_plot(lines, plotted, narrow=True),
            plot_text=history_text(lines, controls=plotted),
            words=WORDS, refresh=REFRESH_S if active and follow == "1" else None,
            following=follow == "1", refresh_s=REFRESH_S,
            failed=any(a.status == "failed" for a in audits), active=active,
            owned=any(a.contributor_id == principal.contributor_id for a in audits)
            or any(r.contributor_id == principal.contributor_id for r in reports),
        )  # fmt: skip


def add_model_deletion(
    router: APIRouter,
    settings: ServiceSettings,
    store: ReportStore,
    *,
    page: _Pages,
    signed_in: SignedIn,
    rate_limit: Callable[[Callable], Callable],
) -> None:
    """Add ``/console/models/{name}/delete`` (POST, held to ``rate_limit``: her model entry,
    its reports, audits and run folders, then back to her models) to ``router``."""
    Session = Annotated[tuple[Principal, str], Depends(signed_in)]

    @router.post("/models/{name}/delete")
    @rate_limit
    async def delete_model(request: Request, session: Session, name: str) -> Response:
        principal, csrf = session
        fields = _form(await request.body())
        if not _same_origin(request) or not sessions.csrf_matches(csrf, fields.get("csrf")):
            return page(request, "not_found.html", 403, principal=principal, csrf=csrf, what="form")
        if not _valid(NAME_PATTERN, name, 100):
            return page.not_found(request, session, "model")
        if fields.get("confirm") != "yes":  # the page's box, ticked: a deletion is never one click
            return page(request, "not_found.html", 422, principal=principal, csrf=csrf,
                        what="model", problem=f"Nothing was deleted: tick “I understand” on "
                        f"the page of {name} to delete it.")  # fmt: skip
        try:
            deleted = await run_in_threadpool(store.delete_model, principal, name, None)
        except ModelInUse as error:
            return page(request, "not_found.html", 409, principal=principal, csrf=csrf,
                        what="model", problem=str(error))  # fmt: skip
        if deleted is None:
            return page.not_found(request, session, "model")
        await run_in_threadpool(remove_run_folders, settings, deleted.audits)
        said = urlencode({"deleted": name, "versions": ",".join(deleted.versions),
                          "reports": deleted.reports, "audits": len(deleted.audits)})  # fmt: skip
        return RedirectResponse(f"/console/models?{said}", 303)  # a reload does not re-post


def add_report_pages(
    router: APIRouter,
    store: ReportStore,
    *,
    page: _Pages,
    signed_in: SignedIn,
    report_policy: str,
) -> None:
    """Add ``/console/reports/{id}`` (a report's figures) and ``/console/reports/{id}/page``
    (its stored page, under ``report_policy``) to ``router``."""
    Session = Annotated[tuple[Principal, str], Depends(signed_in)]

    @router.get("/reports/{report_id}")
    def report(
        request: Request,
        session: Session,
        report_id: str,
    ) -> Response:
        principal, csrf = session
        if not _valid(IDENTIFIER_PATTERN, report_id, 36):
            return page.not_found(request, session, "report")
        found = store.get_report(principal, report_id, with_document=False)
        if found is None:
            return page.not_found(request, session, "report")
        has_page = store.has_report_page(principal, report_id)
        return page(
            request, "report.html", principal=principal, csrf=csrf, report=found,
            line=report_line(found), has_page=has_page,
            shows_examples=_shows_examples(found.modality),
        )  # fmt: skip

    @router.get("/reports/{report_id}/page")
    def report_page(
        request: Request,
        session: Session,
        report_id: str,
    ) -> Response:
        principal = session[0]
        if not _valid(IDENTIFIER_PATTERN, report_id, 36):
            return page.not_found(request, session, "report page")
        html = store.get_report_html(principal, report_id)
        if html is None:
            return page.not_found(request, session, "report page")
        headers = PAGE_HEADERS | {"Content-Security-Policy": report_policy}
        return HTMLResponse(html, headers=headers)


def add_audit_page(
    router: APIRouter, store: ReportStore, *, page: _Pages, signed_in: SignedIn
) -> None:
    """Add ``/console/audits/{id}`` (an audit, with its report's line once there is one) to
    ``router``."""
    Session = Annotated[tuple[Principal, str], Depends(signed_in)]

    @router.get("/audits/{audit_id}")
    def audit(
        request: Request,
        session: Session,
        audit_id: str,
        follow: Follow = None,
    ) -> Response:
        principal, csrf = session
        if not _valid(IDENTIFIER_PATTERN, audit_id, 36):
            return page.not_found(request, session, "audit")
        found: Audit | None = store.get_audit(principal, audit_id)
        if found is None:
            return page.not_found(request, session, "audit")
        report_id = store.report_of_audit(found.id)
        report = store.get_report(principal, report_id, with_document=False) if report_id else None
        return page(
            request, "audit.html", principal=principal, csrf=csrf, audit=found,
            report_id=report_id,
            progress=progress_words(
                found.progress if isinstance(found.progress, dict) else {}, found.status,
                as_utc(found.started_at) if found.started_at else None, utcnow(),
            ),
            line=report_line(report) if report is not None else None,
            retry=retry_link(found),
            refresh=REFRESH_S if found.status in ACTIVE and follow == "1" else None,
            following=follow == "1", refresh_s=REFRESH_S,
        )  # fmt: skip


def add_other_pages(router: APIRouter, *, page: _Pages) -> None:
    """Add ``/console/static/console.css`` and, last, every other console address (the 404
    page) to ``router``."""

    @router.get("/static/console.css")
    def stylesheet() -> Response:
        headers = {"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"}
        return FileResponse(STATIC / "console.css", media_type="text/css", headers=headers)

    @router.get("/{rest:path}")
    def elsewhere(request: Request, rest: str) -> Response:
        """Any other console address: the same 404 page (signed in or not)."""
        return page.not_found(request, None, "page")


def not_signed_in_redirect(_request: Request, _error: NotSignedIn) -> Response:
    """Any console page without a valid session: to the sign-in page (no detail given)."""
    response = RedirectResponse("/console/login", 303)
    response.headers["Cache-Control"] = "no-store"
    return response


def _shows_examples(name: str) -> bool:
    """Whether a report of modality ``name`` shows example inputs (its plug-in says)."""
    entry = MODALITIES.get(name)
    return bool(entry and entry.shows_examples)
