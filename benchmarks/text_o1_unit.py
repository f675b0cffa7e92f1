"""Does the text audit's O(1) hold its level? Per chunk against per document, under the
document split's own randomisation (issue 75, docs/RESULTS.md §24).

The embedded text is shuffled by *document* into the target's pool (members), the control's
pool and real non-members (``panoramia/modalities/text/data.py::_pools``); a document holds up
to 50 chunks. The disjoint controls never saw a chunk of the members' or the non-members'
documents, so for them "f never saw the members" holds for *every* re-drawing of which of
those documents are members: re-drawing it with the pool rule (a seeded permutation of whole
documents, the members' pool filled to ``pool_chunks``) is an exact draw from the null. For
each re-drawing this script plays both O(1) tests on the control's own losses:

- **per chunk** (the rule before): the audit's chunks drawn as the split stage draws them
  (20 % of the member chunks, as many non-member chunks), one coin per slot;
- **per document** (SPEC §2.4, amended 2026-12-02): one score per document (minus the mean
  of f's loss over all its chunks), as many member documents drawn as there are non-member
  ones, paired at random, one coin per pair.

It prints, per control, how often each test's p is ≤ 0.025 (O(1) alone calls a leak: the
verdict's Bonferroni half of α = 0.05) and ≤ 0.05 (ε_lb > 0: a borderline), with the
within-document correlation of the losses (one-way ICC) and the calls by direction on the
real split. For every target it prints both tests as the audit plays them on the real split
(generation seed 303, spent; seeds 0–4: for the leaking targets, the
per-document test's power). Uses only the data, the public base and the targets (content-
addressed stages, reused from ``--artifacts``); no generator, no audit set is read.

    .venv/bin/python benchmarks/text_o1_unit.py [--draws 400] [--artifacts DIR] \
        [--overrides threads=2] \
        [--targets gpt2_disjoint lora_disjoint gpt2_many_epochs lora_many_epochs]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

CONTROLS = ("gpt2_disjoint", "lora_disjoint")
SPENT_GENERATION_SEED = 303
"""A text generation seed already judged on (docs/RESULTS.md §23)."""
CALL, BORDER = 0.025, 0.05


def build_target_stages(
    target: str, artifacts: Path, overrides: list[str]
) -> tuple[Any, dict[str, Any]]:
    """The text demo's data, public base and ``target`` stages (built or reused)."""
    from omegaconf import OmegaConf

    from panoramia.pipeline.registry import compose_job
    from panoramia.pipeline.stages import StageRunner
    from panoramia.pipeline.store import ArtifactStore
    from panoramia.plugins import modality

    arguments = ["--config-name=text", f"artifacts_dir={artifacts}", f"target={target}"]
    arguments += overrides
    job = OmegaConf.to_object(compose_job(arguments))
    pipeline = modality("text").pipeline_class()(job, StageRunner(ArtifactStore(artifacts)))
    built: dict[str, Any] = {}
    for spec in pipeline.graph():
        if spec.name in {"data", "base", "target"}:
            built[spec.name] = spec.build(
                pipeline, {n: built[n] for n in spec.inputs if n in built}
            )
    return pipeline, built


def chunk_losses(pipeline: Any, built: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """(documents, mean per-chunk loss) over the members' and non-members' chunks, and how
    many of them are the members' (first)."""
    from panoramia.modalities.text.data import MEMBERS, NONMEMBERS
    from panoramia.modalities.text.documents import read_chunks
    from panoramia.pipeline.stages.losses import model_directory
    from panoramia.targets import load_target

    adapter = load_target(model_directory(built["target"]))
    sets = [read_chunks(built["data"].directory / name) for name in (MEMBERS, NONMEMBERS)]
    losses = [pipeline.side_losses(adapter, chunks).mean(axis=1) for chunks in sets]
    documents = np.concatenate([chunks.documents for chunks in sets])
    return documents, np.concatenate(losses), len(sets[0])


def icc(groups: np.ndarray, values: np.ndarray) -> float:
    """One-way intraclass correlation of ``values`` within ``groups`` (ANOVA estimator)."""
    labels, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, values) / counts
    k, n = labels.size, values.size
    between = np.sum(counts * (means - values.mean()) ** 2) / (k - 1)
    within = np.sum((values - means[inverse]) ** 2) / (n - k)
    n0 = (n - np.sum(counts**2) / n) / (k - 1)
    return float((between - within) / (between + (n0 - 1) * within))


