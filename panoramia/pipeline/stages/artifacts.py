"""The array artifacts that stages hand to one another and to the report, one type each with
one ``save`` and one ``load``: what a file holds is declared here, not agreed between the
writer and each reader by key strings.

- :class:`GameDraw` (``game.npz``, the game stage): the audit slots' coins.
- :class:`Scores` (``scores.npz``, and an ensemble member's ``scores_<k>.npz``; the
  distinguisher stages and the blind baseline): one distinguisher's scores on the slots.
- :class:`Losses` (``losses.npz``, the losses stages): a model's per-example loss on each set.
- :class:`ReferenceRows` (``reference_rows.npz``, the reference rows' stage): f's and the stand-ins'
  losses on the rows the reference attacks score.
- :class:`UnitLosses` (``unit_losses.npz``, a modality's reference-units stage): f's mean loss
  per unit (text: document).

The files are plain ``np.savez`` archives (no pickles), their keys and dtypes as before this
module existed, so a store written earlier reads the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np


def _read(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as arrays:
        return {name: arrays[name] for name in arrays.files}


def _write(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    # savez's stub: ** could fill allow_pickle: bool
    np.savez(path, **arrays)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GameDraw:
    """The privacy game's draw: slot ``i`` of the audit set holds a member where
    ``coins[i] == 1``, else a generated non-member (``member_index[i]``,
    ``synthetic_index[i]``: which of the split's audit members and generated audit rows).
    ``reference_coins`` are the same for the games on real non-members (the first
    ``m_ref`` slots), None where there are none."""

    FILE: ClassVar[str] = "game.npz"
    coins: np.ndarray
    """(m,) int8, 1 = member."""
    member_index: np.ndarray
    """(m,) int."""
    synthetic_index: np.ndarray
    """(m,) int."""
    seed: int
    """The audit seed that drew the coins."""
    reference_coins: np.ndarray | None = None
    """(m_ref,) int8, 1 = member, or None."""

    def save(self, directory: Path) -> None:
        arrays = {
            "coins": self.coins,
            "member_index": self.member_index,
            "synthetic_index": self.synthetic_index,
            "seed": np.array(self.seed),
        }
        if self.reference_coins is not None:
            arrays["reference_coins"] = self.reference_coins
        _write(directory / self.FILE, arrays)

    @classmethod
    def load(cls, directory: Path) -> GameDraw:
        arrays = _read(directory / cls.FILE)
        return cls(
            coins=arrays["coins"], member_index=arrays["member_index"],
            synthetic_index=arrays["synthetic_index"], seed=int(arrays["seed"]),
            reference_coins=arrays.get("reference_coins"),
        )  # fmt: skip


@dataclass(frozen=True)
class Scores:
    """One distinguisher's (or an ensemble's mean) scores on the audit slots: higher = more
    likely a member; ``membership`` the slots' truth (1 = member)."""

    FILE: ClassVar[str] = "scores.npz"
    scores: np.ndarray
    """(n,) float."""
    membership: np.ndarray
    """(n,) int8, 1 = member."""
    side: np.ndarray | None = None
    """(n, …) the side information the distinguisher read with each slot (losses), or None
    (the blind baseline reads none)."""
    pool_scores: np.ndarray | None = None
    """(p,) float, its scores on the attacker's pool of generated rows, or None."""

    @staticmethod
    def file_name(member: int | None = None) -> str:
        """``scores.npz``, or ensemble member ``member``'s ``scores_<member>.npz``."""
        return "scores.npz" if member is None else f"scores_{member}.npz"

    def save(self, directory: Path, member: int | None = None) -> None:
        arrays = {"scores": self.scores, "membership": self.membership}
        if self.side is not None:
            arrays["side"] = self.side
        if self.pool_scores is not None:
            arrays["pool_scores"] = self.pool_scores
        _write(directory / self.file_name(member), arrays)

    @classmethod
    def load(cls, directory: Path, member: int | None = None) -> Scores:
        return cls.read(directory / cls.file_name(member))

    @classmethod
    def read(cls, path: Path) -> Scores:
        arrays = _read(path)
        return cls(
            scores=arrays["scores"], membership=arrays["membership"], side=arrays.get("side"),
            pool_scores=arrays.get("pool_scores"),
        )  # fmt: skip


@dataclass(frozen=True)
class Losses(Mapping[str, np.ndarray]):
    """A model's per-example loss (nats; a sequence's mean per-token loss) on each set the
    audit uses, by the set's file stem (``member_audit``, ``synthetic_attack_train``, the
    attacker's pool, …): a read-only mapping of (n_set,) float arrays."""

    FILE: ClassVar[str] = "losses.npz"
    by_set: Mapping[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.by_set[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_set)

    def __len__(self) -> int:
        return len(self.by_set)

    def save(self, directory: Path) -> None:
        _write(directory / self.FILE, self.by_set)

    @classmethod
    def load(cls, directory: Path) -> Losses:
        return cls(_read(directory / cls.FILE))


@dataclass(frozen=True)
class ReferenceRows:
    """The rows the reference attacks score (docs/SPEC.md §2.4): the contributor's members
    outside the generator's share, then the reserved half of her held-out rows."""

    FILE: ClassVar[str] = "reference_rows.npz"
    member: np.ndarray
    """(n,) int8, 1 = member."""
    target: np.ndarray
    """(n,) float, f's loss on each row."""
    stand_ins: np.ndarray
    """(k, n) float, each stand-in's loss on each row."""
    member_index: np.ndarray
    """(n_members,) int, the members' rows in the data stage's members."""
    nonmember_index: np.ndarray
    """(n_nonmembers,) int, the held-out rows' rows in her held-out set."""

    def save(self, directory: Path) -> None:
        _write(directory / self.FILE, {
            "member": self.member, "target": self.target, "stand_ins": self.stand_ins,
            "member_index": self.member_index, "nonmember_index": self.nonmember_index,
        })  # fmt: skip

    @classmethod
    def load(cls, directory: Path) -> ReferenceRows:
        arrays = _read(directory / cls.FILE)
        return cls(
            member=arrays["member"], target=arrays["target"], stand_ins=arrays["stand_ins"],
            member_index=arrays["member_index"], nonmember_index=arrays["nonmember_index"],
        )  # fmt: skip


@dataclass(frozen=True)
class UnitLosses:
    """f's mean loss per unit the split was drawn by (text: per document), members first."""

    FILE: ClassVar[str] = "unit_losses.npz"
    member: np.ndarray
    """(u,) int8, 1 = a member unit."""
    loss: np.ndarray
    """(u,) float, the unit's mean per-example loss."""
    unit: np.ndarray
    """(u,) int, the unit's index (a document number)."""

    def save(self, directory: Path) -> None:
        _write(directory / self.FILE, {"member": self.member, "loss": self.loss, "unit": self.unit})

    @classmethod
    def load(cls, directory: Path) -> UnitLosses:
        arrays = _read(directory / cls.FILE)
        return cls(member=arrays["member"], loss=arrays["loss"], unit=arrays["unit"])
