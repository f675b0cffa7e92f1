"""The verdict of one audit run: a level, one sentence, the figure to quote, what it means
and the caveats of this run — read off a finished report document, so that a document of an
older schema (1.0, no ``verdict``) gets the same verdict from its figures (docs/SPEC.md §3.1).

Levels, in the order the rule tries them:

- ``leak_beyond_claim``: the declared guarantee's checks found a measured point it forbids;
- ``leak_detected``: a game whose baseline measured the generator (c_lb > 0) read
  ε̃ > :data:`TOLERANCE`;
- ``inconclusive``: only a game whose baseline measured nothing (c_lb = 0) read more than
  :data:`TOLERANCE` — the gap cannot be told from the generator's own flaws;
- ``no_leak_detected``: otherwise.
"""

from __future__ import annotations

import math

from panoramia.measure import INTERPRETATION

TOLERANCE = 0.1
"""ε̃ (nats) up to which a run reads as no leak: the mean a disjoint control (a model of the
same recipe that never saw the members) stays under in the validity sweeps (docs/RESULTS.md)."""
CONTROL_SINGLE_RUNS_ABOVE = "about 1 in 5"
"""How often a disjoint control's single run read ε̃ > TOLERANCE in the larger reliable game,
in words; the counts per modality are in docs/RESULTS.md §13."""
LOW_FIDELITY_AUC = 0.75
"""A real-vs-synthetic AUC above this is a caveat: a leak can hide behind what the baseline
already sees in the generated data."""
WORDS = {
    "leak_beyond_claim": "Leak beyond the declared guarantee",
    "leak_detected": "Leak detected",
    "inconclusive": "Inconclusive",
    "no_leak_detected": "No leak detected",
}
"""Each level as a person reads it."""


def _games(document: dict) -> list[dict]:
    """The games this run reports: the paper's one-sided game, and the two-sided one where
    it was played; each with its figures and whether its baseline measured anything."""
    games = [
        {
            "game": "the paper's one-sided game",
            "key": "one_sided",
            "eps_tilde": float(document["eps_tilde"]),
            "c_lb": float(document["c_lb"]),
            "c_plus_eps_lb": float(document["c_plus_eps_lb"]),
            "saturated": bool(document.get("saturated")),
        }
    ]
    two_sided = document.get("two_sided") or {}
    if "eps_tilde" in two_sided:
        games.append(
            {
                "game": "the two-sided game",
                "key": "two_sided",
                "eps_tilde": float(two_sided["eps_tilde"]),
                "c_lb": float(two_sided["c_lb"]),
                "c_plus_eps_lb": float(two_sided["c_plus_eps_lb"]),
                "saturated": bool(two_sided.get("saturated")),
            }
        )
    for game in games:
        game["reliable"] = game["c_lb"] > 0
    return games


def _level(games: list[dict], claim: dict) -> tuple[str, dict]:
    """The level and the game whose ε̃ is quoted (the largest among reliable games)."""
    reliable = [g for g in games if g["reliable"]]
    quoted = max(reliable or games, key=lambda g: g["eps_tilde"])
    if claim.get("violation"):
        return "leak_beyond_claim", quoted
    if reliable and quoted["eps_tilde"] > TOLERANCE:
        return "leak_detected", quoted
    loudest = max(games, key=lambda g: g["eps_tilde"])
    if not reliable and loudest["eps_tilde"] > TOLERANCE:
        return "inconclusive", loudest
    return "no_leak_detected", quoted


def _sentence(level: str, quoted: dict, confidence: float, claim: dict) -> str:
    eps, game = quoted["eps_tilde"], quoted["game"]
    sure = f"{confidence:.0%} confidence"
    if level == "leak_beyond_claim":
        return (
            f"This model leaks more than its declared guarantee allows: "
            f"{claim.get('banner') or 'a measured point lies below the claim’s trade-off curve'}"
            f" (ε̃ = {eps:.2f} in {game}, {sure})."
        )
    if level == "leak_detected":
        within = (
            " It stays within the declared guarantee."
            if claim.get("source") not in (None, "none") and not claim.get("violation")
            else ""
        )
        return (
            f"This model leaks information about its training data: the audit measured "
            f"ε̃ = {eps:.2f} in {game} at {sure}, above the {TOLERANCE:g} that models which "
            f"never saw these records read on average.{within}"
        )
    if level == "inconclusive":
        return (
            f"Inconclusive: the attack read ε̃ = {eps:.2f} in {game}, but the baseline could "
            "not tell the generated data from the real (c_lb = 0), so this gap cannot be told "
            "apart from the generator's own flaws."
        )
    return (
        f"This audit found no leak beyond what the generated data explains (ε̃ = {eps:.2f} in "
        f"{game}, at most {TOLERANCE:g} in every game). That does not show the model is "
        "private: a stronger attack or a larger audit may find one."
    )


