"""A self-contained HTML report: figures drawn with matplotlib and embedded as PNG data URIs."""

from __future__ import annotations

import base64
import html
import io

import numpy as np

from panoramia.accounting.report_section import ClaimSection
from panoramia.measure import Measurement, max_precision_allowed
from panoramia.measure.null import NullTest
from panoramia.report.verdict import percent

LOSS_FLOOR = 1e-6
"""Losses below this are drawn at it (log axis)."""
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


def _figure_png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


def _curves(measurement: Measurement):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (pr, bound) = plt.subplots(1, 2, figsize=(11, 4))
    for name, result, colour in (
        ("baseline", measurement.baseline, "tab:blue"),
        ("attack", measurement.attack, "tab:red"),
    ):
        table = result.table
        has = table.r > 0
        pr.plot(table.recall[has], table.precision[has], color=colour, label=f"{name} precision")
        allowed = max_precision_allowed(
            table.r[has], theta=result.best.theta_lb, alpha=result.alpha
        )
        pr.plot(
            table.recall[has],
            np.minimum(allowed, 1.0),
            color=colour,
            linestyle=":",
            label=f"max precision at θ = {result.best.theta_lb:.2f}",
        )
        bound.plot(table.recall, table.theta_lb, color=colour, label=name)
        bound.scatter([result.best.recall], [result.best.theta_lb], color=colour, zorder=3)
    pr.set(xlabel="recall", ylabel="precision", title="precision vs recall", ylim=(0.4, 1.02))
    bound.set(xlabel="recall", ylabel="θ_lb (nats)", title="lower bound per threshold")
    pr.legend(fontsize=7)
    bound.legend(fontsize=8)
    return figure


def _roc(curves: dict[str, tuple[np.ndarray, np.ndarray]]):
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(5, 4))
    floor_fpr = floor_tpr = 1.0
    for name, (scores, membership) in curves.items():
        order = np.argsort(-scores, kind="stable")
        hits = membership[order]
        positives, negatives = max(int(hits.sum()), 1), max(int((1 - hits).sum()), 1)
        # one example is the smallest rate the counts can show: the axes stop there
        floor_fpr, floor_tpr = min(floor_fpr, 1 / negatives), min(floor_tpr, 1 / positives)
        tpr = np.cumsum(hits) / positives
        fpr = np.cumsum(1 - hits) / negatives
        axis.plot(np.maximum(fpr, 1 / negatives), np.maximum(tpr, 1 / positives), label=name)
    axis.plot([floor_fpr, 1], [floor_fpr, 1], color="grey", linestyle="--", linewidth=0.8)
    axis.set(xscale="log", yscale="log", xlim=(floor_fpr, 1), ylim=(floor_tpr, 1.05),
             xlabel=f"FPR (from 1/{round(1 / floor_fpr)}: one non-member)",
             ylabel=f"TPR (from 1/{round(1 / floor_tpr)}: one member)",
             title="ROC (log axes, down to what the counts resolve)")  # fmt: skip
    axis.legend(fontsize=8)
    return figure


def _histograms(losses: dict[str, dict[str, np.ndarray]]):
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(losses), figsize=(5.5 * len(losses), 3.8), squeeze=False)
    for axis, (model, groups) in zip(axes[0], losses.items(), strict=True):
        # log10 of the loss: members' near-zero losses and the heavy tail both stay visible
        logs = {g: np.log10(np.maximum(v, LOSS_FLOOR)) for g, v in groups.items() if v.size}
        bins = np.linspace(np.log10(LOSS_FLOOR), max(float(v.max()) for v in logs.values()), 60)
        for group, values in logs.items():
            axis.hist(
                values, bins=bins, histtype="step", density=True, label=f"{group} (n={values.size})"
            )
        axis.set(
            xlabel="log10 per-example loss (nats)", ylabel="density", title=f"losses under {model}"
        )
        axis.legend(fontsize=8)
    return figure


