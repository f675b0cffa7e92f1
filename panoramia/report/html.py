"""A self-contained HTML report page, a pure function of ``report.json`` and its charts
(:mod:`panoramia.report.page_parts`, drawn by :mod:`panoramia.report.charts` and embedded as
PNG data URIs)."""

from __future__ import annotations

import html
import math
from collections.abc import Callable

from panoramia.measure.jsonable import JSONDict
from panoramia.report.attacker import percent_share
from panoramia.report.page_head import page_heading, page_title
from panoramia.report.page_parts import ChartPart, PageParts, RemovedChart
from panoramia.report.redaction import member_data, removed_note
from panoramia.report.reference_words import (
    NO_HELD_OUT,
    gave_no_held_out,
    reference_attack_reading,
)
from panoramia.report.verdict import p_text, percent
from panoramia.report.verdict_rule import finite_number

PARAGRAPH = (
    "PANORAMIA compares two classifiers on the same audit set of real members and generated "
    "non-members. The baseline never queries the audited model; its lower bound c_lb measures "
    "how well generated data can be told from real data (the generator's closeness c). The "
    "attack adds the audited model's per-example loss; its bound is {c+ε}_lb. The difference "
    "ε̃ = max(0, {c+ε}_lb − c_lb) is a measurement of leakage, <b>not a lower bound on ε</b>: "
    "the audit could not reject c-closeness of the generator for c = c_lb, and if that is "
    "tight, the model cannot be ε̃-DP. ε̃ = 0 means this audit found no leakage beyond what "
    "the baseline explains; it does not certify privacy."
)


def _unreliable_html(document: JSONDict) -> str:
    """The paper's game's c_lb = 0, named as that game's (the quoted figure may be another)."""
    reasons = document.get("unreliable") or []
    return "".join(
        f"<p class=note>The paper's one-sided game: {html.escape(reason)}</p>" for reason in reasons
    )


CLAIM_GAME_ORDER = {"attack": 0, "baseline": 1, "rmrn": 2}
"""The order the claim's checks are shown in, whatever order a store keeps their keys in."""


def _claim_html(claim: JSONDict | None) -> str:
    """The claim section (the document's ``claim``): red banner, plain statements, the key
    numbers of each game's check against the claimed curve."""
    if not isinstance(claim, dict):
        return ""
    parts = ["<h2>Declared guarantee</h2>"]
    if claim.get("banner"):
        parts.append(f"<p class=banner>{html.escape(str(claim['banner']))}</p>")
    if claim.get("note"):
        parts.append(f"<p class=note>{html.escape(str(claim['note']))}</p>")
    statements = claim.get("statements") or []
    parts.append(
        "<ul>" + "".join(f"<li>{html.escape(str(line))}</li>" for line in statements) + "</ul>"
    )
    checks = claim.get("consistency") or {}
    for name in sorted(checks, key=lambda game: (CLAIM_GAME_ORDER.get(game, 99), game)):
        check = checks[name]
        points = len(check["points"]["fpr"])
        parts.append(
            f"<p>{html.escape(str(name))}: "
            f"{'consistent' if check['consistent'] else 'VIOLATES'} "
            f"({html.escape(str(check['violations']))} of {points} points); leakage-equivalent μ "
            f"{check['leakage_equivalent_mu']:.3f}, empirical ε(1e-5) "
            f"{check['empirical_epsilon']:.3f} (not DP lower bounds with generated "
            "non-members).</p>"
        )
    return "".join(parts)


def _gdp_rows(gdp: JSONDict) -> list[tuple[str, float]]:
    """The figures on a GDP claim's scale (docs/SPEC.md §2.8): μ̃ at c_lb, RM;RN's μ_lb and
    the claimed μ, where the report has them."""
    if "mu_tilde" not in gdp:
        return []
    rows = [("μ̃ (paper's game, on a GDP claim's scale; not a lower bound on μ)",
             gdp["mu_tilde"])]  # fmt: skip
    if gdp.get("mu_tilde_max") is not None:
        rows.append(("the largest μ̃ this audit's size can show", gdp["mu_tilde_max"]))
    if gdp.get("rmrn"):
        rows.append(("RM;RN μ_lb (real non-members)", gdp["rmrn"]["mu_lb"]))
    if gdp.get("claimed_mu") is not None:
        rows.append(("claimed μ under replace-one neighbours (the game's relation)",
                     gdp["claimed_mu"]))  # fmt: skip
    return rows


def _short(text: str, limit: int = 60) -> str:
    """A chart's region name: the start of its alt text, cut at a word."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def undrawn_page(reason: str) -> str:
    """The page served where a stored report's page cannot be drawn (a bug: it was checked
    before it was stored): one line saying so; its figures stay in the report's document."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>PANORAMIA audit</title></head><body><main><p>This report's page cannot be "
        f"drawn ({html.escape(reason)}); its figures are in the report's document "
        "(report.json).</p></main></body></html>"
    )


