"""Tabular generators (sdv): fit on D_G only, sample synthetic non-members with a seed.

``TabularGenerator.fit(members, seed=...)`` / ``.sample(n, seed=...)`` / ``.save(dir)`` /
``.load(dir)``. The synthesizer is ``cart`` (sequential CART over D_G's columns,
:mod:`panoramia.modalities.tabular.generator_cart`; the default) or one of sdv's single-table
models: ``gaussian_copula`` (fast), ``ctgan`` or ``tvae``. Sampled rows carry the label column, so
the synthetic data is labelled for the helper model without a separate labeler.
"""

from __future__ import annotations

import json
import logging
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from panoramia.audit_settings import values
from panoramia.errors import InputError
from panoramia.generators.seeding import global_seed
from panoramia.modalities.tabular.settings import Synthesizer
from panoramia.modalities.tabular.table import TabularSchema, conform
from panoramia.setting_bounds import COUNT, FRACTION, Bound, Limit, ranged, ranged_dict

log = logging.getLogger(__name__)
TABLE = "rows"
SYNTHESIZERS = values(Synthesizer)
SDV_SYNTHESIZERS = SYNTHESIZERS[1:]


@dataclass
class TabularGeneratorConfig:
    synthesizer: str = Synthesizer.CART.value
    epochs: int = ranged(300, COUNT, limit=Limit.EPOCHS)
    """Training epochs of ctgan/tvae (unused by the others)."""
    min_leaf: int = ranged(10, COUNT)
    """cart: the fewest D_G rows in a leaf of each column's tree, i.e. the fewest donors a
    synthetic value is drawn from (unused by the others)."""
    options: dict = ranged_dict(
        dict, entries={"batch_size": Bound(COUNT), "epochs": Bound(COUNT, limit=Limit.EPOCHS)}
    )
    """Extra keyword arguments of the sdv synthesizer."""
    point_mass: float = ranged(0.3, FRACTION)
    """A continuous column whose most frequent value covers at least this fraction of rows is
    modelled as an indicator ("at that value") plus the other values (zero-inflated columns
    such as capital gains, which copulas and GANs otherwise smear out); 1 disables it."""


@dataclass(frozen=True)
class PointMass:
    """A continuous column's atom: ``value`` on ``indicator == "1"`` rows."""

    column: str
    value: float

    @property
    def indicator(self) -> str:
        return f"{self.column}__at_mass"


def find_point_masses(rows: pd.DataFrame, schema: TabularSchema, share: float) -> list[PointMass]:
    masses = []
    for column in schema.continuous:
        counts = rows[column].value_counts(normalize=True)
        if len(counts) > 1 and counts.iloc[0] >= share:
            masses.append(PointMass(column, float(counts.index[0])))
    return masses


def split_point_masses(
    rows: pd.DataFrame, masses: list[PointMass], rng: np.random.Generator
) -> pd.DataFrame:
    """Add indicator columns; atom rows get a random non-atom value (masked back on sampling)."""
    out = rows.copy()
    for mass in masses:
        at = out[mass.column].to_numpy() == mass.value
        others = out.loc[~at, mass.column].to_numpy()
        out.loc[at, mass.column] = rng.choice(others, size=int(at.sum()))
        out[mass.indicator] = np.where(at, "1", "0")
    return out


def merge_point_masses(rows: pd.DataFrame, masses: list[PointMass]) -> pd.DataFrame:
    out = rows.copy()
    for mass in masses:
        at = out.pop(mass.indicator).astype(str).to_numpy() == "1"
        out.loc[at, mass.column] = mass.value
    return out


