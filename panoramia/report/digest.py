"""A report's digest: the few figures and the verdict a listing or a console page shows,
computed once when the report is stored, from any document, however malformed.

A stored document may have been uploaded by its contributor: its fields are not trusted. The
digest never copies the document's own ``verdict``; it reads the verdict off the figures
(:func:`panoramia.report.verdict.verdict`), and keeps only finite numbers, short strings and
short lists. A document whose figures cannot be read gets ``verdict: None``.
"""

from __future__ import annotations

from typing import Any, cast

from panoramia.measure.jsonable import JSONDict
from panoramia.report.reference_words import NO_HELD_OUT, gave_no_held_out, reference_attack_reading
from panoramia.report.verdict import WORDS, verdict
from panoramia.report.verdict_rule import finite_number as number
from panoramia.report.verdict_rule import o1_joins

MAX_TEXT = 2000
"""Characters kept of one sentence."""
MAX_ITEMS = 20
"""Sentences kept of one list (caveats, claim statements, meaning)."""
DIGEST_VERSION = 6
"""2 adds the verdict's ``detected``, ``false_alarm_rate``, the quote's ``interval`` and the
null's ``p_value`` (reports of schema 1.4); 3 the null's ``threshold`` and ``attacker``
(schema 1.5); 4 the verdict's ``next_steps``, ``calls`` and decision, the attacker's
intervals and member-side sentence, and ``exposure`` counts (schema 1.6); 6 the reference
attack's figures and sentence (``reference_attack``) and ``no_held_out``."""


def _text(value: Any) -> str:
    return str(value)[:MAX_TEXT] if isinstance(value, str | int | float) else ""