def undrawable(document: JSONDict, parts: PageParts) -> str | None:
    """Why the page cannot be drawn from ``document`` and ``parts`` (one line), or None. The
    service renders a stored page whenever it is read, so it stores only reports that draw."""
    try:
        render_page(document, parts)
    except Exception as error:  # any figure of the document the page cannot read
        return f"its page cannot be drawn from it ({type(error).__name__}: {str(error)[:200]})"
    return None


def _showing_records(document: JSONDict, section: str, part: Callable[[], str]) -> str:
    """The page's ``part`` that shows the records of the document's ``section``, marked as
    such (:func:`~panoramia.report.redaction.member_data`); where her records were taken out
    (the section reads ``{"removed": why}``,
    :func:`~panoramia.report.redaction.document_without_records`), the note in its place."""
    held = document.get(section)
    if isinstance(held, dict) and isinstance(held.get("removed"), str):
        return removed_note(held["removed"])
    return member_data(part())


def _charts_html(charts: list[ChartPart | RemovedChart]) -> str:
    """The charts, each a keyboard-reachable region named by its alt text; where charts that
    showed her records were taken out, one note for each run of them."""
    shown: list[str] = []
    for number, chart in enumerate(charts, start=1):
        if isinstance(chart, RemovedChart):
            note = removed_note(chart.removed)
            if not shown or shown[-1] != note:
                shown.append(note)
            continue
        figure = (
            f'<figure class=chart tabindex=0 role=region aria-label="chart {number}: '
            f'{html.escape(_short(chart.alt))}"><img src="data:image/png;base64,{chart.png}" '
            f'alt="{html.escape(chart.alt)}"></figure>'
        )
        shown.append(member_data(figure, chart.member_data))
    return "".join(shown)


def render_page(document: JSONDict, parts: PageParts) -> str:
    """The report page of ``document`` (``report.json``) and its charts (``parts``), the
    answer first: the verdict, what an attacker gains, which records and groups are exposed,
    the charts that back the quoted figure, the declared guarantee; then, folded, the
    researcher's figures, the words used and the run's details. A pure function of what the
    service stores: headed by ``parts.heading`` where set (else the document's
    ``target.name``); where her records were taken out (the document's ``exposure`` and
    ``examples`` sections, the charts that showed them), a note says so in their place."""
    heading = parts.heading if parts.heading is not None else str(document["target"].get("name"))
    examples = document.get("examples")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{page_title(heading)}
<style>{STYLE}</style></head>
<body><main>{page_heading(heading)}
{_verdict_html(document)}
{attacker_html(document)}
{_showing_records(document, "exposure", lambda: exposure_html(document))}
<h2>Charts that back the figure</h2>{_charts_html(list(parts.charts))}
{_claim_html(document.get("claim"))}
<details><summary>The researcher's figures (both games, reference audits, μ̃)</summary>
{_figures_table(document)}
<h3>What ε̃ means</h3><p>{PARAGRAPH}</p></details>
{GLOSSARY}
{_showing_records(document, "examples", lambda: _examples_html(examples))}
<details class=noprint><summary>Details (target, data, timings, versions as JSON)</summary>
<pre>{html.escape(_details(document))}</pre></details>
</main></body></html>"""


def _figures_table(document: JSONDict) -> str:
    """Every figure of the run, one row each, the quoted ones first."""
    reference = document["reference_audits"]
    rows = [
        *_quoted_rows(document),
        ("paper's one-sided game: c_lb (baseline)", document["c_lb"]),
        ("paper's one-sided game: {c+ε}_lb (attack)", document["c_plus_eps_lb"]),
        ("paper's one-sided game: ε̃", document["eps_tilde"]),
    ]
    if reference["o1"]:
        o1 = reference["o1"]
        unit = " per document" if o1.get("unit") == "document" else ""
        outside = "; a figure outside the verdict" if o1.get("randomised") is False else ""
        rows.append((f"O(1) ε_lb{unit} (real non-members{outside})", o1["eps_lb"]))
        per_example = o1.get("per_example")
        if isinstance(per_example, dict):
            rows.append(("O(1) ε_lb per chunk (the rule before; a figure)", per_example["eps_lb"]))
    if reference["rmrn"]:
        rows.append(("RM;RN ε_lb (real non-members)", reference["rmrn"]["eps_lb"]))
    blind = (document.get("baseline") or {}).get("blind")
    if isinstance(blind, dict):
        for key, game in (("c_lb", "paper's one-sided game"), ("c_lb_two_sided", "two-sided game")):
            if isinstance(blind.get(key), int | float):
                rows.append(
                    (f"{game}: blind baseline c_lb (the words alone, no model)", blind[key])
                )
    fidelity = ((document.get("data") or {}).get("synthetic") or {}).get("real_vs_synthetic_auc")
    if fidelity is not None:
        rows.append(
            ("real-vs-synthetic AUC of a fixed classifier (0.5: indistinguishable)", fidelity)
        )
    two_sided = document.get("two_sided") or {}
    if "eps_tilde" in two_sided:
        rows += [
            ("two-sided game: c_lb (baseline)", two_sided["c_lb"]),
            ("two-sided game: {c+ε}_lb (attack)", two_sided["c_plus_eps_lb"]),
            ("two-sided game: ε̃", two_sided["eps_tilde"]),
        ]
        if "rmrn" in two_sided:
            rows.append(("two-sided RM;RN ε_lb (real non-members)", two_sided["rmrn"]["eps_lb"]))
    rows.extend(_gdp_rows(document.get("gdp") or {}))
    body = "".join(
        f"<tr><th scope=row>{html.escape(k)}</th>"
        f"<td>{html.escape(v if isinstance(v, str) else f'{v:.3f}')}</td></tr>"
        for k, v in rows
    )
    saturated = (
        "<p class=warn>The paper's one-sided game: a maximiser has precision 1 (saturated): its "
        "bound counts error-free guesses and sits at the ceiling for its number of guesses.</p>"
        if document["saturated"]
        else ""
    )
    return (
        f"<p>{html.escape(document['modality'])} audit, seed {html.escape(str(document['seed']))}"
        f", m = {html.escape(str(document['m']))} audit records, thresholds "
        f"{html.escape(document['thresholds'])} "
        f"(K = {html.escape(str(document['n_thresholds']))}), confidence "
        f"{html.escape(str(document['confidence']))}, created "
        f"{html.escape(str(document['created']))}.</p>"
        f"{scroll('every figure of the run')}<table><thead><tr><th scope=col>figure</th>"
        f"<th scope=col>value (nats)</th></tr></thead><tbody>{body}</tbody></table></div>"
        f"{saturated}{_unreliable_html(document)}"
    )


def odds_reading(value: float) -> str:
    """ε̃ read as odds: e^ε̃ ("about 11 times")."""
    if value < 0.005:
        return (
            "ε̃ = 0: in this audit the model adds nothing measurable to an attacker's odds "
            "beyond what the data alone gives."
        )
    factor = math.exp(value)
    shown = f"{factor:.1f}" if factor < 10 else f"{factor:.0f}"
    return (
        f"ε̃ = {value:.2f} reads as odds: the model makes an attacker's surest member guesses "
        f"up to e^{value:.2f} ≈ {shown} times as likely to be right, against wrong, as the "
        "data alone does."
    )


def _with_interval(value: object, interval: object, percent_of: bool) -> str:
    """A cell's figure with its interval in brackets where the report has one."""
    if not isinstance(value, int | float):
        return "too few records"
    shown = f"{value:.1%}" if percent_of else f"{value:.2f}"
    if isinstance(interval, list) and len(interval) == 2 and None not in interval:
        low, high = interval
        shown += f" ({low:.1%}–{high:.1%})" if percent_of else f" ({low:.2f}–{high:.2f})"
    return shown