def _meaning(document: dict, quoted: dict) -> list[str]:
    reference = document.get("reference_audits") or {}
    lines = [
        INTERPRETATION,
        f"c_lb = {quoted['c_lb']:.2f} measures how well the generated non-members can be told "
        "from real members without the model; ε̃ is what the model's losses add to that.",
    ]
    o1 = reference.get("o1")
    if o1:
        lines.append(
            f"O(1) ε_lb = {o1['eps_lb']:.2f} uses real held-out non-members: a lower bound on ε "
            "if membership was randomised, an approximation of that game otherwise."
        )
    else:
        lines.append(
            "No real non-members were held out, so O(1) and RM;RN (lower bounds on ε) are "
            "not available for this run."
        )
    return lines


def _caveats(document: dict, games: list[dict], claim: dict) -> list[str]:
    caveats = []
    for game in games:
        if not game["reliable"]:
            caveats.append(
                f"In {game['game']} the baseline's bound c_lb is 0: its ε̃ is the attack's raw "
                "bound, not a gap over a generator the baseline could measure."
            )
        if game["saturated"]:
            caveats.append(
                f"In {game['game']} a classifier made only right guesses (saturated): its "
                "figure is limited by how many guesses it made, so ε̃ there compares counts "
                "of guesses rather than their precision; treat it as rough."
            )
    synthetic = (document.get("data") or {}).get("synthetic") or {}
    fidelity = synthetic.get("real_vs_synthetic_auc")
    if fidelity is not None and fidelity > LOW_FIDELITY_AUC:
        caveats.append(
            f"The generated rows are easy to tell from real ones (AUC {fidelity:.2f}; 0.5 is "
            "indistinguishable): a leak can hide behind what the baseline already sees."
        )
    for name in claim.get("inconclusive") or []:
        caveats.append(
            f"The {name}'s guesses beat the declared guarantee's curve, but against generated "
            "non-members, which a DP guarantee says nothing about: no evidence against it."
        )
    o1 = ((document.get("reference_audits") or {}).get("o1") or {}).get("eps_lb")
    if o1 is not None and float(o1) > TOLERANCE:
        caveats.append(
            f"With real held-out non-members, the O(1) audit reads ε_lb = {float(o1):.2f}: "
            "this model does leak something about its training rows, even where the audit "
            "against generated rows finds little."
        )
    reach = _reach(document, games, claim)
    if reach:
        caveats.append(reach)
    caveats.append(
        f"One run: a model that never saw the members still read above {TOLERANCE:g} in "
        f"{CONTROL_SINGLE_RUNS_ABOVE} of the validity sweeps' single runs (docs/RESULTS.md "
        "§13); repeat over seeds (a multirun) for a paired interval against a control."
    )
    return caveats


def finite_number(value: object) -> float | None:
    """``value`` as a finite float; None for anything else: bools, strings, NaN, ∞ (uploaded
    documents vary)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _reach(document: dict, games: list[dict], claim: dict) -> str | None:
    """What this audit's size could not show, in words: where ε̃ reads at most the tolerance,
    or the declared ε is above the most this size can show; None otherwise or without a
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
    quiet = max(game["eps_tilde"] for game in games) <= TOLERANCE
    summary = claim.get("summary") if isinstance(claim.get("summary"), dict) else {}
    epsilons = summary.get("epsilons") if isinstance(summary.get("epsilons"), dict) else {}
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


def verdict(document: dict) -> dict:
    """The ``verdict`` section of a report document (schema 1.0 or later): ``level`` (one of
    :data:`WORDS`), ``headline`` (the level in words), ``sentence``, ``quote`` (figure, value in
    nats, game, confidence), ``tolerance``, ``meaning`` and ``caveats`` (lists of sentences) and
    ``claim`` (the declared guarantee in words)."""
    claim = document.get("claim") or {}
    games = _games(document)
    level, quoted = _level(games, claim)
    confidence = float(document["confidence"])
    return {
        "level": level,
        "headline": WORDS[level],
        "sentence": _sentence(level, quoted, confidence, claim),
        "quote": {
            "figure": "ε̃",
            "value": quoted["eps_tilde"],
            "game": quoted["key"],
            "confidence": confidence,
        },
        "tolerance": TOLERANCE,
        "meaning": _meaning(document, quoted),
        "caveats": _caveats(document, games, claim),
        "claim": list(claim.get("statements") or ["The model's owner declares no guarantee."]),
    }
