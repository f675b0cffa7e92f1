"""The reference attack by group (docs/SPEC.md §2.4, "by group"): for each group of the scored
rows (a column's value, the label's classes first), the attack's AUC of its members against its
held-out rows, tested family-wise over the groups by one permutation of the membership labels.

Where the split into members and held-out rows was drawn at random, every permutation of the
scored rows' labels is as likely as the one drawn under the null "the target never saw the
members", whatever the scores; one permutation relabels every group at once, so the largest
standardised statistic over the groups has the same null distribution as the observed one
(max-T; Westfall & Young). A group *stands out* when its own statistic beats that maximum
in at most α of the draws: the family-wise rate over the groups tested is α.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from panoramia.measure.jsonable import number
from panoramia.measure.validation import check_membership, check_scores

MIN_GROUP_ROWS = 20
"""A group is tested where it holds at least this many scored members and held-out rows."""


@dataclass(frozen=True)
class GroupReading:
    """One group's reading: its counts, its AUC (members vs its held-out rows; 0.5: none),
    and its family-wise p (None where too small to test or the test is off)."""

    column: str
    value: str
    members: int
    nonmembers: int
    auc: float | None
    p: float | None
    stands_out: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column, "value": self.value, "members": self.members,
            "nonmembers": self.nonmembers, "auc": number(self.auc),
            "p": number(self.p), "stands_out": self.stands_out,
        }  # fmt: skip


def group_readings(
    scores: object,
    membership: object,
    groups: list[tuple[str, str, np.ndarray]],
    *,
    tested: bool = True,
    false_alarm_rate: float = 0.05,
    draws: int = 999,
    seed: int = 0,
    min_rows: int = MIN_GROUP_ROWS,
) -> list[GroupReading]:
    """Each group's AUC and family-wise test.

    ``scores`` (n,): the attack's scores, higher = member; ``membership`` (n,) 0/1, 1 = a
    member; ``groups``: (column, value, mask) with mask (n,) bool, the rows of the group.
    ``tested`` False (the split was not drawn by the audit): AUCs only, no p. A group with
    fewer than ``min_rows`` members or held-out rows gets its counts only."""
    labels = check_membership(membership)
    values = check_scores(scores, name="scores", n=labels.size)
    sizes = [(int(labels[m].sum()), int((1 - labels[m]).sum())) for _, _, m in groups]
    kept = [i for i, (n1, n0) in enumerate(sizes) if n1 >= min_rows and n0 >= min_rows]
    aucs: dict[int, float] = {}
    p_values: dict[int, float] = {}
    if kept:
        # within-group ranks (ties averaged): the rank sum of a group's members is its
        # Mann–Whitney statistic, whatever the labels, so a draw needs only matrix products
        ranks = np.zeros((len(kept), labels.size))
        masks = np.zeros((len(kept), labels.size))
        for row, index in enumerate(kept):
            mask = groups[index][2]
            ranks[row, mask] = rankdata(values[mask])
            masks[row, mask] = 1.0
        sizes_all = masks.sum(axis=1)

        def standardised(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            n1 = masks @ flags
            n0 = sizes_all[:, None] - n1 if flags.ndim == 2 else sizes_all - n1
            u = ranks @ flags - n1 * (n1 + 1) / 2
            total = sizes_all[:, None] if flags.ndim == 2 else sizes_all
            spread = np.sqrt(np.maximum(n1 * n0 * (total + 1) / 12.0, 1e-12))
            return (u - n1 * n0 / 2) / spread, u / np.maximum(n1 * n0, 1)

        observed, auc = standardised(labels.astype(float))
        aucs = {index: float(auc[row]) for row, index in enumerate(kept)}
        if tested:
            rng = np.random.default_rng(seed)
            exceed = np.zeros(len(kept))
            for start in range(0, draws, 100):
                block = min(100, draws - start)
                flags = np.stack([rng.permutation(labels) for _ in range(block)], axis=1)
                z, _ = standardised(flags.astype(float))
                top = z.max(axis=0)  # the largest over the groups, per draw
                exceed += (top[None, :] >= observed[:, None]).sum(axis=1)
            p_values = {index: float((1 + exceed[row]) / (draws + 1))
                        for row, index in enumerate(kept)}  # fmt: skip
    return [
        GroupReading(
            column=column,
            value=value,
            members=sizes[i][0],
            nonmembers=sizes[i][1],
            auc=aucs.get(i),
            p=p_values.get(i),
            stands_out=p_values.get(i, 1.0) <= false_alarm_rate,
        )
        for i, (column, value, _) in enumerate(groups)
    ]