def redraw(documents: np.ndarray, rng: np.random.Generator, pool_chunks: int) -> np.ndarray:
    """Which documents are members under a fresh draw of the pool rule: whole documents in a
    random order, the members' pool filled until it holds ``pool_chunks`` chunks."""
    labels, counts = np.unique(documents, return_counts=True)
    order = rng.permutation(labels.size)
    end = int(np.searchsorted(np.cumsum(counts[order]), pool_chunks)) + 1
    return labels[order[:end]]


def per_chunk(member: np.ndarray, losses: np.ndarray, rng: np.random.Generator) -> Any:
    """The rule before: 20 % of the member chunks against as many non-member chunks (the
    split stage's audit parts), one fair coin per slot."""
    from panoramia.measure import o1_audit

    members, others = np.flatnonzero(member), np.flatnonzero(~member)
    m = int(np.floor(0.2 * members.size))
    shown_m = rng.choice(members, m, replace=False)
    # the non-members' audit part follows their attack train (20 %) and validation (10 %)
    order = rng.permutation(others)[int(np.floor(0.3 * members.size)) :][:m]
    m_ref = min(m, order.size)
    coins = rng.integers(0, 2, m_ref)
    shown = np.where(coins == 1, shown_m[:m_ref], order[:m_ref])
    return o1_audit(coins, -losses[shown], seed=int(rng.integers(1 << 31)))


def per_document(
    documents: np.ndarray, member_documents: np.ndarray, losses: np.ndarray,
    rng: np.random.Generator,
) -> Any:  # fmt: skip
    """The amended rule, as the audit plays it: one score per document (its chunks' mean
    loss), the paired game of :func:`panoramia.measure.real_nonmembers.o1_on_units` (its
    game's seed drawn first, then its tie-break's)."""
    from panoramia.measure.real_nonmembers import o1_on_units
    from panoramia.modalities.text.reference_units import document_losses

    units = document_losses(documents, losses, np.isin(documents, member_documents))
    game_seed = int(rng.integers(1 << 31))
    return o1_on_units(
        units["member"], units["loss"], game_seed=game_seed, audit_seed=int(rng.integers(1 << 31))
    )


def pipeline_per_chunk(
    losses: np.ndarray, n_members: int, fractions: dict[str, float], generation_seed: int,
    seed: int,
) -> Any:  # fmt: skip
    """The rule before exactly as a run at (``generation_seed``, ``seed``) plays it: the split
    stage's audit chunks (``member_parts``, the non-members' seeded order), the game's
    reference coins and O(1)'s tie-break seed."""
    from panoramia.measure import o1_audit
    from panoramia.pipeline.seeds import child_rng, child_seed
    from panoramia.pipeline.stages.splits import member_parts, split_sizes

    sizes = split_sizes(n_members, fractions)
    parts = member_parts(n_members, sizes, generation_seed=generation_seed, seed=seed)
    n_others = losses.size - n_members
    order = child_rng(seed, "split/nonmembers").permutation(n_others)
    start = sizes["attack_train"] + sizes["attack_val"]
    nonmember_audit = order[start : start + min(sizes["audit"], max(0, n_others - start))]
    m_ref = min(parts["audit"].size, nonmember_audit.size)
    coins = child_rng(seed, "game/reference").integers(0, 2, m_ref).astype(np.int8)
    member_loss = losses[:n_members][parts["audit"][:m_ref]]
    other_loss = losses[n_members:][nonmember_audit[:m_ref]]
    loss = np.where(coins == 1, member_loss, other_loss)
    return o1_audit(coins, -loss, seed=child_seed(seed, "o1"))


def audit_per_document(
    documents: np.ndarray, losses: np.ndarray, n_members: int, seed: int
) -> Any:  # fmt: skip
    """The per-document O(1) exactly as a run at ``seed`` plays it (reporting's draws)."""
    from panoramia.measure.real_nonmembers import o1_on_units
    from panoramia.modalities.text.reference_units import document_losses
    from panoramia.pipeline.seeds import child_seed

    units = document_losses(documents, losses, np.arange(losses.size) < n_members)
    return o1_on_units(
        units["member"], units["loss"], game_seed=child_seed(seed, "o1/units"),
        audit_seed=child_seed(seed, "o1"),
    )  # fmt: skip


