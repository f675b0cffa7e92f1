"""The report's claim section: the declared guarantee beside the audit's operating points.

``claim_section(claim, games)`` summarises the claim (:mod:`~panoramia.accounting.summary`)
and checks each scored game against the curve the released model satisfies
(:mod:`~panoramia.accounting.consistency`). Games: ``attack`` (PANORAMIA: members vs generated
non-members, with the target's losses), ``baseline`` (the same without the target) and
``rmrn`` (real members vs real non-members, when the audit has them).

A DP guarantee bounds how well any test separates members from *real* non-members drawn from
the same distribution; it says nothing about generated ones. So only a game with real
non-members (``rmrn``) can contradict the claim (a red banner). The game compares the target
trained with a shown member against the target trained with a hidden one, i.e. replace-one
neighbours (docs/SPEC.md §2.8): an add/remove DP-SGD claim is checked through its replace-one
account, which is what it implies for that game. The attack and the baseline
play members against generated non-members: their points beating the claimed curve are listed
as ``inconclusive`` with a note, never as a violation. Measured figures: docs/RESULTS.md §7.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from panoramia.accounting.claims import Claim, DpSgdClaim, NoClaim
from panoramia.accounting.consistency import ConsistencyCheck, check_consistency
from panoramia.accounting.summary import ClaimSummary, summarize_claim
from panoramia.measure.jsonable import JSONDict

CHECKED_GAMES = ("rmrn",)
"""Games whose violation raises the banner: those with real non-members."""
GENERATED_GAMES = ("attack", "baseline")
"""Games against generated non-members: beating the curve is inconclusive."""


@dataclass
class ClaimSection:
    """In-memory section (curves and checks for the figure) and its JSON form."""

    summary: ClaimSummary
    checks: dict[str, ConsistencyCheck]
    confidence: float
    game_summary: ClaimSummary | None = None
    """The claim under the game's replace-one relation (docs/SPEC.md §2.8), whose curve the
    checks use: an add/remove DP-SGD claim re-accounted; the claim itself otherwise."""

    def _beats(self, name: str) -> bool:
        return name in self.checks and not self.checks[name].consistent

    @property
    def inconclusive(self) -> list[str]:
        """Games against generated non-members whose points beat the claimed curve: no
        evidence against the claim (see the module docstring)."""
        return [name for name in GENERATED_GAMES if self._beats(name)]

    @property
    def violated_by(self) -> list[str]:
        """Games with real non-members whose operating points contradict the claim."""
        return [name for name in CHECKED_GAMES if self._beats(name)]

    def note(self) -> str | None:
        """Why points that beat the claimed curve are not counted, or None."""
        if not self.inconclusive:
            return None
        games = " and ".join(self.inconclusive)
        text = (
            f"The {games} operating points beat the claimed trade-off curve, but they separate "
            "members from generated non-members: a DP guarantee bounds members against real "
            "non-members only, so this is no evidence against the claim"
        )
        if "baseline" in self.inconclusive:
            text += " (the baseline, which never queries the model, does it too)"
        return text + "."

    def banner(self) -> str | None:
        """The red banner's text, or None when every checked game is consistent."""
        if not self.violated_by:
            return None
        games = " and ".join(self.violated_by)
        text = (
            f"The audit contradicts the declared guarantee: the {games} operating points "
            f"beat the claimed trade-off curve even at their {self.confidence:.0%} "
            "Clopper–Pearson bounds."
        )
        return text

    def statements(self) -> list[str]:
        """Plain-language consequences of the claim (from f, the advantage and tuning)."""
        summary = self.summary
        if summary.curve is None:
            return ["The model's owner declares no privacy guarantee."]
        lines = []
        tuned = summary.tuned
        curve = summary.check_curve
        assert curve is not None  # a claim's curve, or the tuned one
        if tuned:
            first = tuned[0]
            lines.append(
                f"Tuning ({first['description']}) raises ε at δ = {first['delta']:g} from "
                f"{first['single_run_epsilon']:.3g} for one run to {first['tuned_epsilon']:.3g}; "
                "the statements below hold for the released model."
            )
        for alpha in (1e-3, 1e-2, 1e-1):
            lines.append(
                f"No membership attack exceeds TPR {1 - float(curve(alpha)):.4f} at FPR "
                f"{alpha:.1%}."
            )
        advantage = curve.advantage()
        lines.append(
            f"No attack guesses membership of a balanced coin with more than "
            f"{(1 + advantage) / 2:.2%} accuracy (advantage η = {advantage:.4f})."
        )
        if summary.mu is not None and summary.tier == "I" and not tuned:
            lines.append(f"The model is {summary.mu:.4g}-GDP (regret {summary.regret:.1e}).")
        return lines

    def _checked_as(self) -> JSONDict | None:
        """The relation and figures of the curve the checks use, when it is not the claim's
        own (an add/remove DP-SGD claim checked as replace-one, docs/SPEC.md §2.8)."""
        game = self.game_summary
        if game is None or game is self.summary:
            return None
        return {"neighbouring": "replace_one", "mu": game.mu, "epsilons": game.epsilons}

    def to_dict(self) -> JSONDict:
        return {
            "summary": self.summary.to_dict(),
            "consistency": {name: check.to_dict() for name, check in self.checks.items()},
            "checked_as": self._checked_as(),
            "violation": bool(self.violated_by),
            "violated_by": self.violated_by,
            "inconclusive": self.inconclusive,
            "banner": self.banner(),
            "note": self.note(),
            "statements": self.statements(),
        }


def claim_section(
    claim: Claim,
    games: dict[str, tuple[np.ndarray, np.ndarray]],
    *,
    confidence: float = 0.95,
) -> ClaimSection:
    """Summarise ``claim`` and check each game (scores: higher = member; membership 1 =
    member) against the curve the released model satisfies."""
    summary = summarize_claim(claim)
    game_summary = summary
    if isinstance(claim, DpSgdClaim) and claim.neighbouring == "add_remove":
        game_summary = summarize_claim(replace(claim, neighbouring="replace_one"))
    checks = {}
    if not isinstance(claim, NoClaim):
        curve = game_summary.check_curve
        assert curve is not None  # every claim but NoClaim has a curve
        checks = {
            name: check_consistency(curve, scores, membership, confidence=confidence)
            for name, (scores, membership) in games.items()
        }
    return ClaimSection(summary, checks, confidence, game_summary)