def _texts(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [_text(item) for item in value[:MAX_ITEMS] if isinstance(item, str)]


def _section(document: JSONDict, key: str) -> JSONDict:
    found = document.get(key)
    return found if isinstance(found, dict) else {}


def _verdict(document: JSONDict) -> JSONDict | None:
    try:
        found = verdict(document)
    except Exception:
        return None
    quote = found["quote"]
    value, confidence = number(quote.get("value")), number(quote.get("confidence"))
    if found["level"] not in WORDS or value is None or confidence is None:
        return None
    interval = quote.get("interval")
    interval = [number(end) for end in interval] if isinstance(interval, list) else None
    null = got if isinstance(got := found.get("null"), dict) else {}
    return {
        "level": found["level"],
        "headline": WORDS[found["level"]],
        "detected": bool(found.get("detected")),
        "false_alarm_rate": number(found.get("false_alarm_rate")),
        "p_value": number(null.get("p_value")),
        "null_threshold": number(null.get("threshold")),
        "sentence": _text(found["sentence"]),
        "quote": {
            "value": value,
            "game": _text(quote.get("game")),
            "confidence": confidence,
            "interval": interval if interval and None not in interval else None,
        },
        "caveats": _texts(found["caveats"]),
        "claim": _texts(found["claim"]),
        "meaning": _texts(found["meaning"]),
        "next_steps": _texts(found.get("next_steps")),
        "calls": _calls(quote.get("calls")),
        "decision_p_value": number((found.get("decision") or {}).get("p_value")),
        "decision_tests": _texts((found.get("decision") or {}).get("tests")),
    }


def _calls(value: Any) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    found = {key: value.get(key) for key in ("member", "nonmember")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in found.values()):
        return None
    return cast("dict[str, int]", found)  # each value checked to be an int above


def _pair(value: Any) -> list[float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    pair = [number(end) for end in value]
    return None if None in pair else cast("list[float]", pair)


def _exposure(document: JSONDict) -> JSONDict | None:
    """How many groups were tested and how many stand out, and by which statistic (counts
    only: the groups' values are her data, which a deletion takes out of the document, not
    the digest)."""
    section = _section(document, "exposure")
    groups = section.get("groups")
    if not isinstance(groups, list):
        return None
    tested = [g for g in groups if isinstance(g, dict) and number(g.get("p")) is not None]
    rate = number(section.get("false_alarm_rate")) or 0.05
    return {
        "statistic": "rank" if section.get("statistic") == "rank" else "share",
        "tested": len(tested),
        "standing_out": sum(
            1
            for g in tested
            if g.get("stands_out") is True and cast(float, number(g.get("p"))) <= rate  # tested
        ),
    }


def _attacker(document: JSONDict) -> JSONDict | None:
    """The attacker terms of both sides (finite numbers only) and the sentence, written anew
    from them (never the document's own text)."""
    from panoramia.report.attacker import (
        LOW_FPRS,
        member_side_sentence,
        sentence,
        two_sided_sentence,
    )

    section = _section(document, "attacker")
    sides: dict[str, dict[str, Any]] = {}
    for side in ("attack", "baseline"):
        found = _section(section, side)
        rates = _section(found, "tpr_at_fpr")
        intervals = _section(found, "tpr_at_fpr_interval")
        sides[side] = {
            "auc": number(found.get("auc")),
            "auc_interval": _pair(found.get("auc_interval")),
            "advantage": number(found.get("advantage")),
            "top_precision": number(found.get("top_precision")),
            "tpr_at_fpr": {fpr: number(rates.get(fpr)) for fpr in LOW_FPRS},
            "tpr_at_fpr_interval": {fpr: _pair(intervals.get(fpr)) for fpr in LOW_FPRS},
        }
    fraction = number(section.get("flagged_fraction"))
    if fraction is None or sides["attack"]["auc"] is None:
        return None
    words = sentence(fraction, sides["attack"]["top_precision"], sides["baseline"]["top_precision"])
    calls = _section(section, "two_sided")
    try:
        guesses = {side: {key: int(value) for key, value in _section(calls, side).items()}
                   for side in ("attack", "baseline")}  # fmt: skip
        m = int(document.get("m") or 0)
        if calls and m > 0:
            words += " " + two_sided_sentence(guesses["attack"], guesses["baseline"], m)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        pass
    level = number(section.get("interval_level"))
    eps_member = number(document.get("eps_tilde"))
    members = number(_section(_section(document, "data"), "game").get("members_in_audit"))
    member_side = (
        member_side_sentence(
            sides["attack"], sides["baseline"], eps_member, level, int(members or 0)
        )
        if level is not None and eps_member is not None and members
        else ""
    )
    return sides | {
        "flagged_fraction": fraction,
        "sentence": _text(words),
        "member_side": _text(member_side),
        "interval_level": level,
    }


def with_own_verdict(document: JSONDict) -> JSONDict:
    """``document`` with its ``verdict`` read off its own figures (an uploaded one is never
    kept); without one where its figures cannot be read."""
    kept = {key: value for key, value in document.items() if key != "verdict"}
    try:
        return kept | {"verdict": verdict(kept)}
    except Exception:
        return kept


def _declared_claim(summary: JSONDict) -> JSONDict | None:
    """The declared guarantee the document's claim section summarises, validated as the API
    validates a submitted one (``panoramia.accounting.claims``); None for none or a bad one."""
    from panoramia.accounting.claims import claim_from_dict

    claim = summary.get("claim")
    if not isinstance(claim, dict) or claim.get("kind") in (None, "none"):
        return None
    try:
        return claim_from_dict(claim).to_dict()
    except Exception:
        return None


def report_digest(document: Any) -> dict[str, Any]:
    """The digest of a report document (see the module docstring): ``verdict`` (or None), the
    one-sided ``c_plus_eps_lb``, the two-sided ``eps_tilde_two_sided``, ``c_lb_two_sided``,
    ``c_plus_eps_lb_two_sided``, ``o1_eps_lb`` with ``o1_in_verdict`` (whether it joins the
    decision; None without O(1)) and ``o1_unit`` (``example`` or ``document``),
    ``confidence``, the claim's ``claimed_epsilon`` (at δ = 1e-5) and ``claimed_mu``,
    ``declared_claim`` (the claim itself, validated, or None), and ``mu_tilde``, ``rmrn_mu``
    and ``claimed_mu_replace_one`` (the ``gdp`` section, docs/SPEC.md §2.8: the claim's μ as
    the game reads it); every figure a finite float or None (nats, except the confidence, a
    probability)."""
    document = document if isinstance(document, dict) else {}
    two_sided = _section(document, "two_sided")
    summary = _section(_section(document, "claim"), "summary")
    epsilons = summary.get("epsilons")
    o1 = _section(_section(document, "reference_audits"), "o1")
    return {
        "digest_version": DIGEST_VERSION,
        "verdict": _verdict(document),
        "c_plus_eps_lb": number(document.get("c_plus_eps_lb")),
        "eps_tilde_two_sided": number(two_sided.get("eps_tilde")),
        "c_lb_two_sided": number(two_sided.get("c_lb")),
        "c_plus_eps_lb_two_sided": number(two_sided.get("c_plus_eps_lb")),
        "o1_eps_lb": number(o1.get("eps_lb")),
        "o1_in_verdict": (o1_joins(o1) if o1 else None),
        "o1_unit": (o1.get("unit") if o1.get("unit") in ("example", "document") else None),
        "confidence": number(document.get("confidence")),
        "claimed_epsilon": number(epsilons.get("1e-05")) if isinstance(epsilons, dict) else None,
        "claimed_mu": number(summary.get("mu")),
        "declared_claim": _declared_claim(summary),
        "mu_tilde": number(_section(document, "gdp").get("mu_tilde")),
        "rmrn_mu": number(_section(_section(document, "gdp"), "rmrn").get("mu_lb")),
        "claimed_mu_replace_one": number(_section(document, "gdp").get("claimed_mu")),
        "attacker": _attacker(document),
        "reference_attack": reference_attack_reading(document),
        "no_held_out": NO_HELD_OUT if gave_no_held_out(document) else None,
        "exposure": _exposure(document),
    }
