"""Generators of synthetic non-members: ``fit(members, *, seed)``, ``sample(n, *, seed)``.

Tabular (sdv), image (Lightning) and text (transformers) generators arrive with their
modalities' pipelines; see docs/ARCHITECTURE.md.
"""
