"""Distinguishers shared by the attack and the baseline: data branch + loss-feature branch.

``fit(x_train, side_train, y_train, x_val, side_val, y_val)``, ``score(x, side)``; the side
information is the per-example loss of the target f (attack) or the helper h (baseline).
"""
