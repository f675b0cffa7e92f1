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
from panoramia.report.verdict_rule import finite_number as number

NO_HELD_OUT = (
    "Give held-out rows (records of the same kind that the model never trained on) and the "
    "audit also says how many of your own records an attacker with reference models would "
    "catch, the figure attackers report first."
)
"""The line of a report whose audit had no real non-members."""


def _section(document: JSONDict, key: str) -> JSONDict:
    found = document.get(key)
    return found if isinstance(found, dict) else {}


def _count(value: Any) -> int | None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10**12:
        return None
    return value


def _share(value: Any) -> float | None:
    """A rate or an AUC: a finite number in [0, 1], else None."""
    found = number(value)
    return found if found is not None and 0.0 <= found <= 1.0 else None


def _pair(value: Any) -> list[float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    low, high = _share(value[0]), _share(value[1])
    return None if low is None or high is None or low > high else [low, high]


def _attack(found: JSONDict) -> JSONDict | None:
    """One attack's figures, checked (rates and AUC in [0, 1]); None where its AUC or its
    rate at 1 % FPR cannot be read."""
    rates, realised = _section(found, "tpr_at_fpr"), _section(found, "realised_fpr")
    intervals = _section(found, "tpr_at_fpr_interval")
    figures: dict[str, Any] = {
        "auc": _share(found.get("auc")),
        "auc_interval": _pair(found.get("auc_interval")),
        "eps_lb": number(found.get("eps_lb")),
        "p_value": _share(found.get("p_value")),
        "tpr_at_fpr": {fpr: _share(rates.get(fpr)) for fpr in LOW_FPRS},
        "realised_fpr": {fpr: _share(realised.get(fpr)) for fpr in LOW_FPRS},
        "tpr_at_fpr_interval": {fpr: _pair(intervals.get(fpr)) for fpr in LOW_FPRS},
    }
    if figures["auc"] is None or figures["tpr_at_fpr"]["0.01"] is None:
        return None
    return figures


def reference_attack_reading(document: JSONDict) -> JSONDict | None:
    """``rmia``, ``lira`` and ``loss`` figures (each None where unreadable; ``loss`` is the
    plain loss attack, absent before schema 1.10), the scored counts, whether
    the split was drawn at random (``randomised``: only then does RMIA's test join the
    verdict), the ``sentence`` and ``attacks`` (the readable ones, each with its ``name``, in
    the order a table shows them); None where the document has no RMIA section."""
    if not isinstance(document, dict):
        return None
    reference = _section(document, "reference_audits")
    rmia = _section(reference, "rmia")
    figures = _attack(rmia)
    if figures is None:
        return None
    lira = _attack(_section(reference, "lira"))
    loss = _attack(_section(reference, "loss"))
    reading = {
        "rmia": figures,
        "lira": lira,
        "loss": loss,
        "members": _count(rmia.get("members")),
        "nonmembers": _count(rmia.get("nonmembers")),
        "references": _count(rmia.get("references")),
        "randomised": rmia.get("randomised") is True,
        "interval_level": number(rmia.get("interval_level")),
    }
    named = [
        ("RMIA", figures),
        ("LiRA (offline)", lira),
        ("Loss alone (no reference models)", loss),
    ]
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
    """E.g. "An attacker with reference models (RMIA: models of this kind that never saw the
    records scored) catches 12% (10%–14%) of your records while wrongly flagging 1 in 100 of
    your held-out rows (0.99% in fact), and 2.1% (1.5%–2.9%) at 1 in 1,000; had the model
    never seen your records, it would catch about as many as it wrongly flags, 0.99%. Scored
    on 9,000 of your members against 8,140 held-out rows that none of its 3 reference models
    saw." Where the audit did not draw the held-out rows, the clause on a model that never
    saw her records is left out (her rows may differ from her members in kind); where the
    plain loss attack was read (schema 1.10), one sentence gives its rate at 1 in 100: what
    the reference models add."""
    figures = reading["rmia"]
    realised = figures["realised_fpr"]["0.01"]
    in_fact = f" ({realised:.2%} in fact)" if realised is not None else ""
    low = (
        f", and {_rate(figures, '0.001')} at 1 in 1,000"
        if figures["tpr_at_fpr"]["0.001"] is not None
        else ""
    )
    chance = (
        "; had the model never seen your records, it would catch about as many as it wrongly "
        f"flags, {realised:.2%}"
        if reading.get("randomised") and realised is not None
        else ""
    )
    counts = ""
    if reading.get("members") and reading.get("nonmembers"):
        models = f"its {reading['references']}" if reading.get("references") else "its"
        counts = (
            f" Scored on {reading['members']:,} of your members against "
            f"{reading['nonmembers']:,} held-out rows that none of {models} reference "
            "models saw."
        )
    loss = reading.get("loss")
    alone = (
        f" The model's loss alone, without reference models, catches "
        f"{_rate(loss, '0.01')} at 1 in 100."
        if loss is not None
        else ""
    )
    return (
        "An attacker with reference models (RMIA: models of this kind that never saw the "
        f"records scored) catches {_rate(figures, '0.01')} of your records while wrongly "
        f"flagging 1 in 100 of your held-out rows{in_fact}{low}{chance}.{alone}{counts}"
    )


def gave_no_held_out(document: JSONDict) -> bool:
    """Whether the audit ran with the reference attack on (its ``config``) and had no real
    non-members (the data stage's ``nonmembers`` count is absent or 0): the page then says
    what giving some would add (:data:`NO_HELD_OUT`). Text audits do not run the attack, so
    they never read the line."""
    if not isinstance(document, dict):
        return False
    config = _section(_section(document, "config"), "audit")
    if _section(config, "real_nonmembers").get("reference_attack") is not True:
        return False
    reference = _section(document, "reference_audits")
    held_out = _section(document, "data").get("nonmembers")
    return not reference.get("rmia") and not held_out
