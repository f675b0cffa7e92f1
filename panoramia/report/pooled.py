"""One verdict from repeated runs of the same audit (docs/SPEC.md §3.2, pre-registered
2026-11-27): the repeats of a borderline, pooled instead of read one by one.

Repeats share the model, the data and (at one ``generation_seed``) the generator; they differ
in ``seed`` (the splits, the distinguishers). Their p-values are therefore dependent, in a way
nobody can write down, so the pooled p is one that holds under *any* dependence: twice the
mean of the runs' decision p-values, min(1, 2 · mean p_i) (Rüschendorf 1982; Meng 1994;
Vovk and Wang 2020, "Combining p-values via averaging"). A run whose decision cannot be read
(no in-audit null, a skipped null, an unreadable document) enters with p = 1.

The pooled figure is the mean of the runs' quoted ε̃ (nats) of the game most of them quote,
with its Student-t interval over those runs: a description of the runs' spread, not a test
(ε̃ is a maximum, biased upward on a model that leaks nothing; the test is the pooled p).

Inputs are *run readings*: a report's ``verdict`` section, as :func:`panoramia.report.verdict.
verdict` writes it, or the console's digest of one (:mod:`panoramia.report.digest`); see
:func:`run_reading`. Nothing here trusts a stored p: callers read verdicts anew from figures.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from panoramia.measure.aggregate import aggregate
from panoramia.measure.jsonable import JSONDict
from panoramia.report.verdict import p_text, percent
from panoramia.report.verdict_rule import DETECTED, finite_number

MAX_REPEATS = 10
"""The most runs one request may pool (the service's ``repeats``)."""
DEFAULT_RATE = 0.05
"""The false-alarm rate of a pooled verdict whose runs state none."""
POOLED_WORDS = {
    "leak_detected": "Leak detected (pooled)",
    "borderline": "Borderline (pooled): some runs point to a leak the pooled test does not call",
    "no_leak_detected": "No leak detected (pooled)",
    "inconclusive": "Inconclusive (pooled): no run could be read",
}
"""Each pooled level as a person reads it."""
POOLED_PLAIN = {
    "leak_detected": "Yes: over these runs together, this model gives away something about "
    "which records it was trained on.",
    "borderline": "Maybe: some runs point to a leak that the runs together do not call; run "
    "more repeats before acting on it.",
    "no_leak_detected": "No leak found by these runs together, which is not proof that there "
    "is none.",
    "inconclusive": "Cannot tell: none of these runs could be read.",
}
"""The pooled answer in plain words, one per level: the line a reader sees first."""
POOLED_STEPS = {
    "leak_detected": [
        "For the model's owner: retrain it so that it gives away less (fewer passes over the "
        "data, stronger regularisation, or a differentially private method), then audit "
        "again; each run's page says what fits this kind of model.",
        "For you: if your rows should not be in this model, ask its owner to retrain without them.",
    ],
    "borderline": [
        "Run more repeats (5 or more) of the same audit, or give held-out rows (rows the model "
        "never saw) so that the O(1) test runs too, and read the pooled verdict again.",
    ],
    "no_leak_detected": [
        "Nothing here calls for action, but it does not show the model is private: audit again "
        "after each retraining.",
    ],
    "inconclusive": ["Look at the runs' own pages for why none could be read, then run again."],
}
"""What to do next after a pooled verdict, per level (plain words, any surface)."""


def run_reading(found: JSONDict | None) -> dict[str, Any]:
    """One run's ``level``, decision ``p`` (None where it cannot be read), ``rate`` (its
    false-alarm rate), ``value`` and ``game`` of its quoted ε̃, from a ``verdict`` section or
    a digest's verdict (None: an unreadable run)."""
    if not isinstance(found, dict):
        return {"level": None, "p": None, "rate": None, "value": None, "game": None}
    decided = got if isinstance(got := found.get("decision"), dict) else {}
    null = got if isinstance(got := found.get("null"), dict) else {}
    p = finite_number(decided.get("p_value"))
    if p is None:
        p = finite_number(found.get("decision_p_value"))  # a digest
    if p is None:
        p = finite_number(null.get("p_value"))
    if p is None and "decision" not in found and "decision_p_value" not in found:
        p = finite_number(found.get("p_value"))  # a digest without a decision
    quote = got if isinstance(got := found.get("quote"), dict) else {}
    level = found.get("level") if isinstance(found.get("level"), str) else None
    return {
        "level": level,
        "p": p if p is not None and 0.0 <= p <= 1.0 else None,
        "rate": finite_number(found.get("false_alarm_rate")),
        "value": finite_number(quote.get("value")),
        "game": quote.get("game") if isinstance(quote.get("game"), str) else None,
    }


def pooled_verdict(readings: list[dict[str, Any]]) -> dict[str, Any]:
    """The pooled verdict of the runs' readings (:func:`run_reading`), as stored and shown.

    Keys: ``runs`` (n), ``read`` (runs whose decision could be read), ``called`` (runs whose
    own verdict says the model leaks), ``borderline`` (runs read as borderline), ``p_value``
    = min(1, 2 · mean p_i) with unread runs at 1, ``false_alarm_rate`` α (the runs' own, the
    smallest where they differ; 5 % where none states one), ``detected`` (p ≤ α), ``level``
    (a key of :data:`POOLED_WORDS`), ``headline``, ``plain`` (the answer in plain words),
    ``next_steps``, ``quote`` ({game, mean, interval, n} over
    the runs quoting the commonest game; interval None for one run) and ``sentence``."""
    runs = len(readings)
    if runs == 0:
        raise ValueError("a pooled verdict needs at least one run")
    ps = [r["p"] if r["p"] is not None else 1.0 for r in readings]
    read = sum(1 for r in readings if r["p"] is not None)
    rates = [r["rate"] for r in readings if r["rate"] is not None and 0 < r["rate"] < 1]
    rate = min(rates) if rates else DEFAULT_RATE
    p_value = min(1.0, 2.0 * sum(ps) / runs)
    called = sum(1 for r in readings if r["level"] in DETECTED)
    borderline = sum(1 for r in readings if r["level"] == "borderline")
    detected = read > 0 and p_value <= rate
    if read == 0:
        level = "inconclusive"
    elif detected:
        level = "leak_detected"
    elif called or borderline or p_value <= 2 * rate:
        level = "borderline"
    else:
        level = "no_leak_detected"
    quote = _pooled_quote(readings)
    return {
        "runs": runs,
        "read": read,
        "called": called,
        "borderline": borderline,
        "p_value": p_value,
        "false_alarm_rate": rate,
        "detected": detected,
        "level": level,
        "headline": POOLED_WORDS[level],
        "plain": POOLED_PLAIN[level],
        "next_steps": list(POOLED_STEPS[level]),
        "quote": quote,
        "sentence": _sentence(level, runs, read, called, p_value, rate, quote),
    }


def _pooled_quote(readings: list[dict[str, Any]]) -> dict[str, Any] | None:
    games = Counter(r["game"] for r in readings if r["game"] and r["value"] is not None)
    if not games:
        return None
    game = games.most_common(1)[0][0]
    values = [r["value"] for r in readings if r["game"] == game and r["value"] is not None]
    found = _mean_and_interval(values)
    if found["interval"] is not None:  # ε̃ ≥ 0: its mean's interval cut at 0 keeps its coverage
        found["interval"] = [max(0.0, found["interval"][0]), max(0.0, found["interval"][1])]
    return {"game": game, **found}


def _mean_and_interval(values: list[float]) -> dict[str, Any]:
    """``mean``, its Student-t 95 % ``interval`` (None for one value) and ``n``."""
    summary = aggregate(values)
    spread = summary.n > 1 and math.isfinite(summary.ci_low)
    interval = [summary.ci_low, summary.ci_high] if spread else None
    return {"mean": summary.mean, "interval": interval, "n": summary.n}


def _sentence(
    level: str,
    runs: int,
    read: int,
    called: int,
    p_value: float,
    rate: float,
    quote: dict[str, Any] | None,
) -> str:
    if level == "inconclusive":
        return f"None of the {runs} runs has a decision that can be read; nothing is pooled."
    figure = ""
    if quote is not None:
        spread = (
            f" ({percent(0.95)} interval over the runs {quote['interval'][0]:.2f} to "
            f"{quote['interval'][1]:.2f})"
            if quote["interval"]
            else ""
        )
        figure = f" The quoted ε̃ averages {quote['mean']:.2f}{spread} over {quote['n']} runs."
    unread = f" {runs - read} run(s) could not be read and count as p = 1." if read < runs else ""
    tally = f"{called} of {runs} runs called a leak on their own"
    test = (
        f"the pooled test (twice the runs' mean p, valid however the runs depend on each other) "
        f"gives {p_text(p_value)}, held to a {percent(rate)} false-alarm rate"
    )
    if level == "leak_detected":
        return f"Pooled over {runs} runs, the model leaks: {test}; {tally}.{figure}{unread}"
    if level == "borderline":
        return (
            f"Pooled over {runs} runs, no leak is called, but not all runs were quiet: {tally}, "
            f"and {test}. Repeat with more runs, or give held-out rows (the O(1) test), before "
            f"acting on it.{figure}{unread}"
        )
    return f"Pooled over {runs} runs, no leak detected: {test}; {tally}.{figure}{unread}"


def paired_difference(
    target: dict[int, dict[str, Any]], control: dict[int, dict[str, Any]]
) -> dict[str, Any] | None:
    """The quoted ε̃'s paired difference, target − control, over the seeds where both runs
    quote the same game (``target``, ``control``: run readings by seed), with its Student-t
    95 % interval (as ``validity.json``'s paired entries); None without a pair. A description
    beside the pooled test, not a test of its own."""
    pairs = [
        (target[seed], control[seed])
        for seed in sorted(set(target) & set(control))
        if target[seed]["value"] is not None
        and control[seed]["value"] is not None
        and target[seed]["game"] == control[seed]["game"]
    ]
    if not pairs:
        return None
    differences = [t["value"] - c["value"] for t, c in pairs]
    found = {"game": pairs[0][0]["game"], **_mean_and_interval(differences)}
    return found | {"sentence": paired_sentence(found)}


def paired_sentence(paired: dict[str, Any]) -> str:
    """The paired difference in words, saying whether its interval holds zero (then these
    runs cannot tell the target from a model that never saw the members)."""
    mean, interval, n = paired["mean"], paired.get("interval"), paired["n"]
    head = (
        f"Paired with your control over {n} seed{'s' if n != 1 else ''}, the target's ε̃ is "
        f"{mean:.2f} {'above' if mean >= 0 else 'below'} the control's on average"
    )
    if not interval:
        return head + " (one pair: no interval)."
    low, high = interval
    shown = f" (95 % interval {low:.2f} to {high:.2f})"
    if low <= 0.0 <= high:
        return (
            head + shown + ": the interval includes zero, so these runs cannot tell the "
            "target from a model that never saw these members."
        )
    if low > 0:
        return (
            head + shown + ": the interval is above zero, so the target reads higher than a "
            "model that never saw these members."
        )
    return head + shown + ": the interval is below zero; the control reads higher."
