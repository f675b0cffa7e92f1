"""The claimed guarantee of an audited model, beside the audit's measurement (docs/SPEC.md §4).

- :mod:`~panoramia.accounting.claims`: what the owner declares (DP-SGD hyper-parameters, a
  bare (ε, δ), or nothing), validated and serialisable.
- :mod:`~panoramia.accounting.tradeoff`: trade-off curves f (FNR as a function of FPR),
  GDP μ, its regret and the Tier I / Tier II verdict, advantage.
- :mod:`~panoramia.accounting.dpsgd`: DP-SGD accounting with ``dp_accounting``'s
  connect-the-dots PLD (``gdpnum`` reads the curve off it) and the RDP ε papers print.
- :mod:`~panoramia.accounting.run_count` / :mod:`~panoramia.accounting.tuning`: what trying
  K runs and releasing the best costs (certified bounds; an uncertified GDP estimate);
  :mod:`~panoramia.accounting.tuned_exact`: the exact tuned mechanisms that test them.
- :mod:`~panoramia.accounting.summary`: one claim → the numbers a report shows.
- :mod:`~panoramia.accounting.calibration`: the noise meeting an attack-risk target (seed 003).
- :mod:`~panoramia.accounting.consistency`: the audit's operating points against the claim.
"""