def _galleries(galleries: dict[str, np.ndarray], columns: int = 8):
    """One grid of images per caption, in a row of panels."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * len(galleries), 4.4), layout="constrained")
    for axis, (caption, images) in zip(
        figure.subplots(1, len(galleries), squeeze=False)[0], galleries.items(), strict=True
    ):
        n, h, w, c = images.shape
        rows = max(1, -(-n // columns))
        grid = np.full((rows * (h + 1), columns * (w + 1), c), 255, np.uint8)
        for index, image in enumerate(images):
            r, k = divmod(index, columns)
            grid[r * (h + 1) : r * (h + 1) + h, k * (w + 1) : k * (w + 1) + w] = image
        axis.imshow(grid[..., 0] if c == 1 else grid, cmap="gray" if c == 1 else None)
        axis.set_title(caption)
        axis.axis("off")
    return figure


def _tradeoff_plane(section: ClaimSection):
    """FNR against FPR: the claim's curves and the measured points with their CP boxes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from panoramia.accounting.tradeoff import eps_delta_tradeoff, gdp_tradeoff

    summary = section.summary
    alphas = np.r_[0.0, np.geomspace(1e-6, 1.0, 400)]
    figure, axis = plt.subplots(figsize=(6, 5))
    axis.plot(alphas, summary.curve(alphas), color="black", label="f of the claim (one run)")
    if summary.tuned:
        axis.plot(alphas, summary.check_curve(alphas), color="black", linestyle=":",
                  label="after tuning (certified profile)")  # fmt: skip
    if summary.mu is not None:
        axis.plot(alphas, gdp_tradeoff(alphas, summary.mu), color="tab:blue", linestyle="--",
                  label=f"f_μ*, μ* = {summary.mu:.3g}")  # fmt: skip
    if "1e-05" in summary.epsilons and summary.mu is not None:
        epsilon = summary.epsilons["1e-05"]
        axis.plot(alphas, eps_delta_tradeoff(alphas, epsilon, 1e-5), color="tab:gray",
                  linestyle="-.", label=f"naive f_(ε,δ), ε = {epsilon:.3g}, δ = 1e-5")  # fmt: skip
    colours = {"attack": "tab:red", "baseline": "tab:green", "rmrn": "tab:purple"}
    for name, check in section.checks.items():
        fpr, fnr = check.fpr, 1 - check.tpr
        axis.plot(fpr, fnr, ".", color=colours.get(name, "tab:orange"), markersize=3,
                  label=f"{name} operating points")  # fmt: skip
        for k in np.linspace(0, fpr.size - 1, min(fpr.size, 12)).astype(int):
            axis.add_patch(Rectangle(
                (fpr[k], fnr[k]), check.fpr_upper[k] - fpr[k], check.fnr_upper[k] - fnr[k],
                fill=False, edgecolor=colours.get(name, "tab:orange"), linewidth=0.7,
            ))  # fmt: skip
    axis.plot([0, 1], [1, 0], color="lightgray", linewidth=0.8)
    axis.set(xlim=(0, 1), ylim=(0, 1), xlabel="FPR α (non-member called member)",
             ylabel="FNR β (member missed)",
             title="Trade-off plane: a point below the claim's f contradicts it")  # fmt: skip
    axis.legend(fontsize=7, loc="upper right")
    return figure


def _unreliable_html(document: dict) -> str:
    """The paper's game's c_lb = 0, named as that game's (the quoted figure may be another)."""
    reasons = document.get("unreliable") or []
    return "".join(
        f"<p class=note>The paper's one-sided game: {html.escape(reason)}</p>" for reason in reasons
    )


