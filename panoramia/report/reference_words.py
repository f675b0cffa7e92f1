"""The reference attack in attacker terms, read from any document (its fields are not trusted:
finite numbers only, sentences written anew): what leads "What an attacker gains" where the
contributor gave held-out rows (docs/SPEC.md §2.4, "the reference attack"), and the one line
that says what she would gain by giving some where she gave none.

Shared by the report page (:mod:`panoramia.report.html`), the console (through the digest,
:mod:`panoramia.report.digest`) and ``panoramia reports show``.
"""

from __future__ import annotations

from typing import Any

from panoramia.measure.jsonable import JSONDict
from panoramia.report.attacker import LOW_FPRS, percent_share
from panoramia.report.verdict import finite_number as number

NO_HELD_OUT = (
    "Give held-out rows (records of the same kind that the model never trained on) and the "
    "audit also says how many of your own records an attacker with reference models would "
    "catch, the figure attackers report first."
)
"""The line of a report whose audit had no real non-members."""


def _section(document: JSONDict, key: str) -> JSONDict:
    found = document.get(key)
    return found if isinstance(found, dict) else {}


def _pair(value: Any) -> list[float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    low, high = number(value[0]), number(value[1])
    return None if low is None or high is None else [low, high]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _attack(found: JSONDict) -> JSONDict | None:
    """One attack's figures, checked; None where its AUC or rates cannot be read."""
    rates, realised = _section(found, "tpr_at_fpr"), _section(found, "realised_fpr")
    intervals = _section(found, "tpr_at_fpr_interval")
    figures: dict[str, Any] = {
        "auc": number(found.get("auc")),
        "auc_interval": _pair(found.get("auc_interval")),
        "eps_lb": number(found.get("eps_lb")),
        "p_value": number(found.get("p_value")),
        "tpr_at_fpr": {fpr: number(rates.get(fpr)) for fpr in LOW_FPRS},
        "realised_fpr": {fpr: number(realised.get(fpr)) for fpr in LOW_FPRS},
        "tpr_at_fpr_interval": {fpr: _pair(intervals.get(fpr)) for fpr in LOW_FPRS},
    }
    if figures["auc"] is None or figures["tpr_at_fpr"]["0.01"] is None:
        return None
    return figures


def reference_attack_reading(document: JSONDict) -> JSONDict | None:
    """``rmia`` and ``lira`` figures (each None where unreadable), the scored counts, whether
    the split was drawn at random (``randomised``: only then does RMIA's test join the
    verdict), the ``sentence`` and ``attacks`` (the readable ones, each with its ``name``, in
    the order a table shows them); None where the document has no RMIA section."""
    reference = _section(document, "reference_audits")
    rmia = _section(reference, "rmia")
    figures = _attack(rmia)
    if figures is None:
        return None
    lira = _attack(_section(reference, "lira"))
    reading = {
        "rmia": figures,
        "lira": lira,
        "members": _count(rmia.get("members")),
        "nonmembers": _count(rmia.get("nonmembers")),
        "references": _count(rmia.get("references")),
        "randomised": rmia.get("randomised") is True,
        "interval_level": number(rmia.get("interval_level")),
    }
    named = [("RMIA", figures), ("LiRA (offline)", lira)]
    return reading | {
        "sentence": reference_attack_sentence(reading),
        "attacks": [{"name": name} | found for name, found in named if found is not None],
    }


def _rate(figures: JSONDict, fpr: str) -> str:
    value, interval = figures["tpr_at_fpr"][fpr], figures["tpr_at_fpr_interval"][fpr]
    shown = percent_share(value)
    if interval:
        shown += f" ({percent_share(interval[0])}–{percent_share(interval[1])})"
    return shown


def reference_attack_sentence(reading: JSONDict) -> str:
    """E.g. "An attacker with reference models (RMIA: models of this kind that never saw your
    records) catches 12% (10–14%) of
    your records while wrongly flagging 1 in 100 of your held-out rows (0.99% in fact), and
    2.1% (1.5%–2.9%) at 1 in 1,000; had the model never seen your records, it would catch
    about 1% of them at that rate. Scored on 9,000 of your members against 8,140 held-out
    rows that none of its 3 reference models saw." """
    figures = reading["rmia"]
    realised = figures["realised_fpr"]["0.01"]
    in_fact = f" ({realised:.2%} in fact)" if realised is not None else ""
    low = (
        f", and {_rate(figures, '0.001')} at 1 in 1,000"
        if figures["tpr_at_fpr"]["0.001"] is not None
        else ""
    )
    counts = ""
    if reading.get("members") and reading.get("nonmembers"):
        models = reading.get("references") or "its"
        counts = (
            f" Scored on {reading['members']:,} of your members against "
            f"{reading['nonmembers']:,} held-out rows that none of its {models} reference "
            "models saw."
        )
    return (
        "An attacker with reference models (RMIA: models of this kind that never saw your "
        f"records) catches {_rate(figures, '0.01')} "
        f"of your records while wrongly flagging 1 in 100 of your held-out rows{in_fact}{low}; "
        "had the model never seen your records, it would catch about 1% of them at that rate."
        f"{counts}"
    )


def gave_no_held_out(document: JSONDict) -> bool:
    """Whether the audit had no real non-members (no O(1) section and no RMIA section): the
    page then says what giving some would add (:data:`NO_HELD_OUT`)."""
    reference = _section(document, "reference_audits")
    return not reference.get("o1") and not reference.get("rmia")
