"""The verdict's rule, apart from its words (docs/SPEC.md §3.1): the games a document reports,
its in-audit null read and checked against its own figures, the reference audits that join
the decision, the decision itself and the graded level. Everything here reads a finished
report document (a stored or uploaded one alike) and returns figures; the sentences, the
caveats and what to do next are :mod:`panoramia.report.verdict`'s.
"""

from __future__ import annotations

import math
from typing import Any

from panoramia.measure.jsonable import JSONDict
from panoramia.report import SCHEMA_VERSIONS

STRONG = math.log(2.0)
"""ε̃ (nats) from which a detected leak is called clear when the low end of its interval
reaches it: e^ε̃ = 2, the model doubles an attacker's odds over the generated data's."""


TOLERANCE = 0.1
"""The rule before the in-audit null (schema < 1.4): ε̃ (nats) up to which a run read as no
leak."""


DETECTED = ("leak_beyond_claim", "clear_leak", "leak_detected")
"""The levels that say the model leaks."""


GAME_WORDS = {"one_sided": "the paper's one-sided game", "two_sided": "the two-sided game"}


def finite_number(value: object) -> float | None:
    """``value`` as a finite float; None for anything else: bools, strings, NaN, ∞ (uploaded
    documents vary)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:  # an int too large for a float
        return None


MAX_COUNT = 10**9
"""The largest count a document's test may hold (guesses, grid): more is read as unreadable."""


def bounded_count(value: object) -> int | None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
        return None
    return value


def games_of(document: JSONDict) -> dict[str, JSONDict]:
    """The games this run reports by key: the paper's one-sided game, and the two-sided one
    where it was played; each with its figures."""
    games: dict[str, dict[str, Any]] = {
        "one_sided": {
            "key": "one_sided",
            "eps_tilde": float(document["eps_tilde"]),
            "c_lb": float(document["c_lb"]),
            "c_plus_eps_lb": float(document["c_plus_eps_lb"]),
            "saturated": bool(document.get("saturated")),
        }
    }
    two_sided = document.get("two_sided")
    if isinstance(two_sided, dict) and "eps_tilde" in two_sided:
        games["two_sided"] = {
            "key": "two_sided",
            "eps_tilde": float(two_sided["eps_tilde"]),
            "c_lb": float(two_sided["c_lb"]),
            "c_plus_eps_lb": float(two_sided["c_plus_eps_lb"]),
            "saturated": bool(two_sided.get("saturated")),
        }
    for game in games.values():
        game["game"] = GAME_WORDS[game["key"]]
    return games


MALFORMED = "this report's null section cannot be read or does not match its figures"
"""Why a schema-1.4 document without a usable ``null`` section has no null to hold its gap to."""


def _before_null(version: object) -> bool:
    """Whether a document of schema ``version`` was written before the null section (1.4):
    versions compare by their numbers (1.10 comes after 1.4); an unknown one is not."""
    return str(version) in SCHEMA_VERSIONS[: SCHEMA_VERSIONS.index("1.4")]


def read_null(document: JSONDict, games: dict[str, JSONDict] | None = None) -> JSONDict | None:
    """The document's null test, checked against the document's own figures and recomputed
    from its counts: ``game``, ``draws``, ``exceed``, ``p_value``, ``false_alarm_rate``,
    ``threshold``, ``interval``, ``detected``, ``borderline``, ``ensemble``;
    ``{"skipped": reason}`` when the audit had none or the section cannot be used (an uploaded
    document's is not trusted: its game must be the pre-registered one, its observed gap the
    game's ε̃, its detection its threshold's); None for a document written before the null
    (schema < 1.4, no section)."""
    section = document.get("null")
    if section is None and _before_null(document.get("schema_version", "1.4")):
        return None
    if not isinstance(section, dict):
        return {"skipped": MALFORMED}
    if isinstance(section.get("skipped"), str):
        return {"skipped": section["skipped"][:500]}
    games = games if games is not None else games_of(document)
    draws, exceed = bounded_count(section.get("draws")), bounded_count(section.get("exceed"))
    rate = finite_number(section.get("false_alarm_rate"))
    observed, threshold = (
        finite_number(section.get("observed")),
        finite_number(section.get("threshold")),
    )
    interval = section.get("interval")
    high = finite_number(interval[1]) if isinstance(interval, list) and len(interval) == 2 else None
    expected_game = "two_sided" if "two_sided" in games else "one_sided"
    if (
        section.get("game") != expected_game
        or draws is None
        or exceed is None
        or not 0 <= exceed <= draws
        or rate is None
        or not 0 < rate < 0.5
        or observed is None
        or threshold is None
        or high is None
        or abs(max(0.0, observed) - games[expected_game]["eps_tilde"]) > 1e-6
    ):
        return {"skipped": MALFORMED}
    p_value = (1 + exceed) / (draws + 1)
    detected = p_value <= rate
    if detected != (observed > threshold):
        return {"skipped": MALFORMED}
    low = max(0.0, observed - threshold)
    return {
        "game": expected_game,
        "draws": draws,
        "exceed": exceed,
        "p_value": p_value,
        "false_alarm_rate": rate,
        "threshold": threshold,
        "interval": [low, max(low, high)],
        "detected": detected,
        "borderline": p_value <= 2 * rate,
        "ensemble": bounded_count(section.get("ensemble")),
    }