def reference_attack_html(document: JSONDict) -> str:
    """The reference attack on her members against her held-out rows (RMIA, LiRA beside it):
    its sentence and table, which lead "What an attacker gains"; where the audit had no
    held-out rows, the one line saying what giving some would add; else nothing."""
    reading = reference_attack_reading(document)
    if reading is None:
        return f"<p class=hint>{html.escape(NO_HELD_OUT)}</p>" if gave_no_held_out(document) else ""
    attacks = [(found["name"], found) for found in reading["attacks"]]

    def cell(figures: JSONDict, key: str, fpr: str | None) -> str:
        if key == "realised":
            value = figures["realised_fpr"][fpr]
            return f"<td>{'' if value is None else f'{value:.2%}'}</td>"
        if fpr is not None:
            value, interval = figures["tpr_at_fpr"][fpr], figures["tpr_at_fpr_interval"][fpr]
        else:
            value, interval = figures["auc"], figures["auc_interval"]
        return f"<td>{html.escape(_with_interval(value, interval, fpr is not None))}</td>"

    rows = [
        ("your members caught when 1 in 100 held-out rows is wrongly flagged", "tpr", "0.01"),
        ("… the share of held-out rows it wrongly flags there, in fact", "realised", "0.01"),
        ("your members caught when 1 in 1,000 held-out rows is wrongly flagged", "tpr", "0.001"),
        ("AUC (0.5: a coin; 1: every member told apart)", "auc", None),
    ]
    body = "".join(
        f"<tr><th scope=row>{html.escape(name)}</th>"
        + "".join(cell(figures, key, fpr) for _, figures in attacks)
        + "</tr>"
        for name, key, fpr in rows
    )
    head = "".join(f"<th scope=col>{html.escape(name)}</th>" for name, _ in attacks)
    where = (
        "" if reading["randomised"] else
        "<p class=hint>Your held-out rows were not drawn at random with your members, so "
        "these rates may also reflect how your held-out rows differ from your members; they "
        "stay out of the verdict.</p>"
    )  # fmt: skip
    return (
        f"<p class=sentence>{html.escape(reading['sentence'])}</p>"
        f"{scroll('what an attacker with reference models gains on your held-out rows')}"
        "<table><thead><tr><th scope=col>on your members against your held-out rows</th>"
        f"{head}</tr></thead><tbody>{body}</tbody></table></div>{where}"
    )