class TabularGenerator:
    """An sdv synthesizer over the columns of a :class:`TabularSchema`."""

    def __init__(self, schema: TabularSchema, config: TabularGeneratorConfig) -> None:
        if config.synthesizer not in SYNTHESIZERS:
            raise InputError(
                f"generator.synthesizer: {config.synthesizer!r} is not one of {SYNTHESIZERS}"
            )
        self.schema = schema
        self.config = config
        # a SequentialCart (synthesizer=cart), else an sdv synthesizer (sdv ships no types)
        self._synthesizer: Any = None
        self.point_masses: list[PointMass] = []

    def _metadata(self, members: pd.DataFrame):
        """sdv metadata of the single table ``members``: every column's sdtype set explicitly.

        Nothing is detected: ``Metadata.detect_from_dataframes`` takes a unique positive
        integer column (Adult's ``fnlwgt`` in a small or unlucky sample) for a primary key of
        sdtype ``id``, and fitting then fails with ``InvalidMetadataError``. Here the schema's
        categorical columns, the label and the point-mass indicators are ``categorical``, its
        continuous columns ``numerical``, in the frame's column order; the table has no
        primary key and no ``id`` column. A column outside the schema is a ``ValueError``.
        """
        from sdv.metadata import Metadata

        sdtypes = dict.fromkeys(
            (*self.schema.categorical, self.schema.label,
             *(mass.indicator for mass in self.point_masses)),
            "categorical",
        ) | dict.fromkeys(self.schema.continuous, "numerical")  # fmt: skip
        unknown = [str(column) for column in members.columns if column not in sdtypes]
        if unknown:
            raise ValueError(f"generator: column(s) outside the schema: {', '.join(unknown)}")
        columns = {str(column): {"sdtype": sdtypes[column]} for column in members.columns}
        return Metadata.load_from_dict(
            {"tables": {TABLE: {"columns": columns}}, "relationships": []}
        )

    def _new_synthesizer(self, members: pd.DataFrame):
        from sdv.single_table import (
            CTGANSynthesizer,
            GaussianCopulaSynthesizer,
            TVAESynthesizer,
        )

        metadata = self._metadata(members)
        options = dict(self.config.options)
        if self.config.synthesizer == "gaussian_copula":
            return GaussianCopulaSynthesizer(metadata, **options)
        cls = CTGANSynthesizer if self.config.synthesizer == "ctgan" else TVAESynthesizer
        return cls(metadata, epochs=self.config.epochs, **options)

    def fit(self, members: pd.DataFrame, *, seed: int) -> TabularGenerator:
        """Fit on the generator's training members D_G (conformed rows)."""
        if self.config.synthesizer == "cart":
            from panoramia.modalities.tabular.generator_cart import SequentialCart

            categorical = {*self.schema.categorical, self.schema.label}
            self._synthesizer = SequentialCart(categorical, min_leaf=self.config.min_leaf)
            self._synthesizer.fit(members, seed=seed)
            return self
        self.point_masses = find_point_masses(members, self.schema, self.config.point_mass)
        prepared = split_point_masses(members, self.point_masses, np.random.default_rng(seed))
        with global_seed(seed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._synthesizer = self._new_synthesizer(prepared)
            self._synthesizer.fit({TABLE: prepared})
        return self

    def sample(self, n: int, *, seed: int) -> pd.DataFrame:
        """``n`` synthetic rows, reproducible for a given seed, different across seeds.

        sdv re-seeds its model with a fixed seed unless ``_set_random_state`` was called after
        ``reset_sampling`` (sdv 2.0, pinned): without it every seed would sample the same rows.
        """
        if self._synthesizer is None:
            raise RuntimeError("fit or load the generator before sampling")
        if self.config.synthesizer == "cart":
            rows = self._synthesizer.sample(n, seed=seed)
            return conform(rows, self.schema, source="generated rows")
        with global_seed(seed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._synthesizer.reset_sampling()
            self._synthesizer._set_random_state(seed)
            rows = self._synthesizer.sample(n)
        rows = rows[TABLE] if isinstance(rows, dict) else rows
        return conform(
            merge_point_masses(rows, self.point_masses), self.schema, source="generated rows"
        )

    def save(self, directory: Path) -> None:
        """Write the fitted synthesizer (sdv's own format, or a pickle of the CART trees) and
        the point masses."""
        path = Path(directory) / "synthesizer.pkl"
        if self.config.synthesizer == "cart":
            path.write_bytes(pickle.dumps(self._synthesizer))
        else:
            self._synthesizer.save(str(path))
        masses = [{"column": m.column, "value": m.value} for m in self.point_masses]
        (Path(directory) / "point_masses.json").write_text(json.dumps(masses))

    @classmethod
    def load(
        cls, directory: Path, schema: TabularSchema, config: TabularGeneratorConfig
    ) -> TabularGenerator:
        """Load a synthesizer this project saved (pickle-based: only from its own cache)."""
        generator = cls(schema, config)
        path = Path(directory) / "synthesizer.pkl"
        if config.synthesizer == "cart":
            generator._synthesizer = pickle.loads(path.read_bytes())
        else:
            from sdv.utils import load_synthesizer

            generator._synthesizer = load_synthesizer(str(path))
        masses = json.loads((Path(directory) / "point_masses.json").read_text())
        generator.point_masses = [PointMass(m["column"], m["value"]) for m in masses]
        return generator
