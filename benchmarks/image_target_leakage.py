"""How much the demo's image targets leak on the *member* side (what PANORAMIA can measure).

PANORAMIA counts only "member" guesses (docs/SPEC.md §2.1): a target leaks measurably when some of
its members score above almost every non-member. This script trains the recipes of
``panoramia/modalities/image/conf/target/<name>.yaml`` on the demo's embedded MNIST members (the
image audit's pools:
``pool_seed`` 0, the first ``--members`` of the 2,000), and a reference model of the same
recipe on ``--reference`` images of the disjoint control pool (as a helper trained on real
images would be). The pools come from the image audit's own data stage (``data=mnist``
defaults). It rates the members and the 1,000 real non-members with two scores:

- ``-loss``: the target's per-example loss, negated (the attack's loss feature alone);
- ``calibrated``: reference loss − target loss (difficulty calibration: an image that is hard
  for a model that never saw it but easy for the target).

and prints, per score: the AUC (positive class: member), the TPR at 1 % and 10 % FPR (as the
report computes them: the largest TPR with FPR ≤ α), and the share of members among the top
``--top`` fraction of scores against the members' base rate (precision above the base rate is
what a member-side guess can exploit).

    .venv/bin/python benchmarks/image_target_leakage.py cnn_overfit cnn_generalised \
        [--members 2000] [--reference 800] [--top 0.05]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from panoramia.measure.roc import roc_summary
from panoramia.modalities.image.config import ImageDataConfig
from panoramia.modalities.image.data import CONTROL_POOL, MEMBERS, NONMEMBERS, build_image_data
from panoramia.modalities.image.images import ImageSet, read_npz
from panoramia.modalities.image.training import ImageModelConfig, train_image_directory
from panoramia.pipeline.registry import existing_config_file
from panoramia.targets import load_target

FPRS = (0.01, 0.10)


def recipe(name: str) -> tuple[ImageModelConfig, int]:
    """The training fields of ``panoramia/modalities/image/conf/target/<name>.yaml`` and its
    ``train_seed``."""
    settings = OmegaConf.to_container(OmegaConf.load(existing_config_file(f"target/{name}.yaml")))
    names = {field.name for field in fields(ImageModelConfig)}
    model = ImageModelConfig(**{k: v for k, v in settings.items() if k in names})
    return model, int(settings.get("train_seed", 0))


def trained_losses(
    train: ImageSet, config: ImageModelConfig, rated: list[ImageSet], *, seed: int
) -> list[np.ndarray]:
    """Per-example losses (nats) of ``rated`` under ``config``'s network trained on ``train``."""
    with tempfile.TemporaryDirectory() as directory:
        train_image_directory(train, config, Path(directory), seed=seed, n_classes=10)
        model = load_target(Path(directory))
        return [model.per_example_loss(images) for images in rated]  # type: ignore[attr-defined]


def demo_pools() -> tuple[ImageSet, ImageSet, ImageSet]:
    """(members, control pool, real non-members) as the image audit's data stage writes them."""
    with tempfile.TemporaryDirectory() as directory:
        build_image_data(ImageDataConfig(), Path(directory))
        return tuple(
            read_npz(Path(directory) / name) for name in (MEMBERS, CONTROL_POOL, NONMEMBERS)
        )


def leakage(scores: np.ndarray, is_member: np.ndarray, top: float) -> dict[str, float]:
    """AUC, TPR at 1 % / 10 % FPR and the members' share of the top ``top`` of ``scores``."""
    roc = roc_summary(scores, is_member, fprs=FPRS)
    k = max(1, round(top * scores.size))
    return {
        "auc": roc.auc,
        "tpr@1%": roc.tpr_at_fpr[0.01],
        "tpr@10%": roc.tpr_at_fpr[0.10],
        "top_precision": float(is_member[np.argsort(-scores, kind="stable")[:k]].mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="names in the image plug-in's conf/target")
    parser.add_argument("--members", type=int, default=ImageDataConfig.pool_size)
    parser.add_argument("--reference", type=int, default=800)
    parser.add_argument("--top", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    pool_size = ImageDataConfig.pool_size
    if not 0 < args.members <= pool_size or not 0 < args.reference <= pool_size:
        parser.error(f"--members and --reference must be in (0, {pool_size}]")
    torch.set_num_threads(args.threads)
    members, control, nonmembers = demo_pools()
    members = members.take(np.arange(args.members))
    control = control.take(np.arange(args.reference))
    is_member = np.r_[np.ones(len(members)), np.zeros(len(nonmembers))].astype(np.int64)
    base_rate = is_member.mean()
    print(f"{len(members)} members, {len(nonmembers)} real non-members (base rate {base_rate:.3f})")
    print(f"reference models trained on {len(control)} images of the control pool")
    header = f"{'target':<22}{'score':<12}{'auc':>7}{'tpr@1%':>8}{'tpr@10%':>9}{'top prec':>10}"
    for name in args.targets:
        config, seed = recipe(name)
        start = time.perf_counter()
        target = np.concatenate(trained_losses(members, config, [members, nonmembers], seed=seed))
        reference = np.concatenate(
            trained_losses(control, config, [members, nonmembers], seed=seed + 1)
        )
        print(f"\n{name}: trained in {time.perf_counter() - start:.0f} s; median loss of "
              f"members {np.median(target[: len(members)]):.4f}, of non-members "
              f"{np.median(target[len(members) :]):.4f}\n{header}")  # fmt: skip
        for score, values in (("-loss", -target), ("calibrated", reference - target)):
            row = leakage(values, is_member, args.top)
            print(f"{name:<22}{score:<12}{row['auc']:>7.3f}{row['tpr@1%']:>8.3f}"
                  f"{row['tpr@10%']:>9.3f}{row['top_precision']:>10.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
