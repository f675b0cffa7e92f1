"""The ``claim`` section of an audit's settings read as the accounting's objects: the claim
(:func:`claim_of`), the law of its tuning runs (:func:`run_count_of`) and the check that the
accounting can take it (:func:`check_claim`, the claim rule of
``panoramia/audit_settings.py``). Every problem is an :class:`~panoramia.errors.InputError`
naming the ``claim.*`` key. The section's fields are
``panoramia.pipeline.config.ClaimConfig``'s; the service's JSON schema of the same section is
``panoramia/service/claim_schema.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panoramia.accounting.claims import Claim, DpSgdClaim, EpsDeltaClaim, NoClaim
from panoramia.accounting.dpsgd import check_accountable
from panoramia.accounting.run_count import RunCount, TruncatedNegativeBinomial, run_count_from_dict
from panoramia.errors import InputError


def check_claim(claim: Mapping[str, Any]) -> None:
    """The ``claim`` section is a claim the accounting takes (:func:`claim_of`) and, for
    DP-SGD, can account for (``panoramia.accounting.dpsgd.check_accountable``: σ, T and the
    span of the privacy loss)."""
    try:
        built = claim_of(claim)
    except OverflowError:
        raise InputError(
            "claim.epochs, claim.sample_rate: T = ⌈epochs/q⌉ is beyond the steps accounted"
        ) from None
    if isinstance(built, DpSgdClaim):
        check_accountable(built)


TUNING_FIELDS = {
    "fixed": ("runs",), "tnb": ("eta", "gamma"), "poisson": ("rate",),
    "binomial": ("trials", "probability"),
}  # fmt: skip


def run_count_of(tuning: Mapping[str, Any]) -> RunCount | None:
    """The law of K of the ``claim.tuning`` section (None for one run); :class:`InputError`
    names a missing or bad field."""
    kind = tuning.get("kind", "none")
    if kind == "none":
        return None
    if kind == "geometric":
        if tuning.get("mean") is None:
            raise InputError("claim.tuning.mean: required for geometric tuning")
        return TruncatedNegativeBinomial.geometric(tuning["mean"])
    fields = TUNING_FIELDS.get(kind)
    if fields is None:
        raise InputError(
            "claim.tuning.kind: must be none, fixed, tnb, geometric, poisson or binomial, "
            f"got {kind!r}"
        )
    missing = [name for name in fields if tuning.get(name) is None]
    if missing:
        raise InputError(f"claim.tuning.{missing[0]}: required for {kind} tuning")
    return run_count_from_dict({"kind": kind} | {name: tuning[name] for name in fields})


def claim_of(claim: Mapping[str, Any]) -> Claim:
    """The claim of the ``claim`` section (``panoramia.pipeline.config.ClaimConfig``'s
    fields); :class:`InputError` names a missing or bad field."""
    tuning = run_count_of(claim.get("tuning") or {})
    kind = claim.get("kind", "none")
    if kind == "none":
        return NoClaim()
    if kind == "dpsgd":
        if claim.get("noise_multiplier") is None:
            raise InputError("claim.noise_multiplier: required for a dpsgd claim")
        return DpSgdClaim.single_phase(
            claim["noise_multiplier"], sample_rate=claim.get("sample_rate"),
            batch_size=claim.get("batch_size"), dataset_size=claim.get("dataset_size"),
            steps=claim.get("steps"), epochs=claim.get("epochs"),
            neighbouring=claim.get("neighbouring", "add_remove"), tuning=tuning,
        )  # fmt: skip
    if kind == "eps_delta":
        if claim.get("epsilon") is None or claim.get("delta") is None:
            raise InputError("claim.epsilon, claim.delta: required for an eps_delta claim")
        return EpsDeltaClaim(claim["epsilon"], claim["delta"], tuning)
    raise InputError(f"claim.kind: must be none, dpsgd or eps_delta, got {kind!r}")