def attacker_html(document: JSONDict) -> str:
    """What an attacker gains: the reference attack on her own rows first where it ran
    (:func:`reference_attack_html`), then the game's member-side sentence (can someone find
    her rows among generated ones), the sentence, the odds, and the attack beside the
    baseline with intervals."""
    section = document.get("attacker")
    if not section:  # a document without the game's terms: her rows' reference attack alone
        if reference_attack_reading(document) is None:
            return ""
        return (
            "<section aria-labelledby=attacker><h2 id=attacker>What an attacker gains</h2>"
            f"{reference_attack_html(document)}</section>"
        )
    member_side = section.get("member_side")
    found = document.get("verdict") or {}
    quote = (found.get("quote") or {}).get("value")
    stated = "odds" in str(found.get("sentence")) or "counts" in str(found.get("sentence"))
    odds = (  # a report without the member-side sentence (its odds): the quote as odds
        f"<p>{html.escape(odds_reading(quote))}</p>"
        if isinstance(quote, float | int) and not stated and not member_side
        else ""
    )
    attack, baseline = section["attack"], section["baseline"]
    level = section.get("interval_level")

    def cell(side: JSONDict, key: str, fpr: str | None = None, percent_of: bool = False) -> str:
        if fpr is not None:
            value = (side.get("tpr_at_fpr") or {}).get(fpr)
            interval = (side.get("tpr_at_fpr_interval") or {}).get(fpr)
        else:
            value, interval = side.get(key), side.get(f"{key}_interval")
        return f"<td>{html.escape(_with_interval(value, interval, percent_of))}</td>"

    flagged = section["flagged_fraction"]
    rows = [
        ("members caught when 1 in 100 non-members is wrongly flagged (TPR at 1 % FPR)",
         "tpr", "0.01", True),
        ("members caught when 1 in 1,000 non-members is wrongly flagged (TPR at 0.1 % FPR)",
         "tpr", "0.001", True),
        ("AUC (0.5: a coin; 1: every member told apart)", "auc", None, False),
        ("advantage: the most TPR − FPR (0: none)", "advantage", None, False),
        (f"right among the {percent_share(flagged)} of records each is surest about",
         "top_precision", None, True),
    ]  # fmt: skip
    body = "".join(
        f"<tr><th scope=row>{html.escape(name)}</th>{cell(attack, key, fpr, pct)}"
        f"{cell(baseline, key, fpr, pct)}</tr>"
        for name, key, fpr, pct in rows
    )
    lead = f"<p class=sentence>{html.escape(member_side)}</p>" if member_side else ""
    note = (
        f"<p class=hint>In brackets: this run's {level:.0%} interval (the audit's records "
        "drawn again). 'Too few records': fewer non-members than that rate needs to flag even "
        "one.</p>"
        if isinstance(level, float)
        else ""
    )
    return (
        "<section aria-labelledby=attacker><h2 id=attacker>What an attacker gains</h2>"
        f"{reference_attack_html(document)}"
        f"{lead}<p>{html.escape(section['sentence'])}</p>{odds}"
        f"{scroll('what an attacker gains, with and without the model')}<table><thead><tr>"
        "<th scope=col>on this audit's records (members vs generated non-members)</th>"
        "<th scope=col>with the model</th><th scope=col>without it (baseline)</th></tr>"
        f"</thead><tbody>{body}</tbody></table></div>{note}</section>"
    )


def detectable_words(groups: list[JSONDict], statistic: str = "share") -> str:
    """What this audit's group test could have seen: the smallest excess a tested group needed
    to stand out (``share``: percentage points of its members flagged; ``rank``: points of
    its AUC against the non-members), over the groups' sizes (or "small differences may go
    undetected" for a document without it)."""
    found = [
        (g["detectable"], g.get("members"))
        for g in groups
        if isinstance(g.get("detectable"), float | int) and g.get("p") is not None
    ]
    if not found:
        return "small differences may go undetected."
    smallest = min(found, key=lambda pair: pair[0])
    largest = max(found, key=lambda pair: pair[0])
    span = (
        f"{100 * smallest[0]:.0f} (a group of {smallest[1]}) to {100 * largest[0]:.0f} (a group "
        f"of {largest[1]})"
    )
    if statistic == "rank":
        return (
            f"at this audit's size a group stands out only where the attack ranks its members "
            f"above the generated non-members at least {span} percentage points more often "
            f"than the baseline does (AUC): smaller differences go undetected; a larger audit "
            f"set sees more."
        )
    return (
        f"at this audit's size a group stands out only where the attack flags at least "
        f"{span} percentage points more of its members than the baseline does: "
        f"smaller differences go undetected; a larger audit set sees more."
    )


