"""The verdict of one audit run: a graded level, one sentence, the figure to quote with this
run's interval, what it means and the caveats that hold — read off a finished report document,
so that a stored or uploaded document gets the same verdict from its own figures
(docs/SPEC.md §3.1).

The quoted figure is ε̃ of one game fixed before the run: the two-sided game where it is
played, else the paper's. Its decision holds false alarms to a stated rate through the
document's ``null`` section (schema 1.4, :mod:`panoramia.measure.null`). Levels, in the order
the rule tries them:

- ``leak_beyond_claim``: the declared guarantee's checks found a measured point it forbids;
- ``clear_leak``: detected, and even the low end of this run's interval is at least
  :data:`STRONG` (the model at least doubles the odds of a right guess);
- ``leak_detected``: the gap beats this audit's null at its false-alarm rate α;
- ``borderline``: it would at 2α, not at α — repeat before acting on it;
- ``no_leak_detected``: otherwise;
- ``inconclusive``: the baseline's side does not mirror the attack's, so there is no null to
  hold the gap to, and the gap is above 0.

A document without a ``null`` section (schema 1.0–1.3) keeps the rule it was written under:
a game whose baseline measured the generator reading ε̃ above :data:`TOLERANCE`; its
``false_alarm_rate`` is None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from panoramia.measure import INTERPRETATION
from panoramia.measure.jsonable import JSONDict
from panoramia.report.verdict_rule import (
    DETECTED,
    TOLERANCE,
    bounded_count,
    finite_number,
    games_of,
    level_of,
    o1_joins,
    read_null,
    rmia_test,
)

LOW_FIDELITY_AUC = 0.75
"""A real-vs-synthetic AUC above this is a caveat of a quiet run: a leak can hide behind what
the baseline already sees in the generated data."""
WORDS = {
    "leak_beyond_claim": "Leak beyond the declared guarantee",
    "clear_leak": "Clear leak",
    "leak_detected": "Leak detected",
    "borderline": "Borderline: repeat",
    "no_leak_detected": "No leak detected",
    "inconclusive": "Inconclusive",
}
"""Each level as a person reads it, most severe first."""


def p_text(value: float) -> str:
    """A p-value as the page shows it: "p = 0.004", or "p < 0.001" below a thousandth."""
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def percent(rate: float) -> str:
    """A rate as a person reads it: 0.05 → "5%", 0.025 → "2.5%"."""
    return f"{100 * rate:g}%"


REFERENCE_WORDS = {
    "o1": "the O(1) audit on your held-out rows",
    "rmia": "the reference-model attack (RMIA) on your held-out rows",
}
REFERENCE_MEANING = {
    "o1": "the model's own losses on your rows against rows it never saw (your held-out rows)",
    "rmia": (
        "the model's losses on your rows against those of models trained like it that never "
        "saw them, your members against your held-out rows"
    ),
}


def _odds(value: float) -> str:
    return f"{math.exp(value):.1f}×" if value < 20 else "more than a million times"


def quoted_calls(document: JSONDict, quoted: JSONDict) -> dict[str, int] | None:
    """The attack's calls at the quoted game's best point: ``{"member": n, "nonmember": n}``
    (the paper's game makes member calls only); None where the document does not say."""
    if quoted["key"] == "two_sided":
        point = (document.get("two_sided") or {}).get("attack")
        if not isinstance(point, dict):
            return None
        member, nonmember = (
            bounded_count(point.get("member_guesses")),
            bounded_count(point.get("nonmember_guesses")),
        )
        if member is None or nonmember is None:
            return None
        return {"member": member, "nonmember": nonmember}
    attack = got if isinstance(got := document.get("attack"), dict) else {}
    member = bounded_count(attack.get("r"))
    return None if member is None else {"member": member, "nonmember": 0}


def _baseline_best(document: JSONDict, quoted: JSONDict) -> tuple[int, int] | None:
    """The baseline's calls at its own best point of the quoted game and how many are right."""
    if quoted["key"] == "two_sided":
        point = (document.get("two_sided") or {}).get("baseline")
        if not isinstance(point, dict):
            return None
        made = [bounded_count(point.get(k)) for k in ("member_guesses", "nonmember_guesses")]
        right = [bounded_count(point.get(k)) for k in ("member_correct", "nonmember_correct")]
        if None in made or None in right:
            return None
        return sum(cast("list[int]", made)), sum(cast("list[int]", right))  # no None (above)
    baseline = got if isinstance(got := document.get("baseline"), dict) else {}
    r, v = bounded_count(baseline.get("r")), bounded_count(baseline.get("v"))
    return None if r is None or v is None else (r, v)


def _carried(calls: dict[str, int] | None) -> str:
    """Which calls carry the quoted figure, in words ("" where unknown)."""
    if not calls:
        return ""
    member, nonmember = calls["member"], calls["nonmember"]
    if member and nonmember:
        return f", carried by {member:,} member and {nonmember:,} non-member calls"
    if nonmember:
        return (
            f", carried by {nonmember:,} non-member calls (no member call: it does not point "
            "at your records, it rules out generated ones)"
        )
    if member:
        return f", carried by {member:,} member calls"
    return ""


def _counts_reading(document: JSONDict, quoted: JSONDict, calls: dict[str, int] | None) -> str:
    """A saturated game's figure read as counts, not odds."""
    if not calls:
        return ""
    made = calls["member"] + calls["nonmember"]
    kind = "non-member" if not calls["member"] else "member" if not calls["nonmember"] else ""
    text = f"the attack made {made:,} {kind + ' ' if kind else ''}calls without an error"
    base = _baseline_best(document, quoted)
    if base is not None:
        r, v = base
        text += (
            f"; without the model, at most {r:,} at its own best"
            if r == v
            else f"; without the model, {v:,} right of {r:,} at its own best"
        )
    return (
        f" The figure is saturated, so read it as counts, not odds: {text}. The count is "
        "a count of error-free calls: more of them, not a higher precision, would raise it."
    )


def _found(decided: JSONDict | None, held: JSONDict) -> str:
    """Which tests called the leak, with their p-values."""
    if not decided or not decided["references"]:
        return ""
    parts = []
    if "null" in decided["found_by"]:
        parts.append(f"the game against generated rows (p = {held['p_value']:.3f})")
    for ref in decided["references"]:
        if ref["test"] in decided["found_by"]:
            parts.append(f"{REFERENCE_WORDS[ref['test']]} ({p_text(ref['p_value'])})")
    if not parts:
        return ""
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return (
        f" Found by {listed}; the decision over all {len(decided['references']) + 1} tests is "
        f"held to one {percent(held['false_alarm_rate'])} false-alarm rate "
        f"({p_text(decided['p_value'])})."
    )


def _reference_meaning(decided: JSONDict) -> str:
    """What the reference audits that called the leak compared, in words, with their bound,
    and which way their calls went (where the document holds the counts)."""
    found = [r for r in decided["references"] if r["test"] in decided["found_by"]]
    return "".join(
        f" {REFERENCE_WORDS[r['test']][0].upper()}{REFERENCE_WORDS[r['test']][1:]} compares "
        f"{REFERENCE_MEANING[r['test']]}: ε_lb = {r['eps_lb']:.2f}, so its calls on these "
        f"rows are right with odds at least e^{r['eps_lb']:.2f} ≈ "
        f"{math.exp(min(r['eps_lb'], 20.0)):.2f}× as often as wrong.{_calls_words(r)}"
        for r in found
    )


def _calls_words(reference: JSONDict) -> str:
    """Which way a reference audit's calls went: its member and non-member calls, what a
    one-sided set of calls shows, and whether all were right (the most its size can show)."""
    calls = reference.get("calls")
    if not isinstance(calls, dict):
        return ""
    member, nonmember = int(calls["member"]), int(calls["nonmember"])
    right, total = int(reference.get("right", -1)), member + nonmember
    if member == 0:
        said = (
            f" All {nonmember} of its calls were non-member calls: the model treats rows it "
            "never saw differently from yours; this test does not show that your own rows "
            "can be picked out."
        )
    elif nonmember == 0:
        said = f" All {member} of its calls were member calls: your rows can be picked out."
    else:
        said = f" Its calls: {member} member and {nonmember} non-member."
    if right == total:
        said += (
            f" All {total} were right, the most this test can show at its size: the bound "
            "is a floor."
        )
    return said


@dataclass(frozen=True)
class _Said:
    """What the verdict's sentence of every level draws on."""

    eps: float
    """The quoted ε̃."""
    game: str
    """The quoted game in words."""
    where: str
    """"ε̃ = … in <game>", with this run's interval where a null holds the call."""
    held: JSONDict | None
    """The null that holds the call (None where there is none, or it was skipped)."""
    rate: str
    """The held null's false-alarm rate in words ("" without one)."""
    within: str
    """" It stays within the declared guarantee." where one is declared and not violated."""
    decided: JSONDict | None
    calls: dict[str, int] | None
    quoted: JSONDict
    null: JSONDict | None
    claim: JSONDict
    document: JSONDict


def _said(quoted: JSONDict, null: JSONDict | None, claim: JSONDict, document: JSONDict) -> _Said:
    eps, game = quoted["eps_tilde"], quoted["game"]
    held = null if null and "skipped" not in null else None
    where, rate = f"ε̃ = {eps:.2f} in {game}", ""
    if held:
        low, high = held["interval"]
        span = 1 - 2 * held["false_alarm_rate"]
        where += f" (this run's {percent(span)} interval {low:.2f}–{high:.2f})"
        rate = percent(held["false_alarm_rate"])
    within = (
        " It stays within the declared guarantee."
        if claim.get("source") not in (None, "none") and not claim.get("violation")
        else ""
    )
    return _Said(
        eps=eps, game=game, where=where, held=held, rate=rate, within=within,
        decided=quoted.get("decision"),
        calls=quoted_calls(document, quoted) if held else None,
        quoted=quoted, null=null, claim=claim, document=document,
    )  # fmt: skip


def _beyond_claim_sentence(said: _Said) -> str:
    return (
        "This model leaks more than its declared guarantee allows: "
        f"{said.claim.get('banner') or 'a measured point lies below the claim’s trade-off curve'}"
        f" ({said.where})."
    )


def _clear_leak_sentence(said: _Said) -> str | None:
    held, eps, quoted = said.held, said.eps, said.quoted
    if not held:
        return None
    reading = (
        _counts_reading(said.document, quoted, said.calls)
        if quoted["saturated"]
        else f" Even the interval's low end multiplies an attacker's odds of a right guess "
        f"by {_odds(held['interval'][0])} over what the generated data gives away (at the "
        f"figure itself: {_odds(eps)})."
    )
    held_to = _found(said.decided, held) or f" The call is held to a {said.rate} false-alarm rate."
    return (
        f"This model clearly leaks information about its training data: "
        f"{said.where}{_carried(said.calls)}.{reading}{held_to}{said.within}"
    )


def _leak_sentence(said: _Said) -> str | None:
    held, decided, within = said.held, said.decided, said.within
    if not held:
        return None
    if decided and "null" not in decided["found_by"]:
        return (
            "This model leaks information about its training data."
            f"{_found(decided, held)}{_reference_meaning(decided)} In {said.game}, against "
            f"generated rows, ε̃ = {said.eps:.2f} "
            f"(this run's {percent(1 - 2 * held['false_alarm_rate'])} interval "
            f"{held['interval'][0]:.2f}–{held['interval'][1]:.2f}, p = "
            f"{held['p_value']:.3f}) did not reach its share of the combined test (p ≤ "
            f"{percent(held['false_alarm_rate'] / 2)}).{within}"
        )
    held_to = _found(decided, held) or f" The call is held to a {said.rate} false-alarm rate."
    return (
        f"This model leaks information about its training data: {said.where}"
        f"{_carried(said.calls)}, above the {held['threshold']:.2f} that this audit's null "
        f"draws exceed only {said.rate} of the time.{held_to}{within}"
    )


def _reading_sentence(said: _Said, ref: JSONDict) -> str | None:
    """Borderline on a reference audit's reading: without a null, or held with it and not
    called together."""
    held, decided, where = said.held, said.decided, said.where
    if not held:
        return (
            f"Borderline: {REFERENCE_WORDS[ref['test']]} reads ε_lb = {ref['eps_lb']:.2f} at "
            f"its {percent(ref['confidence'])} confidence ({p_text(ref['p_value'])}), while "
            f"{where} has no null to hold it to. Repeat the audit with mirrored sides (the "
            "defaults) and more held-out rows before acting on it."
        )
    assert decided is not None  # a held null always comes with its decision (level_of)
    if decided["detected"]:
        return None
    return (
        f"Borderline: {REFERENCE_WORDS[ref['test']]} reads ε_lb = {ref['eps_lb']:.2f} "
        f"at its {percent(ref['confidence'])} confidence ({p_text(ref['p_value'])}), "
        f"and {where} (p = {held['p_value']:.3f}); held together to a {said.rate} "
        f"false-alarm rate they do not call a leak ({p_text(decided['p_value'])}). "
        "Repeat the audit over more seeds or with more held-out rows before acting on it."
    )


def _borderline_sentence(said: _Said) -> str | None:
    held, decided, where, rate = said.held, said.decided, said.where, said.rate
    reading_refs = (decided or {}).get("reading") or said.quoted.get("reading") or []
    if reading_refs and (found := _reading_sentence(said, reading_refs[0])) is not None:
        return found
    if not held:
        return None
    if decided and decided["references"] and held["detected"]:
        return (
            f"Borderline: {where} beats this audit's null at p = {held['p_value']:.3f}, but held "
            f"together with the held-out rows' tests each gets half the {rate} false-alarm "
            f"rate (p ≤ {percent(held['false_alarm_rate'] / 2)}), and neither reaches it: the "
            f"combined p is {decided['p_value']:.3f}. Repeat the audit over more seeds or with "
            "more held-out rows before acting on it."
        )
    shown_p = decided["p_value"] if decided else held["p_value"]
    return (
        f"Borderline: {where} is above most of this audit's null draws, but not far "
        f"enough to call at a {rate} false-alarm rate (p = {shown_p:.3f}). Repeat "
        "the audit over more seeds (a multirun) or with a larger audit set before acting "
        "on it."
    )


def _no_leak_sentence(said: _Said) -> str | None:
    held = said.held
    if not held:
        return None
    references = (said.decided or {}).get("references") or []
    also = (
        " Nor did "
        + " or ".join(f"{REFERENCE_WORDS[r['test']]} ({p_text(r['p_value'])})" for r in references)
        + "."
        if references
        else ""
    )
    return (
        f"No leak detected: ε̃ = {said.eps:.2f} in {said.game} is within what this audit's null "
        f"draws reach (p = {held['p_value']:.3f}).{also} This run's "
        f"{percent(1 - 2 * held['false_alarm_rate'])} interval for ε̃ is "
        f"{held['interval'][0]:.2f}–{held['interval'][1]:.2f}: a reading of this run, not a "
        "guarantee. It does not show the model is private: a stronger attack or a larger "
        "audit may find a leak."
    )


def _inconclusive_sentence(said: _Said) -> str | None:
    held, null, quoted = said.held, said.null, said.quoted
    if held and "reach" in quoted:
        return (
            f"Inconclusive: at this size the audit could not have called a leak. Even an "
            f"attack right on every guess could not show ε̃ above {quoted['reach']:.2f} in "
            f"{said.game}, within what this audit's null draws reach ({held['threshold']:.2f}): "
            f"the baseline alone already tells the generated records from yours (c_lb = "
            f"{quoted['c_lb']:.2f}). A larger audit set or a closer generator is needed for an "
            "answer."
        )
    if null and "skipped" in null:
        return (
            f"Inconclusive: {said.where}, but {null['skipped']}, so the gap cannot be held to a "
            "false-alarm rate."
        )
    return None


def _rule_before_null_sentence(level: str, said: _Said) -> str:
    """The sentences of documents before the in-audit null (schema < 1.4), and of a level
    whose own sentence does not apply."""
    where = said.where
    if level == "leak_detected":
        return (
            f"This model leaks information about its training data: the audit measured {where}, "
            f"above the {TOLERANCE:g} that models which never saw these records read on "
            f"average.{said.within}"
        )
    if level == "inconclusive":
        return (
            f"Inconclusive: the attack read {where}, but the baseline could not tell the "
            "generated data from the real (c_lb = 0), so this gap cannot be told apart from "
            "the generator's own flaws."
        )
    return (
        f"This audit found no leak beyond what the generated data explains ({where}). That "
        "does not show the model is private: a stronger attack or a larger audit may find one."
    )


_LEVEL_SENTENCES: dict[str, Callable[[_Said], str | None]] = {
    "leak_beyond_claim": _beyond_claim_sentence,
    "clear_leak": _clear_leak_sentence,
    "leak_detected": _leak_sentence,
    "borderline": _borderline_sentence,
    "no_leak_detected": _no_leak_sentence,
    "inconclusive": _inconclusive_sentence,
}
"""Each level's sentence; None where it does not apply (no null holds the call, say), and the
rule before the in-audit null's sentence is said instead."""


def _sentence(
    level: str,
    quoted: JSONDict,
    null: JSONDict | None,
    claim: JSONDict,
    document: JSONDict | None = None,
) -> str:
    said = _said(quoted, null, claim, document or {})
    by_level = _LEVEL_SENTENCES.get(level)
    found = by_level(said) if by_level is not None else None
    return found if found is not None else _rule_before_null_sentence(level, said)


def _o1_section(document: JSONDict) -> JSONDict | None:
    reference = document.get("reference_audits")
    o1 = reference.get("o1") if isinstance(reference, dict) else None
    return o1 if isinstance(o1, dict) else None


def _o1(document: JSONDict) -> float | None:
    """O(1)'s ε_lb where it may be read as a bound (:func:`o1_joins`); None otherwise."""
    o1 = _o1_section(document)
    return finite_number(o1.get("eps_lb")) if o1 is not None and o1_joins(o1) else None


def _o1_outside(document: JSONDict) -> str | None:
    """The one line of a run whose O(1) stays out of the verdict (the contributor's own
    held-out rows, :func:`o1_joins`), with its figure; None where O(1) joins or is absent."""
    o1 = _o1_section(document)
    if o1 is None or o1_joins(o1):
        return None
    eps = finite_number(o1.get("eps_lb"))
    figure = "" if eps is None else f" (it reads ε_lb = {eps:.2f})"
    return (
        f"The O(1) audit on your held-out rows stays out of this verdict{figure}: the audit "
        "did not draw them at random with your members, so a model that only knows data "
        "like them, not your rows, could read the same."
    )


def _rmia_outside(document: JSONDict) -> str | None:
    """The one line of a run whose reference attack stays out of the verdict (held-out rows
    the audit did not draw, or its test not set to decide), with its figure; None where it
    joins or is absent."""
    section = document.get("reference_audits")
    rmia = section.get("rmia") if isinstance(section, dict) else None
    if not isinstance(rmia, dict) or rmia_test(document) is not None:
        return None
    eps = finite_number(rmia.get("eps_lb"))
    figure = "" if eps is None else f" (it reads ε_lb = {eps:.2f})"
    if rmia.get("randomised") is True:
        return (
            f"The reference-model attack (RMIA) on your held-out rows is a figure beside this "
            f"verdict{figure}: its test does not join the decision, as it has not yet passed "
            "the project's judgement on models that never saw the members (docs/RESULTS.md "
            "§28); its rates are shown as what an attacker gains."
        )
    return (
        f"The reference-model attack (RMIA) on your held-out rows stays out of this verdict"
        f"{figure}: the audit did not draw them at random with your members, so rows that "
        "only differ from your members in kind could read the same; its rates are shown as "
        "what an attacker gains."
    )


def _meaning(document: JSONDict, level: str, quoted: JSONDict, null: JSONDict | None) -> list[str]:
    lines = [
        INTERPRETATION,
        f"In {quoted['game']}, c_lb = {quoted['c_lb']:.3f} measures how well the generated "
        "non-members can be told "
        "from real members without the model; ε̃ is what the model's losses add to that: the "
        f"odds of a right guess multiplied by e^ε̃ = {_odds(quoted['eps_tilde'])}.",
    ]
    if null and "skipped" not in null:
        lines.append(
            f"False alarms: this audit drew {null['draws']} times from its own null (the "
            "audit's slots and the ensemble's distinguishers resampled, attack and baseline "
            "together) and calls a leak only where the gap beats all but "
            f"{percent(null['false_alarm_rate'])} of them. That rate is nominal: the draws "
            "cannot see all of the audited model's own training noise. In the project's "
            "validation runs, models that never saw the members read a leak in 0 of 40 runs "
            "(tables, images and text; the project's docs/RESULTS.md, section 13)."
        )
    o1 = _o1(document)
    outside = _o1_outside(document)
    rmia_outside = _rmia_outside(document)
    if rmia_outside is not None:
        lines.append(rmia_outside)
    if outside is not None:
        lines.append(outside)
    elif o1 is None:
        lines.append(
            "No real non-members were held out, so O(1) and RM;RN (lower bounds on ε) are "
            "not available for this run."
        )
    elif o1 > 0 and level in DETECTED:
        lines.append(
            f"With real held-out non-members, the O(1) audit agrees: ε_lb = {o1:.2f}, a lower "
            "bound on ε if membership was randomised." + _per_unit(document)
        )
    elif not (o1 > 0 and level not in DETECTED):  # else a caveat says it
        lines.append(
            f"O(1) ε_lb = {o1:.2f} uses real held-out non-members: a lower bound on ε if "
            "membership was randomised, an approximation of that game otherwise."
            + _per_unit(document)
        )
    return lines


def _per_unit(document: JSONDict) -> str:
    """Where O(1) guessed whole documents (text: docs/SPEC.md §2.4), that sentence."""
    o1 = _o1_section(document) or {}
    if o1.get("unit") != "document":
        return ""
    return (
        " Its guesses are about whole documents, one score each, because documents (not "
        "their chunks) were drawn at random into members and held-out text; the bound is per "
        "document."
    )


def _caveats(
    document: JSONDict, level: str, quoted: JSONDict, null: JSONDict | None, claim: JSONDict
) -> list[str]:
    caveats = []
    quiet = level not in DETECTED
    if quoted["c_lb"] == 0:
        caveats.append(
            f"In {quoted['game']} the baseline's bound c_lb is 0: it could not tell the "
            "generated data from the real, so ε̃ is the attack's whole bound."
            + ("" if null else " This report predates the in-audit null: read it as rough.")
        )
    if quoted["saturated"]:
        caveats.append(
            f"In {quoted['game']} a classifier made only right guesses (saturated): the "
            "figure is limited by how many guesses this audit set allows, not by their "
            "precision; a larger audit set could read it differently."
        )
    if null and "skipped" not in null and null.get("ensemble") == 1:
        caveats.append(
            "With one distinguisher per side (audit.ensemble=1) the null draws cannot see "
            "how much a distinguisher's training moves its bound: the false-alarm rate may "
            "be above the stated one."
        )
    synthetic = (document.get("data") or {}).get("synthetic") or {}
    fidelity = finite_number(synthetic.get("real_vs_synthetic_auc"))
    if quiet and fidelity is not None and fidelity > LOW_FIDELITY_AUC:
        caveats.append(
            f"The generated rows are easy to tell from real ones (AUC {fidelity:.2f}; 0.5 is "
            "indistinguishable): a leak can hide behind what the baseline already sees."
        )
    blind = _blind_beats(document)
    if blind:
        caveats.append(blind)
    for name in claim.get("inconclusive") or []:
        caveats.append(
            f"The {name}'s guesses beat the declared guarantee's curve, but against generated "
            "non-members, which a DP guarantee says nothing about: no evidence against it."
        )
    o1 = _o1(document)
    if quiet and o1 is not None and o1 > 0:
        caveats.append(
            f"With real held-out non-members, the O(1) audit reads ε_lb = {o1:.2f}: "
            "this model does leak something about its training rows, which the audit against "
            "generated rows did not establish."
        )
    reach = _reach(document, quoted, claim, quiet)
    if reach:
        caveats.append(reach)
    size = audited_size(document)
    if size:
        caveats.append(size)
    if null is None:
        caveats.append(
            "This report predates the in-audit null (schema < 1.4): its level follows the "
            f"earlier rule (ε̃ above {TOLERANCE:g} in a game with c_lb > 0), whose false-alarm "
            "rate was not measured per run."
        )
    return caveats


AUDITED = "How much was audited:"
"""How :func:`audited_size`'s caveat begins: pages show it beside the answer, not among the
technical caveats."""


def split_caveats(caveats: list[str]) -> tuple[list[str], list[str]]:
    """A verdict's caveats as pages show them: (how much was audited, shown beside the
    answer; the technical rest, behind the figures' disclosure)."""
    audited = [line for line in caveats if line.startswith(AUDITED)]
    return audited, [line for line in caveats if not line.startswith(AUDITED)]


def audited_size(document: JSONDict) -> str | None:
    """How much of her data the game scored, and how to score more (issue 72: 304 of her 2,400
    members were audited and she was not told): the members in the game against those given,
    where the others went, and the held-out rows O(1) read; None where the document does not
    say (an uploaded one without its ``data`` section)."""
    data = got if isinstance(got := document.get("data"), dict) else {}
    split = got if isinstance(got := data.get("split"), dict) else {}
    parts = got if isinstance(got := split.get("members"), dict) else {}
    game = got if isinstance(got := data.get("game"), dict) else {}
    given, scored = bounded_count(data.get("members")), bounded_count(game.get("members_in_audit"))
    audit_part = bounded_count(parts.get("audit"))
    if given is None or scored is None or audit_part is None or not given:
        return None
    others = {
        key: bounded_count(parts.get(key)) for key in ("generator", "attack_train", "attack_val")
    }
    if None in others.values():
        return None
    trained = (others["attack_train"] or 0) + (others["attack_val"] or 0)
    held = got if isinstance(got := split.get("nonmembers"), dict) else {}
    held_audit, held_given = bounded_count(held.get("audit")), bounded_count(data.get("nonmembers"))
    held_words = (
        f"; of the {held_given:,} held-out rows, {held_audit:,} were the reference audits' "
        "non-members"
        if held_audit and held_given
        else ""
    )
    text = (
        f"{AUDITED} the game scored {scored:,} of the {given:,} members given "
        f"(its audit part holds {audit_part:,}, about half of them drawn into the game); "
        f"{others['generator']:,} trained the generator and {trained:,} the distinguishers"
        f"{held_words}."
    )
    if audit_part < given / 2:
        text += (
            " To score more of them, give the audit part a larger share (data.split.audit, "
            "0.25 by default, with data.split.generator lowered to leave room), or give "
            "more members."
        )
    return text


def _blind_beats(document: JSONDict) -> str | None:
    """Where a classifier that sees no model (``baseline.blind``, docs/SPEC.md §2.9) beat the
    baseline's bound in either game: the caveat in words, with the figures of the game it beat
    the baseline in (the two-sided one first); None otherwise or without the section."""
    baseline = document.get("baseline")
    blind = baseline.get("blind") if isinstance(baseline, dict) else None
    if not isinstance(blind, dict) or not blind.get("beats_baseline"):
        return None
    two_sided = document.get("two_sided")
    games = [
        ("the two-sided game", blind.get("c_lb_two_sided"),
         two_sided.get("c_lb") if isinstance(two_sided, dict) else None),
        ("the paper's game", blind.get("c_lb"), document.get("c_lb")),
    ]  # fmt: skip
    shown = ""
    for game, mine, theirs in games:
        mine, theirs = finite_number(mine), finite_number(theirs)
        if mine is not None and theirs is not None and mine > theirs:
            shown = f" (in {game}, its c_lb {mine:.2f} against the baseline's {theirs:.2f})"
            break
    return (
        "A classifier that sees no model, only the words of each example, tells the generated "
        f"examples from the members better than the baseline does{shown}: they are told apart "
        "without any model, so ε̃ may overstate what the model adds."
    )


def _reach(document: JSONDict, quoted: JSONDict, claim: JSONDict, quiet: bool) -> str | None:
    """What this audit's size could not show, in words: where no leak was called, or the
    declared ε is above the most this size can show; None otherwise or without a
    ``detectable`` section (documents before 1.2)."""
    reach = document.get("detectable")
    reach = reach if isinstance(reach, dict) else {}
    most, doubled = (
        finite_number(reach.get("eps_tilde_max")),
        finite_number(reach.get("eps_tilde_max_doubled")),
    )
    members = finite_number(reach.get("members"))
    if most is None or doubled is None or members is None or doubled <= 0:
        return None
    summary = got if isinstance(got := claim.get("summary"), dict) else {}
    epsilons = got if isinstance(got := summary.get("epsilons"), dict) else {}
    claimed = finite_number(epsilons.get("1e-05"))
    beyond = claimed is not None and claimed > most
    if not (quiet or beyond):
        return None
    text = (
        f"At this size ({int(members):,} members in the audit set) the audit cannot show ε̃ "
        f"above {most:.2f} even if every member guess were right; twice the members would "
        f"raise that to {doubled:.2f}."
    )
    if beyond:
        text += f" The declared ε = {claimed:.2f} is beyond what it can confirm."
    return text


def verdict(document: JSONDict) -> JSONDict:
    """The ``verdict`` section of a report document (schema 1.0 or later): ``level`` (one of
    :data:`WORDS`), ``headline``, ``detected`` (the level says the model leaks),
    ``false_alarm_rate`` (α the decision is held to; None without an in-audit null),
    ``sentence``, ``quote`` (figure, value in nats, game, confidence and ``interval``, this
    run's [low, high] of ε̃ or None), ``null`` (p-value, draws, threshold, or why there is
    none), ``meaning`` and ``caveats`` (lists of sentences) and ``claim`` (the declared
    guarantee in words)."""
    claim = document.get("claim") or {}
    games = games_of(document)
    null = read_null(document, games)
    level, quoted = level_of(document, games, null, claim)
    held = null if null and "skipped" not in null else None
    return {
        "level": level,
        "headline": WORDS[level],
        "detected": level in DETECTED,
        "false_alarm_rate": held["false_alarm_rate"] if held else None,
        "sentence": _sentence(level, quoted, null, claim, document),
        "quote": {
            "figure": "ε̃",
            "value": quoted["eps_tilde"],
            "game": quoted["key"],
            "confidence": float(document["confidence"]),
            "interval": list(held["interval"]) if held else None,
            "calls": quoted_calls(document, quoted),
            "saturated": quoted["saturated"],
        },
        "null": (
            {key: held[key] for key in ("p_value", "draws", "threshold", "false_alarm_rate")}
            if held
            else ({"skipped": null["skipped"]} if null else None)
        ),
        "decision": _decision_dict(quoted.get("decision")),
        "tolerance": None if null else TOLERANCE,
        "meaning": _meaning(document, level, quoted, null),
        "caveats": _caveats(document, level, quoted, null, claim),
        "claim": list(claim.get("statements") or ["The model's owner declares no guarantee."]),
        "next_steps": next_steps(document, level, quoted, null),
    }


def _decision_dict(decided: JSONDict | None) -> JSONDict | None:
    """The decision's tests as the document keeps them (None without an in-audit null)."""
    if not decided:
        return None
    return {
        "p_value": decided["p_value"],
        "tests": ["null"] + [r["test"] for r in decided["references"]],
        "found_by": list(decided["found_by"]),
        "references": [dict(r) for r in decided["references"]],
    }


def next_steps(
    document: JSONDict, level: str, quoted: JSONDict, null: JSONDict | None = None
) -> list[str]:
    """What to do next, per level and per finding (docs/SPEC.md §3.1): sentences a
    contributor or the model's owner can act on."""
    steps: list[str] = []
    exposure = got if isinstance(got := document.get("exposure"), dict) else {}
    listed = got if isinstance(got := exposure.get("groups"), list) else []
    rate = finite_number(exposure.get("false_alarm_rate")) or 0.05
    standing = sum(
        1
        for g in listed
        if isinstance(g, dict)
        and g.get("stands_out") is True
        and (finite_number(g.get("p")) or 1.0) <= rate
    )
    decided = got if isinstance(got := quoted.get("decision"), dict) else {}
    retrain = retrain_advice(document)
    remove = (
        "For you: if your rows should not be in this model, ask its owner to retrain without "
        "them; delete the files you uploaded once you are done (in the console, “Your data "
        "and models”; on the command line, panoramia data delete with the upload's name)."
    )
    if level == "leak_beyond_claim":
        steps += [
            "The model does not meet the guarantee its owner declares: ask for the claim to be "
            "withdrawn or the model retrained with the noise the claim needs.",
            retrain,
            remove,
        ]
    elif level in ("clear_leak", "leak_detected"):
        steps += [retrain, remove]
        if standing:
            steps.insert(
                1,
                f"{standing} group{'s stand' if standing > 1 else ' stands'} out in the report's "
                "section on exposed groups: their members are exposed beyond what the data "
                "alone gives away; check first whether their rows must be in the training "
                "data.",
            )
    elif level == "borderline":
        steps.append(
            "Repeat the audit over more seeds (repeats of 3 or more: the console's Repeats, "
            "or a multirun over seed) and read the pooled figure; a larger audit set "
            "(more member rows)"
            + (" also sharpens" if _o1_outside(document) else " or more held-out rows also sharpen")
            + " the answer."
        )
    elif level == "no_leak_detected":
        steps.append(
            "Nothing in this run calls for action, but it does not show the model is private: "
            "audit it again whenever the model is retrained"
            + (
                "."
                if decided.get("references") or _o1_section(document) is not None
                else ", and give held-out rows (rows the model never saw) so the O(1) and "
                "RM;RN audits run too."
            )
        )
    elif "reach" in quoted:
        steps.append(
            "At this size no answer was possible: audit with more member rows, or with a "
            "generator closer to your data (the baseline tells its rows from yours)."
        )
    else:
        steps.append(
            "Audit with mirrored sides (the defaults) so the gap can be held to a false-alarm rate."
        )
    if standing and level not in DETECTED:
        steps.append(
            f"{standing} group{'s stand' if standing > 1 else ' stands'} out beyond chance "
            "although the run calls no leak: repeat the audit to see whether it holds."
        )
    if quoted.get("saturated") and level not in ("clear_leak", "leak_beyond_claim"):
        steps.append(
            "The quoted game is saturated: a larger audit set lets the figure read more than "
            "a count of error-free calls."
        )
    synthetic = (
        (document.get("data") or {}).get("synthetic")
        if isinstance(document.get("data"), dict)
        else None
    )
    fidelity = finite_number((synthetic or {}).get("real_vs_synthetic_auc"))
    if level not in DETECTED and fidelity is not None and fidelity > LOW_FIDELITY_AUC:
        steps.append(
            "The generated rows are easy to spot: a better generator (more rows to train it, "
            "or another kind of generator) would let a hidden leak show."
        )
    return steps


TREE_FORMATS = frozenset({"xgboost-json", "lightgbm-text", "catboost-cbm"})
"""Targets that are boosted trees: DP-SGD does not train them."""
NETWORK_FORMATS = frozenset({"torch-safetensors", "torchscript", "hf-causal-lm", "peft"})
"""Targets trained by gradient descent on a network: DP-SGD trains them."""


def retrain_advice(document: JSONDict) -> str:
    """What the model's owner can retrain with, by the kind of model the report names
    (``target.identity.format``): boosted trees, a network, or a model of another or unknown
    kind (an ONNX graph, scikit-learn); plain words, no markup, any surface."""
    target = got if isinstance(got := document.get("target"), dict) else {}
    identity = got if isinstance(got := target.get("identity"), dict) else {}
    kind = identity.get("format")
    if kind in TREE_FORMATS:
        return (
            "For the model's owner: fewer or shallower trees, a larger minimum weight per "
            "leaf, row and column subsampling and stronger L2 regularisation shrink what a "
            "boosted model's scores give away; for a guarantee, train it with a "
            "differentially private boosting method and declare that claim."
        )
    if kind in NETWORK_FORMATS or kind is None or kind == "":
        return (
            "For the model's owner: retrain with DP-SGD (the noise σ that keeps every "
            "membership attack's advantage under 0.1 comes from the epochs, the batch size "
            "and the number of training rows: panoramia calibrate --epochs E --batch-size B "
            "--dataset-size N --target-advantage 0.1); fewer epochs, early stopping or "
            "stronger regularisation also shrink what the losses give away."
        )
    return (
        "For the model's owner: stronger regularisation, fewer passes over the data or early "
        "stopping shrink what the model's scores give away; for a guarantee, retrain it with "
        "differential privacy (DP-SGD for a network) and declare that claim."
    )


PLAIN = {
    "leak_beyond_claim": "Yes: this model gives away which records it was trained on, more than "
    "its declared privacy guarantee allows.",
    "clear_leak": "Yes, clearly: this model gives away which records it was trained on.",
    "leak_detected": "Yes: this model gives away something about which records it was trained on.",
    "borderline": "Maybe: this run points to a small leak but cannot call it; repeat the audit "
    "before acting on it.",
    "no_leak_detected": "No leak found by this audit, which is not proof that there is none.",
    "inconclusive": "Cannot tell: this audit cannot settle it (see why below).",
}
"""The answer in plain words, one per level: the line a reader sees first."""


def plain_line(found: JSONDict | None) -> str | None:
    """The verdict's answer in plain words (:data:`PLAIN`), and, for a leak carried only by
    non-member calls, that it does not point at her records (``found``: a ``verdict``
    section or a digest's verdict; None where its level cannot be read)."""
    if not isinstance(found, dict) or found.get("level") not in PLAIN:
        return None
    line = PLAIN[found["level"]]
    quote = got if isinstance(got := found.get("quote"), dict) else {}
    calls = quote.get("calls", found.get("calls"))
    if (
        found["level"] in DETECTED
        and isinstance(calls, dict)
        and calls.get("member") == 0
        and isinstance(calls.get("nonmember"), int)
        and calls["nonmember"] > 0
    ):
        line += (
            " It shows in how the model treats records it never saw, not by picking out "
            "your records: see “What an attacker gains” for your records."
        )
    return line
