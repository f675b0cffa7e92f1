"""panoramia-audit: post-hoc privacy measurement of trained ML models (PANORAMIA).

The measurement itself lives in :mod:`panoramia.measure` and imports no deep-learning stack.
"""

__version__ = "0.1.0"
