"""How far a bag of words tells the text generator's chunks from real members, per sampling rule.

Builds (or reuses, from the artifact store) the text audit's data, D_G, public base,
generator and splits for ``--generation-seed`` (use seeds already spent: this is for choosing
a rule, never for judging one), then for each sampling rule draws as many chunks as the
attack split holds real members (its train and validation parts, never the audit set) and
fits the blind classifier of docs/SPEC.md §2.9 (token 1–2-grams, logistic regression) out of
fold on real (positive class) against generated. Prints per rule the out-of-fold AUC (0.5:
indistinguishable) and the game's one-sided c_lb on those scores (what the blind baseline
would bound, at this split's size), and the seconds the draw took.

    .venv/bin/python benchmarks/text_generator_blindness.py --generation-seed 6 \
        [--rules 'top_k=200' 'top_k=null' 'top_k=null,temperature=1.1'] [--artifacts DIR]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np


def build_stages(generation_seed: int, artifacts: Path) -> dict[str, Any]:
    """The stages up to the game for the text demo's defaults at ``generation_seed``."""
    from omegaconf import OmegaConf

    from panoramia.pipeline.registry import compose_job
    from panoramia.pipeline.stages import StageRunner
    from panoramia.pipeline.store import ArtifactStore
    from panoramia.plugins import modality

    arguments = ["--config-name=text", f"artifacts_dir={artifacts}"]
    job = OmegaConf.to_object(compose_job([*arguments, f"generation_seed={generation_seed}"]))
    pipeline = modality("text").pipeline_class()(job, StageRunner(ArtifactStore(artifacts)))
    wanted = {"data", "generator_data", "base", "generator", "split"}
    built: dict[str, Any] = {}
    for spec in pipeline.graph():
        if spec.name in wanted:
            built[spec.name] = spec.build(
                pipeline, {n: built[n] for n in spec.inputs if n in built}
            )
    return built


def parse_rule(rule: str) -> dict[str, Any]:
    """``top_k=null,temperature=1.1`` → {"top_k": None, "temperature": 1.1}."""
    settings: dict[str, Any] = {}
    for part in filter(None, rule.split(",")):
        name, value = part.split("=")
        settings[name] = (
            None if value == "null" else (int(value) if name == "top_k" else float(value))
        )
    return settings


def blindness(real: np.ndarray, generated: np.ndarray) -> tuple[float, float]:
    """(out-of-fold AUC, one-sided c_lb) of the blind classifier, real = positive class."""
    from sklearn.metrics import roc_auc_score

    from panoramia.measure.measurement import measure
    from panoramia.modalities.text.blind import BlindTextClassifier

    labels = np.r_[np.ones(len(real)), np.zeros(len(generated))].astype(int)
    classifier = BlindTextClassifier(seed=0).fit(np.concatenate([real, generated]), labels)
    logits = classifier.training_logits
    assert logits is not None
    scores = 1.0 / (1.0 + np.exp(-logits))
    return float(roc_auc_score(labels, logits)), measure(
        labels, baseline_scores=scores, attack_scores=scores
    ).c_lb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generation-seed", type=int, required=True)
    parser.add_argument("--rules", nargs="+", default=["top_k=200", "top_k=null"])
    parser.add_argument("--artifacts", type=Path, default=Path(".panoramia/artifacts"))
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()

    import torch

    from panoramia.modalities.text.documents import concat_chunks, read_chunks
    from panoramia.modalities.text.generator import TextGenerator

    torch.set_num_threads(arguments.threads)
    stages = build_stages(arguments.generation_seed, arguments.artifacts)
    split, generator_dir = stages["split"].directory, stages["generator"].directory
    real = concat_chunks(
        [read_chunks(split / f"member_{part}.npz") for part in ("attack_train", "attack_val")]
    )
    generator = TextGenerator.load(generator_dir)
    prompts = read_chunks(generator_dir / "prompts.npz")
    fitted = generator.config
    print(f"generation seed {arguments.generation_seed}: {len(real)} real members (attack split)")
    print("| rule | AUC | c_lb (one-sided) | draw, s |")
    print("|---|---|---|---|")
    for rule in arguments.rules:
        generator.config = replace(fitted, **parse_rule(rule))
        started = time.perf_counter()
        drawn = generator.sample(prompts, len(real), seed=123)
        seconds = time.perf_counter() - started
        auc, c_lb = blindness(real.tokens, drawn.tokens)
        print(f"| {rule} | {auc:.3f} | {c_lb:.3f} | {seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