def _groups_lead(section: JSONDict, groups: list[JSONDict], document: JSONDict) -> str:
    """The exposure section's first line: which groups stand out, or that none does."""
    if not section.get("tested"):
        return (
            "Groups were not tested against chance in this run (its baseline does not mirror "
            "the attack): the shares below are point estimates."
        )
    standing = [g for g in groups if g.get("stands_out")]
    rate = percent(float(section.get("false_alarm_rate") or 0.05))
    found = got if isinstance(got := document.get("verdict"), dict) else {}
    if found.get("level") == "inconclusive" and not standing:
        return (
            "This run could not have called a leak (see the verdict), so it cannot show a "
            "group standing out either; the shares below are what it read."
        )
    if not standing:
        return (
            "No group stands out: no group is shown to be flagged more by the attack than "
            "the data alone (the baseline) explains, beyond what chance gives one of the "
            f"groups shown (false alarms over all groups held to {rate}); "
            f"{detectable_words(groups, str(section.get('statistic') or 'share'))}"
        )
    names = ", ".join(f"{g['column']} = {g['value']}" for g in standing[:5])
    how = (
        "ranks their members above the generated non-members more often (AUC)"
        if section.get("statistic") == "rank"
        else "flags their members more"
    )
    more = f" and {len(standing) - 5} more" if len(standing) > 5 else ""
    return (
        f"{len(standing)} group{'s stand' if len(standing) > 1 else ' stands'} out: {names}"
        f"{more}. The attack {how} than the data alone does, beyond chance (false alarms over "
        f"all groups held to {rate})."
    )


def exposure_html(document: JSONDict) -> str:
    """Which of the contributor's records and groups the attack exposes most (report section
    ``exposure``, where the audit recorded one): the groups tested against chance first."""
    section = document.get("exposure")
    if not section:
        return ""
    parts = ["<section aria-labelledby=exposure><h2 id=exposure>Which of your records and "
             "groups are exposed</h2>"]  # fmt: skip
    groups = section.get("groups") or []
    if groups:
        lead = _groups_lead(section, groups, document)
        parts += [f"<p class=sentence>{html.escape(lead)}</p>", _groups_table_html(section)]
    parts.append(reference_groups_html(section))
    unknown = section.get("unknown_columns") or []
    if unknown:
        parts.append(
            "<p class=warn>Not columns of your data, so not grouped: "
            f"{html.escape(', '.join(unknown))}.</p>"
        )
    parts.append(_records_html(section, document))
    return "".join(parts) + "</section>"


def _count_text(value: object) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10**12:
        return ""
    return f"{value:,}"