def _legacy_level(games: dict[str, JSONDict], claim: JSONDict) -> tuple[str, JSONDict]:
    """The rule of schema 1.1–1.3 (no in-audit null): the larger ε̃ of the games whose c_lb
    is above 0, against :data:`TOLERANCE`."""
    reliable = [g for g in games.values() if g["c_lb"] > 0]
    quoted = max(reliable or games.values(), key=lambda g: g["eps_tilde"])
    if claim.get("violation"):
        return "leak_beyond_claim", quoted
    if reliable and quoted["eps_tilde"] > TOLERANCE:
        return "leak_detected", quoted
    loudest = max(games.values(), key=lambda g: g["eps_tilde"])
    if not reliable and loudest["eps_tilde"] > TOLERANCE:
        return "inconclusive", loudest
    return "no_leak_detected", quoted


def game_reach(document: JSONDict, quoted: JSONDict) -> float | None:
    """The most ε̃ the quoted game could show at this audit's size, every guess right (nats):
    the one-sided game's ``detectable.eps_tilde_max``; the two-sided game's
    logit(α_pair^(1/m)) − c_lb. None where the document does not say."""
    if quoted["key"] == "two_sided":
        from panoramia.measure.bounds import saturation_ceiling

        section = got if isinstance(got := document.get("two_sided"), dict) else {}
        alpha = finite_number(section.get("alpha_per_test"))
        m = finite_number(document.get("m"))
        if alpha is None or m is None or not 0 < alpha < 1 or m < 1:
            return None
        c_lb: float = quoted["c_lb"]
        return max(0.0, float(saturation_ceiling(int(m), alpha)) - c_lb)
    reach = got if isinstance(got := document.get("detectable"), dict) else {}
    return finite_number(reach.get("eps_tilde_max"))


def o1_joins(audit: JSONDict) -> bool:
    """Whether an O(1) section may join the decision: its held-out rows were drawn at random
    with the members (``randomised``; absent in documents before 2026-12-02, which take it as
    they did). A contributor's own held-out rows may differ from her members in kind (other
    authors, dates, topics), and a model that only knows rows like them would read the same
    (docs/SPEC.md §3.1, level 8, as amended 2026-12-02)."""
    return audit.get("randomised", True) is True  # anything but true (0, "false") stays out


def _counted_test(name: str, audit: JSONDict, document: JSONDict) -> JSONDict | None:
    """A guessing game's test of ε = 0 from its own counts (O(1)'s, or the reference attack's
    O(1) game on pairs): min(1, n_grid · P[Bin(r, ½) ≥ v]) at its best (k₊, k₋), never its
    stored p. None where it cannot be read, its confidence is not the document's, it is
    relaxed (δ > 0), or its bound does not follow from that p."""
    from panoramia.measure.bounds import p_at_zero

    r, v, n = (
        bounded_count(audit.get("r")),
        bounded_count(audit.get("v")),
        bounded_count(audit.get("n_grid")),
    )
    eps = finite_number(audit.get("eps_lb"))
    confidence = finite_number(audit.get("confidence"))
    expected = finite_number(document.get("confidence"))
    if (
        r is None or v is None or n is None or n < 1 or not 0 <= v <= r
        or eps is None or confidence is None or expected is None
        or not 0 < confidence < 1 or abs(confidence - expected) > 1e-9
        or finite_number(audit.get("delta", 0.0)) != 0.0
    ):  # fmt: skip
        return None
    p_value = p_at_zero([r], [v], n)
    if (p_value <= 1 - confidence) != (eps > 0):
        return None  # its bound does not follow from its own counts
    found: JSONDict = {"test": name, "p_value": p_value, "eps_lb": eps, "confidence": confidence}
    member, nonmember = bounded_count(audit.get("k_plus")), bounded_count(audit.get("k_minus"))
    if member is not None and nonmember is not None and member + nonmember == r:
        found |= {"calls": {"member": member, "nonmember": nonmember}, "right": v}
    return found


