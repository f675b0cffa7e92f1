"""Leakage reports: ``report.json`` (versioned schema) and a self-contained ``report.html``."""

SCHEMA_VERSION = "1.0"