def reference_groups_html(section: JSONDict) -> str:
    """The reference attack by group (``exposure.reference_groups``): which groups of her
    records an attacker with reference models picks out among her held-out rows beyond
    chance, family-wise over the groups, with each group's AUC; nothing where absent. Read
    as untrusted: finite numbers only, a group stands out only where its own p is at most
    the section's rate, names cut at 80 characters."""
    found = section.get("reference_groups")
    groups = found.get("groups") if isinstance(found, dict) else None
    if not isinstance(found, dict) or not isinstance(groups, list) or not groups:
        return ""
    tested = found.get("tested") is True
    rate = finite_number(found.get("false_alarm_rate"))
    rate = rate if rate is not None and 0 < rate < 1 else 0.05
    rows, standing = [], []
    for group in groups[:60]:
        if not isinstance(group, dict):
            continue
        name = f"{_shown_text(group.get('column'))} = {_shown_text(group.get('value'))}"
        auc, p_value = finite_number(group.get("auc")), finite_number(group.get("p"))
        auc = auc if auc is not None and 0 <= auc <= 1 else None
        p_value = p_value if p_value is not None and 0 < p_value <= 1 else None
        out = tested and p_value is not None and p_value <= rate
        if out:
            standing.append(name)
        verdict_cell = (
            "too few to test" if auc is None
            else "not tested" if not tested or p_value is None
            else f"{'yes' if out else 'no'} ({p_text(p_value)})"
        )  # fmt: skip
        rows.append(
            f"<tr><th scope=row>{html.escape(name)}</th>"
            f"<td>{_count_text(group.get('members'))}</td>"
            f"<td>{_count_text(group.get('nonmembers'))}</td>"
            f"<td>{'' if auc is None else f'{auc:.2f}'}</td><td>{verdict_cell}</td></tr>"
        )
    if not tested:
        lead = ("With reference models, by group (your held-out rows were not drawn at random "
                "with your members, so no group is tested):")  # fmt: skip
    elif standing:
        lead = (f"With reference models, an attacker picks out your records among your "
                f"held-out rows beyond chance in {len(standing)} of the groups: "
                f"{', '.join(standing[:8])}"
                f"{f' and {len(standing) - 8} more' if len(standing) > 8 else ''}. Where the "
                "whole model leaks, most groups do; the groups above say which ones the model "
                "exposes more than the data alone does.")  # fmt: skip
    else:
        lead = ("With reference models, no group of your records is picked out among your "
                "held-out rows beyond chance.")  # fmt: skip
    return (
        f"<p>{html.escape(lead)}</p>"
        f"{scroll('groups an attacker with reference models picks out')}<table><thead><tr>"
        "<th scope=col>group</th><th scope=col>your members scored</th>"
        "<th scope=col>your held-out rows</th><th scope=col>AUC (0.5: none)</th>"
        "<th scope=col>picked out beyond chance?</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _shown_text(value: object) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _stands_out_cell(group: JSONDict) -> str:
    """ "yes (p = …)", "no (p = …)" or "not tested"."""
    p_value = group.get("p")
    if group["small"] or p_value is None:
        return "not tested"
    return f"{'yes' if group.get('stands_out') else 'no'} ({p_text(p_value)})"


def _groups_table_html(section: JSONDict) -> str:
    """What the groups' figures mean, then the table: each group's reading with the model and
    without it, the deciding statistic's columns first (``rank``: the AUC against the
    generated non-members; ``share``: the share flagged at the section's rate)."""
    rate = section.get("fpr")
    ranked = section.get("statistic") == "rank"
    share_words = (
        f"the share of each group's audited members flagged when {rate:.0%} of the generated "
        "non-members are wrongly flagged, with the model and without it (the baseline, each "
        "at its own threshold), with this run's interval"
    )
    rank_words = (
        "how often the attack scores a group's members above the generated non-members (its "
        "AUC, 50 % a coin's), with the model and without it (the baseline, on the same "
        "records), over every rate at once"
    )
    said = (
        f"A group stands out here by its rank: {rank_words}. Beside it, {share_words}."
        if ranked
        else f"{share_words[0].upper()}{share_words[1:]}."
    )
    intro = (
        f"<p>{html.escape(said)} Groups with fewer than "
        f"{html.escape(str(section['min_group']))} members are "
        f"listed, not tested. Over all {section['members']:,} audited members: "
        f"{(section.get('overall_tpr') or 0):.1%} flagged where {rate:.0%} of this audit set's "
        "own generated non-members are.</p>"
    )

    def cells(g: JSONDict) -> list[str]:
        if g["small"]:
            return ["too few to test", ""] + (["", ""] if ranked else [])
        shares = [_with_interval(g.get("share", g.get("tpr")), g.get("interval"), True),
                  _with_interval(g.get("baseline_share"), None, True)]  # fmt: skip
        if not ranked:
            return shares
        return [_with_interval(g.get("auc"), None, True),
                _with_interval(g.get("baseline_auc"), None, True), *shares]  # fmt: skip

    heads = ["flagged with the model", "without it"]
    if ranked:
        heads = ["AUC with the model", "AUC without it",
                 f"flagged at {rate:.0%} with the model", "flagged without it"]  # fmt: skip
    head = "".join(f"<th scope=col>{html.escape(h)}</th>" for h in heads)
    body = "".join(
        f"<tr><th scope=row>{html.escape(g['column'])} = {html.escape(str(g['value']))}</th>"
        f"<td>{html.escape(_stands_out_cell(g))}</td><td>{int(g['members']):,}</td>"
        + "".join(f"<td>{html.escape(c)}</td>" for c in cells(g))
        + "</tr>"
        for g in section.get("groups") or []
    )
    return (
        f"{intro}{scroll('groups of your members')}<table><thead><tr><th scope=col>group</th>"
        "<th scope=col>stands out (p adjusted over all groups)</th>"
        f"<th scope=col>audited members</th>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def _records_html(section: JSONDict, document: JSONDict) -> str:
    """The members the attack is surest about: the contributor's own rows, what they mean on
    a run that calls no leak, and the columns left out."""
    records = section.get("records") or []
    if not records:
        return ""
    # the columns in the table's order as the audit wrote it (a stored document's keys may
    # come back in another order: PostgreSQL's JSONB keeps none)
    values = records[0]["values"]
    shown = (section.get("record_columns") or {}).get("shown")
    columns = list(values)
    if isinstance(shown, list) and sorted(map(str, shown)) == sorted(values):
        columns = [str(c) for c in shown]
    head = "".join(f"<th scope=col>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        f"<tr><th scope=row>{int(r['rank'])}</th><td>{r['score']:.3f}</td>"
        + "".join(f"<td>{html.escape(str(r['values'][c]))}</td>" for c in columns)
        + "</tr>"
        for r in records
    )
    found = document.get("verdict") or {}
    meaning = (
        "This run calls no leak, so these records are not shown to be more exposed than "
        "the ones the baseline (no model) is surest about: they are where the attack "
        "would look first."
        if found and not found.get("detected")
        else "These are the records an attacker with the model would find first."
    )
    hidden = (section.get("record_columns") or {}).get("hidden") or []
    hidden_note = (
        f" Columns not shown: {html.escape(', '.join(map(str, hidden)))}." if hidden else ""
    )
    return (
        f"<h3>The {len(records)} members the attack is surest about</h3><p>Your own rows "
        "(this report is yours alone), with the attack's score (1: surely a member). "
        f"{html.escape(meaning)}{hidden_note}</p>"
        f"{scroll('the members the attack is surest about')}<table><thead><tr>"
        f"<th scope=col>rank</th><th scope=col>score</th>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


READING = (
    "ε̃ is what the model adds, beyond the data alone, to how surely an attacker tells its "
    "training records from others (in nats: log-odds; e^ε̃ is the odds' factor, except where "
    "the figure is saturated and counts error-free calls). The two-sided game lets the "
    'attacker call records members or non-members. <a href="#words">Words on this page</a>.'
)
"""One line under the quoted figure: how to read it, and where the words are explained."""


def scroll(label: str) -> str:
    """A wide table's scroll box: reachable by keyboard, named after its table for screen
    readers (each region's name is its own: axe ``landmark-unique``)."""
    return f'<div class=scroll tabindex=0 role=region aria-label="{html.escape(label)}">'


STYLE = """
body{font-family:system-ui,sans-serif;line-height:1.45;margin:0;color:#1a1a1a;}
main{max-width:1100px;margin:0 auto;padding:1em;}
th,td{padding:4px 12px;text-align:left;vertical-align:top;}
thead th{border-bottom:2px solid #555;} tbody th{font-weight:normal;}
table{border-collapse:collapse;} tbody tr{border-bottom:1px solid #ddd;}
.scroll{overflow-x:auto;max-width:100%;}
.warn{color:#8a5300;}
.banner{background:#b42318;color:#fff;padding:10px;font-weight:bold;}
.note{background:#fff4d6;padding:8px;}
.plain{font-size:1.15em;margin:.6em 0;}
.verdict{border-left:8px solid #5b6270;padding:4px 16px;margin:1em 0;background:#f5f5f5;}
.verdict h2{margin:.3em 0;}
.verdict.clear_leak,.verdict.leak_beyond_claim{border-color:#7a1010;}
.verdict.leak_detected{border-color:#b42318;} .verdict.borderline{border-color:#8a5300;}
.verdict.no_leak_detected{border-color:#2f7d4f;} .verdict.inconclusive{border-color:#5b6270;}
.sentence{font-size:1.15em;} .hint{color:#4a4a4a;font-size:.95em;}
figure{margin:12px 0;} img{max-width:100%;height:auto;}
@media (max-width:600px){
  figure.chart{overflow-x:auto;} figure.chart img{max-width:none;width:640px;}
  .scroll::before{content:"scroll sideways for more \\2192";display:block;text-align:right;
    font-size:.85em;color:#4a4a4a;}
}
details{margin:1em 0;} summary{cursor:pointer;font-weight:bold;}
dt{font-weight:bold;margin-top:.5em;}
pre{white-space:pre-wrap;word-break:break-word;}
pre.chunk{background:#f4f4f4;padding:4px;}
@media print{
  body{font-size:10.5pt;} main{max-width:none;padding:0;}
  details::details-content{content-visibility:visible;display:block;}
  details>summary{list-style:none;} .noprint{display:none;}
  figure,table,.verdict{break-inside:avoid;page-break-inside:avoid;}
  h2,h3{break-after:avoid;page-break-after:avoid;}
  img{max-width:100%;max-height:24cm;}
  .scroll{overflow:visible;}
}
@page{size:A4;margin:14mm;}
"""
"""The page's style: one palette of verdict levels (the console's), ≥ 4.5 : 1 contrast, wide
tables in scroll containers, and a print layout (Print → PDF on A4: folded sections open,
no chart cut across pages)."""

GLOSSARY = """<details><summary>Words on this page</summary><dl id=words>
<dt>member / non-member</dt><dd>A record the model was trained on / was not. The audit mixes
your members with generated non-members and asks each classifier which is which.</dd>
<dt>baseline</dt><dd>A classifier that never sees the audited model: what anyone learns from
the data alone (and a model that never saw your members).</dd>
<dt>attack</dt><dd>The same classifier given the audited model's per-record losses.</dd>
<dt>θ (theta)</dt><dd>How surely a classifier's "member" guesses are right, on a log-odds scale
(nats): guesses right with probability p have θ = ln(p / (1 − p)). θ_lb is its lower bound at
one threshold.</dd>
<dt>c_lb</dt><dd>The baseline's bound: how far generated records can be told from real ones
(the generator's closeness c).</dd>
<dt>{c+ε}_lb</dt><dd>The attack's bound: the same, with the model's help.</dd>
<dt>ε̃ (epsilon tilde)</dt><dd>{c+ε}_lb − c_lb (at least 0): what the model adds. Read as
odds, the model multiplies them by up to e^ε̃. A measurement, not a lower bound on the
model's differential-privacy ε.</dd>
<dt>c-closeness</dt><dd>A generator is c-close when no test tells its records from real ones by
more than c; the audit could not reject that for c = c_lb.</dd>
<dt>one-sided and two-sided games</dt><dd>The paper's game scores "member" guesses only; the
two-sided game also scores "non-member" guesses (a model can leak by giving non-members high
losses).</dd>
<dt>null, p</dt><dd>The same gap drawn many times as if the model had never seen your members
(the baseline's stand-ins in its place). p is the share of those draws at or above this
run's gap; a leak is called when p ≤ the false-alarm rate.</dd>
<dt>stand-in</dt><dd>A model trained like the audited one but never on your members: the
baseline uses its losses, so only your members' absence differs.</dd>
<dt>O(1), RM;RN</dt><dd>Reference audits with real held-out non-members instead of generated
ones, where the data has them (Steinke et al.'s one-run audit; real members vs real
non-members).</dd>
<dt>GDP, μ̃</dt><dd>Gaussian differential privacy and its μ; μ̃ puts ε̃ on a GDP claim's
scale.</dd>
<dt>AUC, TPR, FPR</dt><dd>Area under the ROC curve (0.5: a coin); the share of members caught;
the share of non-members wrongly flagged.</dd>
</dl></details>"""
"""Plain readings of every symbol the page uses."""


def _verdict_html(document: JSONDict) -> str:
    """The answer first: the level, one sentence, the figure to quote, the caveats of this
    run, what the figures mean and do not mean, and the declared guarantee in words."""
    from panoramia.report.verdict import verdict

    found = document.get("verdict") or verdict(document)  # a 1.0 document: from its figures

    def items(lines: list[str]) -> str:
        return "".join(f"<li>{html.escape(line)}</li>" for line in lines)

    from panoramia.report.verdict import split_caveats

    sized, technical = split_caveats(found["caveats"])
    audited = "".join(f"<p class=audited>{html.escape(line)}</p>" for line in sized)
    caveats = f"<p><b>Caveats of this run</b></p><ul>{items(technical)}</ul>" if technical else ""
    from panoramia.report.plain import plain_paragraph

    attacker = got if isinstance(got := document.get("attacker"), dict) else None
    plain = plain_paragraph(found, attacker)
    answer = f'<p class="plain"><b>In short:</b> {html.escape(plain)}</p>' if plain else ""
    return (
        f"{answer}"
        f'<div class="verdict {html.escape(found["level"])}">'
        f"<h2>{html.escape(found['headline'])}</h2>"
        "<details><summary>How the audit decided: the test, its figures and caveats</summary>"
        f"<p class=sentence>{html.escape(found['sentence'])}</p>"
        f"<p>Figure to quote: <b>{html.escape(quote_text(found))}</b>.</p>"
        f"<p class=hint>{READING}</p>{caveats}</details>{audited}"
        f"{_next_steps_html(found)}"
        f"<p>Declared guarantee: {html.escape(' '.join(found['claim']))}</p>"
        "<details><summary>What the figure means, and what it does not</summary>"
        f"<ul>{items(found['meaning'])}</ul></details></div>"
    )


def _next_steps_html(found: JSONDict) -> str:
    steps = found.get("next_steps") or []
    if not steps:
        return ""
    items = "".join(f"<li>{html.escape(step)}</li>" for step in steps)
    return f"<p><b>What to do next</b></p><ul class=next>{items}</ul>"


def quote_text(found: JSONDict) -> str:
    """The verdict's quoted figure in one phrase: ε̃, its game, this run's interval and the
    false-alarm rate (or, before the in-audit null, the tolerance)."""
    quote = found["quote"]
    game = "two-sided game" if quote["game"] == "two_sided" else "paper's one-sided game"
    text = f"ε̃ = {quote['value']:.2f} ({game}"
    interval, rate = quote.get("interval"), found.get("false_alarm_rate")
    null = got if isinstance(got := found.get("null"), dict) else {}
    decision = got if isinstance(got := found.get("decision"), dict) else {}
    if interval and rate and "p_value" in null:
        with_references = (
            f"; with the held-out rows' tests, {p_text(decision['p_value'])}"
            if len(decision.get("tests") or []) > 1
            else ""
        )
        return text + (
            f", this run's {percent(1 - 2 * rate)} interval {interval[0]:.2f}–"
            f"{interval[1]:.2f}; false alarms held to {percent(rate)}, p = "
            f"{null['p_value']:.3f}{with_references})"
        )
    if found.get("tolerance") is None:  # a 1.4 document whose null was skipped
        return text + "; no null to hold it to)"
    return text + (
        f", {percent(quote['confidence'])} confidence; before the in-audit null, up to "
        f"{found['tolerance']:g} read as no leak)"
    )


def _quoted_rows(document: JSONDict) -> list[tuple[str, object]]:
    """The table's first rows: the verdict's level and the figure it quotes."""
    from panoramia.report.verdict import verdict

    found = document.get("verdict") or verdict(document)
    return [("verdict", found["headline"]), ("figure to quote", quote_text(found))]


def _examples_html(examples: dict[str, list[str]] | None) -> str:
    if not examples:
        return ""
    parts = ["<h2>Examples</h2>"]
    for caption, texts in sorted(examples.items()):  # an order no store reorders
        items = "".join(f"<li><pre class=chunk>{html.escape(t)}</pre></li>" for t in texts)
        parts.append(f"<h3>{html.escape(caption)}</h3><ol>{items}</ol>")
    return "".join(parts)


def _details(document: JSONDict) -> str:
    import json

    keep = {k: document[k] for k in ("target", "data", "timings", "versions")}
    keep["distinguishers"] = {s: document[s].get("distinguisher") for s in ("baseline", "attack")}
    return json.dumps(keep, indent=1, sort_keys=True)  # the same whatever order a store keeps