def o1_test(document: JSONDict) -> JSONDict | None:
    """The O(1) reference audit's test of ε = 0 (docs/SPEC.md §3.1, level 8, as amended
    2026-11-27 03:15: RM;RN does not join, as its trained distinguisher also sees the
    examples, and a held-out split whose rows differ from the members' — text's, by
    document — let it call all 3 text controls of the judgement), from its own counts
    (:func:`_counted_test`); None also where its held-out rows were not drawn at random with
    the members (:func:`o1_joins`). Keys: ``test``, ``p_value``, ``eps_lb``, ``confidence``."""
    section = document.get("reference_audits")
    audit = section.get("o1") if isinstance(section, dict) else None
    if not isinstance(audit, dict) or not o1_joins(audit):
        return None
    return _counted_test("o1", audit, document)


def rmia_test(document: JSONDict) -> JSONDict | None:
    """The reference attack's test of ε = 0 (docs/SPEC.md §3.1, level 8, as amended
    2026-12-07): RMIA's O(1) game on fair-coin pairs of a member and a held-out row, from its
    own counts (:func:`_counted_test`); None where the document has none, where its section
    does not say it ``decides`` (``audit.real_nonmembers.rmia_decides``: off by default since
    its judgement did not pass), or where its held-out rows were not drawn at random with
    the members (``randomised`` must be true). LiRA, beside it, is a figure."""
    section = document.get("reference_audits")
    rmia = section.get("rmia") if isinstance(section, dict) else None
    game = rmia.get("test") if isinstance(rmia, dict) else None
    if not isinstance(game, dict) or rmia.get("randomised") is not True:  # type: ignore[union-attr]
        return None
    if rmia.get("decides") is not True:  # type: ignore[union-attr]
        return None  # a figure: its judgement did not pass (the default since 2026-12-07)
    if game.get("randomised") is not True:
        return None
    return _counted_test("rmia", game, document)


def reference_tests(document: JSONDict) -> list[JSONDict]:
    """The reference audits that join the decision, in order: O(1), then RMIA."""
    return [test for test in (o1_test(document), rmia_test(document)) if test is not None]


def decision(
    null: JSONDict, references: list[JSONDict], reading: list[JSONDict] | None = None
) -> JSONDict:
    """The decision of one run (docs/SPEC.md §3.1, level 8): the in-audit null's p alone, or,
    with reference audits, min(1, 2 · min(p, p_ref)), p_ref = min(1, R · min_j p_j);
    ``detected`` at α, ``borderline`` at 2α or where a reference audit reads ε_lb > 0 at its
    own confidence; ``found_by``: the tests whose own share of α calls it."""
    rate = null["false_alarm_rate"]
    if not references:
        return {"p_value": null["p_value"], "detected": null["detected"],
                "borderline": null["borderline"] or bool(reading), "references": [],
                "reading": list(reading or []),
                "found_by": ["null"] if null["detected"] else []}  # fmt: skip
    p_ref = min(1.0, len(references) * min(r["p_value"] for r in references))
    combined = min(1.0, 2 * min(null["p_value"], p_ref))
    detected = combined <= rate
    found_by = []
    if detected:
        if 2 * null["p_value"] <= rate:
            found_by.append("null")
        found_by += [r["test"] for r in references
                     if 2 * len(references) * r["p_value"] <= rate]  # fmt: skip
    reads = any(r["eps_lb"] > 0 for r in [*references, *(reading or [])])
    return {
        "p_value": combined,
        "detected": detected,
        "borderline": combined <= 2 * rate or reads,
        "references": references,
        "reading": list(reading or []),
        "p_reference": p_ref,
        "found_by": found_by,
    }


def level_of(
    document: JSONDict, games: dict[str, JSONDict], null: JSONDict | None, claim: JSONDict
) -> tuple[str, JSONDict]:
    """The level and the quoted game's figures; a no-leak run whose quoted game could not
    have called one (:func:`game_reach`) is inconclusive (docs/SPEC.md §3.1, level 7); with
    reference audits, the decision of level 8 (:func:`decision`), kept in the figures under
    ``decision``."""
    if null is None:
        return _legacy_level(games, claim)
    if "skipped" in null:
        quoted = games.get("two_sided", games["one_sided"])
    else:
        quoted = games.get(null["game"], games["one_sided"])
    references = reference_tests(document)
    reading = [test for test in references if test["eps_lb"] > 0]
    if claim.get("violation"):
        if "skipped" not in null:
            quoted = quoted | {"decision": decision(null, references, reading)}
        return "leak_beyond_claim", quoted
    if "skipped" in null:
        if quoted["eps_tilde"] > 0:
            return "inconclusive", quoted
        return ("borderline" if reading else "no_leak_detected"), quoted | {"reading": reading}
    decided = decision(null, references, reading)
    quoted = quoted | {"decision": decided}
    if decided["detected"]:
        return ("clear_leak" if null["interval"][0] >= STRONG else "leak_detected"), quoted
    reach = game_reach(document, quoted)
    if reach is not None and reach <= null["threshold"] and not decided["borderline"]:
        return "inconclusive", quoted | {"reach": reach}
    return ("borderline" if decided["borderline"] else "no_leak_detected"), quoted
