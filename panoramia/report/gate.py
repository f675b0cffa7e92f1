"""The release gate's rules applied to an audit's figures (docs/AUDIT.md, "The release gate").

Each rule the policy sets passes, fails, or cannot read its figure (the policy's
``unreadable`` then decides), and says so in one line that names the rule and the figure:
``max_eps_tilde_low: the quoted ε̃ … its low end 0.96 is above the limit 0.10``. Rules, in
the order they are read: ``claim_must_hold``, ``fail_levels``, ``max_eps_tilde_low``,
``max_tpr_at_fpr.<rate>``. Pure functions: nothing here reads a file or prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from panoramia.report.gate_figures import GateFigures, TprReading, game_words
from panoramia.report.gate_policy import GatePolicy
from panoramia.report.verdict import percent

PASSED = 0
"""Exit status of a gate that passed."""
FAILED = 1
"""Exit status of a gate one of whose rules failed (bad input, a bad policy among it: 2)."""


@dataclass(frozen=True)
class RuleResult:
    """One rule on one audit: whether it passed, whether its figure could be read, its line."""

    rule: str
    passed: bool
    line: str
    readable: bool = True


@dataclass(frozen=True)
class GateOutcome:
    """Every rule the policy sets, on one audit (one run, or a pooled group)."""

    subject: str
    results: tuple[RuleResult, ...]

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)

    @property
    def failures(self) -> tuple[RuleResult, ...]:
        return tuple(result for result in self.results if not result.passed)


def _unread(policy: GatePolicy, rule: str, why: str) -> RuleResult:
    passes = policy.unreadable == "pass"
    verb = "passes" if passes else "fails"
    return RuleResult(rule, passes, f"{rule}: {why}; an unreadable figure {verb} under this "
                      "policy", readable=False)  # fmt: skip


def _claim_rule(policy: GatePolicy, figures: GateFigures) -> RuleResult:
    rule = "claim_must_hold"
    claim = figures.claim
    if claim.violated_by:
        runs = f" in {', '.join(claim.violated_by)}" if figures.pooled else ""
        line = (
            f"{rule}: the audit contradicts the declared guarantee{runs} (a game with real "
            "non-members beats its trade-off curve)"
        )
        return RuleResult(rule, False, line)
    if not claim.declared:
        return RuleResult(rule, True, f"{rule}: the model declares no guarantee")
    if not claim.checked:
        return _unread(policy, rule, "the declared guarantee was not checked: no game with real "
                       "non-members (held-out rows) ran")  # fmt: skip
    return RuleResult(rule, True, f"{rule}: the audit does not contradict the declared guarantee")


def _level_rule(policy: GatePolicy, figures: GateFigures) -> RuleResult:
    rule = "fail_levels"
    if figures.level is None:
        return _unread(policy, rule, "no verdict can be read")
    shown = f'the verdict reads "{figures.headline}" ({figures.level})'
    if figures.level in policy.fail_levels:
        return RuleResult(rule, False, f"{rule}: {shown}, a level this policy fails")
    return RuleResult(rule, True, f"{rule}: {shown}, not a level this policy fails")


def _eps_rule(policy: GatePolicy, figures: GateFigures, limit: float) -> RuleResult:
    rule = "max_eps_tilde_low"
    if figures.interval is None or figures.eps_tilde is None:
        return _unread(policy, rule, "the quoted ε̃ has no interval (no in-audit null drew one)")
    low, high = figures.interval
    game = game_words(figures.game)
    mean = "mean " if figures.pooled and figures.runs > 1 else ""
    shown = (
        f"{rule}: the quoted ε̃ ({game}) {mean}is {figures.eps_tilde:.2f} nats, "
        f"{figures.interval_words} {low:.2f}–{high:.2f}: its low end {low:.2f}"
    )
    if low > limit:
        return RuleResult(rule, False, f"{shown} is above the limit {limit:.2f}")
    return RuleResult(rule, True, f"{shown} is within the limit {limit:.2f}")


def _needed(rate: float) -> int:
    """The fewest generated non-members at which TPR at FPR ``rate`` is read (one of them can
    be wrongly flagged)."""
    return math.ceil(1 / rate - 1e-9)


def _tpr_rule(policy: GatePolicy, figures: GateFigures, key: str, limit: float) -> RuleResult:
    rule = f"max_tpr_at_fpr.{key}"
    rate = float(key)
    reading = figures.tpr.get(key, TprReading())
    at = f"at {percent(rate)} FPR"
    if reading.attack is None or (policy.tpr_over_baseline and reading.baseline is None):
        held = f"{reading.negatives:,} generated non-members" if reading.negatives else "no count"
        return _unread(policy, rule, f"the report cannot read TPR {at} ({held}; it takes at "
                       f"least {_needed(rate):,})")  # fmt: skip
    mean = f" (mean over {figures.runs} runs)" if figures.pooled and figures.runs > 1 else ""
    if policy.tpr_over_baseline:
        assert reading.baseline is not None  # checked above
        gained = reading.attack - reading.baseline
        shown = (
            f"{rule}: {at} the attack's TPR is {reading.attack:.1%} and the baseline's "
            f"{reading.baseline:.1%}{mean}: {100 * gained:.1f} points over the baseline"
        )
        bound = f"the limit {100 * limit:.1f} points"
    else:
        gained = reading.attack
        shown = f"{rule}: {at} the attack's TPR is {reading.attack:.1%}{mean}"
        bound = f"the limit {limit:.1%}"
    if gained > limit + 1e-12:
        return RuleResult(rule, False, f"{shown}, above {bound}")
    return RuleResult(rule, True, f"{shown}, within {bound}")


def evaluate(policy: GatePolicy, figures: GateFigures) -> GateOutcome:
    """Every rule ``policy`` sets, on ``figures``, in the module's order."""
    results = []
    if policy.claim_must_hold:
        results.append(_claim_rule(policy, figures))
    if policy.fail_levels:
        results.append(_level_rule(policy, figures))
    if policy.max_eps_tilde_low is not None:
        results.append(_eps_rule(policy, figures, policy.max_eps_tilde_low))
    for key, limit in sorted(policy.max_tpr_at_fpr.items(), key=lambda item: float(item[0])):
        results.append(_tpr_rule(policy, figures, key, limit))
    return GateOutcome(figures.subject, tuple(results))
