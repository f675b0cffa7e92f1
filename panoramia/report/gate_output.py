"""How the release gate's outcome is shown: its lines (one per failed rule, or one per audit
that passed), a JUnit XML document (``gate.xml``: one test case per rule and audit, a
``<failure>`` for each failed rule, ``<skipped>`` for an unreadable figure the policy lets pass)
and a GitHub step summary (a Markdown table). Pure functions: the callers write the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree.ElementTree import Element, SubElement, indent, tostring

from panoramia.report.gate import GateOutcome


def gate_lines(policy: str, outcomes: Sequence[GateOutcome]) -> list[str]:
    """``gate failed (<policy>): <audit>: <rule's line>`` for every failed rule, and
    ``gate passed (<policy>): <audit>: …`` for every audit whose rules all passed."""
    lines = []
    for outcome in outcomes:
        if outcome.passed:
            rules = ", ".join(result.rule for result in outcome.results)
            lines.append(f"gate passed ({policy}): {outcome.subject}: {rules}")
        for result in outcome.failures:
            lines.append(f"gate failed ({policy}): {outcome.subject}: {result.line}")
    return lines


def _counts(outcomes: Sequence[GateOutcome]) -> dict[str, str]:
    results = [result for outcome in outcomes for result in outcome.results]
    return {
        "tests": str(len(results)),
        "failures": str(sum(not result.passed for result in results)),
        "errors": "0",
        "skipped": str(sum(result.passed and not result.readable for result in results)),
    }


def junit_xml(policy: str, outcomes: Sequence[GateOutcome]) -> str:
    """The outcome as a JUnit XML document: a ``<testsuite>`` per audit, a ``<testcase>`` per
    rule (``classname`` ``panoramia-gate.<policy>``), its line as the failure's message."""
    suites = Element("testsuites", {"name": f"panoramia gate ({policy})", **_counts(outcomes)})
    for outcome in outcomes:
        suite = SubElement(suites, "testsuite", {"name": outcome.subject, **_counts([outcome])})
        for result in outcome.results:
            case = SubElement(
                suite, "testcase", classname=f"panoramia-gate.{policy}",
                name=f"{outcome.subject}: {result.rule}",
            )  # fmt: skip
            if not result.passed:
                failure = SubElement(case, "failure", message=result.line, type="gate")
                failure.text = result.line
            elif not result.readable:
                SubElement(case, "skipped", message=result.line)
            else:
                SubElement(case, "system-out").text = result.line
    indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(suites, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def step_summary(policy: str, outcomes: Sequence[GateOutcome]) -> str:
    """The outcome as Markdown for ``$GITHUB_STEP_SUMMARY``: a heading with the result, then a
    row per rule and audit."""
    passed = all(outcome.passed for outcome in outcomes)
    lines = [
        f"### Release gate `{policy}`: {'passed' if passed else 'failed'}",
        "",
        "| audit | rule | result | reading |",
        "|---|---|---|---|",
    ]
    for outcome in outcomes:
        for result in outcome.results:
            state = "passed" if result.passed else "**failed**"
            if result.passed and not result.readable:
                state = "passed (unreadable)"
            reading = result.line.split(": ", 1)[-1]
            lines.append(
                f"| {_cell(outcome.subject)} | `{result.rule}` | {state} | {_cell(reading)} |"
            )
    return "\n".join(lines) + "\n\n"
