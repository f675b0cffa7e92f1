"""Data shipped with the package (see PROVENANCE.md beside this file)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

OFFICIAL_ADULT_SCORES = "panoramia_official_adult_scores.csv.gz"
"""Scores published with the official PANORAMIA release on Adult (MIT licence)."""


def path_of(name: str) -> Path:
    """Filesystem path of a file shipped in this package."""
    return Path(str(files(__name__).joinpath(name)))
