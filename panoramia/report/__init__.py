"""Leakage reports: ``report.json`` (versioned schema) and a self-contained ``report.html``."""

SCHEMA_VERSION = "1.10"
"""1.1 adds ``verdict`` (docs/SPEC.md §3.1); a 1.0 document's verdict is
:func:`panoramia.report.verdict.verdict` of its own figures; 1.2 adds ``detectable``, 1.3
``gdp`` (μ̃, docs/SPEC.md §2.8), 1.4 ``null`` (the in-audit null that holds the verdict's false
alarms; the verdict's ``detected``, ``false_alarm_rate`` and the quote's ``interval``), 1.5
``attacker`` and ``exposure`` (docs/SPEC.md §3), 1.6 the reference audits' ``p_value`` (the
verdict's ``decision``, §3.1 level 8), the quote's ``calls``, ``next_steps``, groups tested
against chance and the attacker terms' intervals, 1.7 the groups' two statistics
(``exposure.statistic``; each group's ``auc``, ``baseline_auc`` and ``tests``), 1.8 the blind
baseline (``baseline.blind``, text, docs/SPEC.md §2.9), 1.9 the reference attack
(``reference_audits.rmia`` and ``.lira``, ``exposure.reference_groups``, docs/SPEC.md §2.4),
1.10 the plain loss attack on the same rows (``reference_audits.loss``)."""
SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10")
"""Every schema version the service and the tools still read."""