def _null_plot(null: NullTest):
    """The quoted game's gap against this audit's null draws: where the run's Δ falls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    game = "two-sided game" if null.game == "two_sided" else "paper's one-sided game"
    figure, axis = plt.subplots(figsize=(7, 3.6))
    axis.hist(null.centred, bins=40, color="#999999", label=f"null draws (B = {null.draws})")
    axis.axvline(
        null.threshold,
        color="black",
        linestyle="--",
        label=f"{1 - null.false_alarm_rate:.0%} of the null: {null.threshold:.2f}",
    )
    axis.axvline(null.observed, color="#b00000", linewidth=2,
                 label=f"this run: Δ = {null.observed:.2f} (p = {null.p_value:.3f})")  # fmt: skip
    axis.set(xlabel="{c+ε}_lb − c_lb (nats)", ylabel="null draws",
             title=f"The quoted figure against this audit's null ({game})")  # fmt: skip
    axis.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def _claim_html(section: ClaimSection | None) -> str:
    """The claim section: red banner, plain statements, the key numbers."""
    if section is None:
        return ""
    banner = section.banner()
    parts = ["<h2>Declared guarantee</h2>"]
    if banner:
        parts.append(f"<p class=banner>{html.escape(banner)}</p>")
    note = section.note()
    if note:
        parts.append(f"<p class=note>{html.escape(note)}</p>")
    parts.append(
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in section.statements())
        + "</ul>"
    )  # fmt: skip
    for name, check in section.checks.items():
        parts.append(
            f"<p>{html.escape(name)}: {'consistent' if check.consistent else 'VIOLATES'} "
            f"({check.violations.size} of {check.fpr.size} points); leakage-equivalent μ "
            f"{check.leakage_mu:.3f}, empirical ε(1e-5) {check.empirical_epsilon():.3f} "
            "(not DP lower bounds with generated non-members).</p>"
        )
    return "".join(parts)


def _gdp_rows(gdp: dict) -> list[tuple[str, float]]:
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


def render_html(
    document: dict,
    measurement: Measurement,
    roc_curves: dict[str, tuple[np.ndarray, np.ndarray]],
    losses: dict[str, dict[str, np.ndarray]],
    galleries: dict[str, np.ndarray] | None = None,
    *,
    claim: ClaimSection | None = None,
    examples: dict[str, list[str]] | None = None,
    null: NullTest | None = None,
) -> str:
    """The report page: headline numbers, the meaning of ε̃, the declared guarantee beside the
    audit, figures, reference audits.

    ``galleries``: uint8 images (N, H, W, C) by caption, drawn side by side as grids;
    ``examples``: texts by caption (decoded chunks), listed under "Examples"; ``null``: the
    quoted game's null test, drawn first.
    """
    import matplotlib.pyplot as plt

    figures = [
        (_curves(measurement), "Precision against recall of the baseline and the attack in the "
         "paper's one-sided game, with the most precision each bound allows, and each "
         "threshold's lower bound against recall"),
        (_roc(roc_curves), "ROC curves of the baseline and the attack on log axes, down to "
         "one example"),
        (_histograms(losses), "Distributions of per-example losses of members, synthetic "
         "examples and real non-members under each model"),
    ]  # fmt: skip
    if null is not None:
        figures.insert(0, (_null_plot(null), (
            f"Histogram of this audit's {null.draws} null draws of the quoted game's gap, "
            f"with the threshold {null.threshold:.2f} and this run's gap {null.observed:.2f}"
        )))  # fmt: skip
    if claim is not None and claim.summary.curve is not None:
        figures.append(
            (
                _tradeoff_plane(claim),
                "The declared guarantee's trade-off curve "
                "with the measured operating points and their confidence boxes",
            )
        )
    if galleries:
        figures.append((_galleries(galleries), "Example images: " + ", ".join(galleries)))
    images = "".join(
        f'<img src="data:image/png;base64,{_figure_png(figure)}" alt="{html.escape(alt)}">'
        for figure, alt in figures
    )
    plt.close("all")
    reference = document["reference_audits"]
    rows = [
        *_quoted_rows(document),
        ("paper's one-sided game: c_lb (baseline)", document["c_lb"]),
        ("paper's one-sided game: {c+ε}_lb (attack)", document["c_plus_eps_lb"]),
        ("paper's one-sided game: ε̃", document["eps_tilde"]),
    ]
    if reference["o1"]:
        rows.append(("O(1) ε_lb (real non-members)", reference["o1"]["eps_lb"]))
    if reference["rmrn"]:
        rows.append(("RM;RN ε_lb (real non-members)", reference["rmrn"]["eps_lb"]))
    fidelity = ((document.get("data") or {}).get("synthetic") or {}).get("real_vs_synthetic_auc")
    if fidelity is not None:
        rows.append(
            ("real-vs-synthetic AUC of a fixed classifier (0.5: indistinguishable)", fidelity)
        )
    two_sided = document.get("two_sided") or {}
    if "eps_tilde" in two_sided:
        rows.append((f"two-sided game: c_lb {two_sided['c_lb']:.3f}, {{c+ε}}_lb "
                    f"{two_sided['c_plus_eps_lb']:.3f}; ε̃",
                     two_sided["eps_tilde"]))  # fmt: skip
        if "rmrn" in two_sided:
            rows.append(("two-sided RM;RN ε_lb (real non-members)", two_sided["rmrn"]["eps_lb"]))
    rows.extend(_gdp_rows(document.get("gdp") or {}))
    table = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(v if isinstance(v, str) else f'{v:.3f}')}"
        "</td></tr>"
        for k, v in rows
    )
    saturated = (
        "<p class=warn>The paper's one-sided game: a maximiser has precision 1 (saturated): its "
        "bound counts error-free guesses and sits at the ceiling for its number of guesses.</p>"
        if document["saturated"]
        else ""
    )
    target = html.escape(str(document["target"].get("name")))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>PANORAMIA audit — {target}</title>
<style>body{{font-family:sans-serif;max-width:1150px;margin:2em auto;}}
td{{padding:2px 12px;}} .warn{{color:#a60;}}
.banner{{background:#c00;color:white;padding:10px;font-weight:bold;}}
.note{{background:#fd8;padding:8px;}}
.verdict{{border-left:8px solid #888;padding:4px 16px;margin:1em 0;background:#f7f7f7;}}
.verdict h2{{margin:.3em 0;}}
.verdict.clear_leak,.verdict.leak_beyond_claim{{border-color:#7a1010;}}
.verdict.leak_detected{{border-color:#b42318;}} .verdict.borderline{{border-color:#8a5300;}}
.verdict.no_leak_detected{{border-color:#2f7d4f;}} .verdict.inconclusive{{border-color:#5b6270;}}
.sentence{{font-size:1.15em;}}
img{{max-width:100%;margin:8px 0;}}
pre.chunk{{white-space:pre-wrap;background:#f4f4f4;padding:4px;}}</style></head>
<body><h1>Privacy audit of {target}</h1>
{_verdict_html(document)}
<h2>The figures</h2>
<p>{document["modality"]} audit, seed {document["seed"]}, m = {document["m"]} audit examples,
thresholds {html.escape(document["thresholds"])} (K = {document["n_thresholds"]}),
confidence {document["confidence"]}, created {document["created"]}.</p>
<table>{table}</table>{saturated}{_unreliable_html(document)}
<h2>What ε̃ means</h2><p>{PARAGRAPH}</p>{_claim_html(claim)}
<h2>Plots</h2>{images}{_examples_html(examples)}
<details><summary>Details (target, data, timings, versions as JSON)</summary>
<pre>{html.escape(_details(document))}</pre></details>
</body></html>"""