def scan(
    documents: np.ndarray, losses: np.ndarray, n_members: int, pipeline: Any,
    generation_seeds: range,
) -> None:  # fmt: skip
    """On the demo's one document split: the rule before at every (generation seed, seed 0
    and 1) of ``generation_seeds`` (how often it calls, and the runs it calls), and the
    per-document test at as many seeds."""
    fractions = asdict(pipeline.job.data.split)
    calls, p_values = [], []
    for generation_seed in generation_seeds:
        for seed in (0, 1):
            result = pipeline_per_chunk(losses, n_members, fractions, generation_seed, seed)
            p_values.append(result.p_value)
            if result.p_value <= BORDER:
                calls.append(
                    f"generation seed {generation_seed}, seed {seed}: p {result.p_value:.4f}, "
                    f"{result.k_plus} member and {result.k_minus} non-member calls, {result.v} "
                    f"right, eps_lb {result.eps_lb:.3f}"
                )
    per_unit = [
        audit_per_document(documents, losses, n_members, seed) for seed in range(len(p_values))
    ]
    q = np.asarray([result.p_value for result in per_unit])
    print(
        f"  per document on the real split, seeds 0–{q.size - 1}: p <= {CALL} in "
        f"{np.mean(q <= CALL):.1%}, p <= {BORDER} in {np.mean(q <= BORDER):.1%}"
    )
    p = np.asarray(p_values)
    print(
        f"  rule before on the real split, generation seeds {generation_seeds.start}–"
        f"{generation_seeds.stop - 1} × seeds 0, 1 ({p.size} runs): p <= {CALL} in "
        f"{np.mean(p <= CALL):.1%}, p <= {BORDER} in {np.mean(p <= BORDER):.1%}"
    )
    for line in calls:
        print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--overrides", nargs="*", default=["threads=2"])
    parser.add_argument("--artifacts", type=Path, default=Path(".panoramia/artifacts"))
    parser.add_argument("--targets", nargs="+", default=[*CONTROLS, "gpt2_many_epochs",
                                                          "lora_many_epochs"])  # fmt: skip
    arguments = parser.parse_args()
    for target in arguments.targets:
        start = time.monotonic()
        pipeline, built = build_target_stages(target, arguments.artifacts, arguments.overrides)
        documents, losses, n_members = chunk_losses(pipeline, built)
        real_members = np.unique(documents[:n_members])
        print(
            f"\n{target}: {np.unique(documents).size} documents ({real_members.size} members),"
            f" {losses.size} chunks; ICC of the chunk losses within documents "
            f"{icc(documents, losses):.3f}; stages and losses {time.monotonic() - start:.0f} s"
        )
        rng = np.random.default_rng(75)
        fractions = asdict(pipeline.job.data.split)
        for seed in range(5):  # as the audit plays them (generation seed 303, spent)
            chunk = pipeline_per_chunk(losses, n_members, fractions, SPENT_GENERATION_SEED, seed)
            document = audit_per_document(documents, losses, n_members, seed)
            print(
                f"  real split, generation seed {SPENT_GENERATION_SEED}, seed {seed}: per chunk "
                f"p {chunk.p_value:.4f} (k+ {chunk.k_plus}, k- {chunk.k_minus}, {chunk.v} of "
                f"{chunk.r} right, eps_lb {chunk.eps_lb:.3f}); per document p "
                f"{document.p_value:.4f} (k+ {document.k_plus}, k- {document.k_minus}, "
                f"{document.v} of {document.r} right, eps_lb {document.eps_lb:.3f})"
            )
        if target not in CONTROLS:
            continue
        scan(documents, losses, n_members, pipeline, range(300, 500))
        pool_chunks = int(pipeline.job.data.pool_chunks)
        p_chunk, p_document = [], []
        start = time.monotonic()
        for _ in range(arguments.draws):
            drawn = redraw(documents, rng, pool_chunks)
            p_chunk.append(per_chunk(np.isin(documents, drawn), losses, rng).p_value)
            p_document.append(per_document(documents, drawn, losses, rng).p_value)
        for name, values in (("per chunk", p_chunk), ("per document", p_document)):
            p = np.asarray(values)
            print(
                f"  null ({arguments.draws} re-drawn splits), {name}: p <= {CALL} in "
                f"{np.mean(p <= CALL):.1%}, p <= {BORDER} in {np.mean(p <= BORDER):.1%}"
            )
        print(f"  ({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