def _verdict_html(document: dict) -> str:
    """The answer first: the level, one sentence, the figure to quote, the caveats of this
    run, what the figures mean and do not mean, and the declared guarantee in words."""
    from panoramia.report.verdict import verdict

    found = document.get("verdict") or verdict(document)  # a 1.0 document: from its figures

    def items(lines: list[str]) -> str:
        return "".join(f"<li>{html.escape(line)}</li>" for line in lines)

    caveats = (
        f"<p><b>Caveats of this run</b></p><ul>{items(found['caveats'])}</ul>"
        if found["caveats"]
        else ""
    )
    return (
        f'<div class="verdict {html.escape(found["level"])}">'
        f"<h2>{html.escape(found['headline'])}</h2>"
        f"<p class=sentence>{html.escape(found['sentence'])}</p>"
        f"<p>Figure to quote: <b>{html.escape(quote_text(found))}</b>.</p>{caveats}"
        "<p><b>What it means, and what it does not</b></p>"
        f"<ul>{items(found['meaning'])}</ul>"
        f"<p><b>Declared guarantee</b></p><ul>{items(found['claim'])}</ul></div>"
    )


def quote_text(found: dict) -> str:
    """The verdict's quoted figure in one phrase: ε̃, its game, this run's interval and the
    false-alarm rate (or, before the in-audit null, the tolerance)."""
    quote = found["quote"]
    game = "two-sided game" if quote["game"] == "two_sided" else "paper's one-sided game"
    text = f"ε̃ = {quote['value']:.2f} ({game}"
    interval, rate = quote.get("interval"), found.get("false_alarm_rate")
    null = found.get("null") if isinstance(found.get("null"), dict) else {}
    if interval and rate and "p_value" in null:
        return text + (
            f", {percent(1 - 2 * rate)} interval {interval[0]:.2f}–{interval[1]:.2f}; false "
            f"alarms held to {percent(rate)}, p = {null['p_value']:.3f})"
        )
    if found.get("tolerance") is None:  # a 1.4 document whose null was skipped
        return text + "; no null to hold it to)"
    return text + (
        f", {percent(quote['confidence'])} confidence; before the in-audit null, up to "
        f"{found['tolerance']:g} read as no leak)"
    )


def _quoted_rows(document: dict) -> list[tuple[str, object]]:
    """The table's first rows: the verdict's level and the figure it quotes."""
    from panoramia.report.verdict import verdict

    found = document.get("verdict") or verdict(document)
    return [("verdict", found["headline"]), ("figure to quote", quote_text(found))]


def _examples_html(examples: dict[str, list[str]] | None) -> str:
    if not examples:
        return ""
    parts = ["<h2>Examples</h2>"]
    for caption, texts in examples.items():
        items = "".join(f"<li><pre class=chunk>{html.escape(t)}</pre></li>" for t in texts)
        parts.append(f"<h3>{html.escape(caption)}</h3><ol>{items}</ol>")
    return "".join(parts)


def _details(document: dict) -> str:
    import json

    keep = {k: document[k] for k in ("target", "data", "timings", "versions")}
    keep["distinguishers"] = {s: document[s].get("distinguisher") for s in ("baseline", "attack")}
    return json.dumps(keep, indent=1)
