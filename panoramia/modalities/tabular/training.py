"""Training tabular models into target directories (demo targets and the helper model h).

A target directory holds ``target.json`` (see :mod:`panoramia.targets`), the model file and
``encoder.json``; :func:`panoramia.targets.load_target` opens it for per-example losses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import pandas as pd

from panoramia.modalities.tabular.encoding import TabularEncoder
from panoramia.modalities.tabular.table import TabularSchema
from panoramia.setting_bounds import COUNT, RATE, Limit, Range, ranged, ranged_list
from panoramia.targets.manifest import MANIFEST

if TYPE_CHECKING:
    from panoramia.models.dp_settings import DpSgdSettings

MLP_MODULE = "panoramia.modalities.tabular.mlp:TabularMLP"


class MlpKwargs(TypedDict):
    """TabularMLP's arguments, as target.json's ``kwargs`` holds them."""

    n_features: int
    n_classes: int
    hidden: list[int]


@dataclass
class MlpConfig:
    """A TabularMLP and how to train it (the demo targets and the helper share this)."""

    hidden: list[int] = ranged_list(
        lambda: [150, 100, 50, 10], most=32, each=COUNT, limit=Limit.WIDTH
    )
    epochs: int = ranged(10, COUNT, limit=Limit.EPOCHS)
    batch_size: int = ranged(256, COUNT)
    learning_rate: float = ranged(1e-3, RATE)
    weight_decay: float = ranged(0.0, Range(0, 10))
    accelerator: str = "auto"
    devices: str = "auto"
    precision: str | None = None


def train_mlp_directory(
    rows: pd.DataFrame,
    schema: TabularSchema,
    config: MlpConfig,
    directory: Path,
    *,
    seed: int,
    validation: pd.DataFrame | None = None,
    dp: DpSgdSettings | None = None,
) -> dict[str, object]:
    """Train a TabularMLP on ``rows`` and save it as a torch-safetensors target directory.

    With ``validation`` rows, the epoch with the lowest validation loss is kept. With ``dp``,
    it is trained with DP-SGD (no validation) and the metrics gain ``dp_sgd``: what the
    training did (:meth:`~panoramia.models.dp_training.DpSgdRun.to_dict`; ε None without
    noise). Returns the training metrics.
    """
    import torch
    from safetensors.torch import save_file

    from panoramia.modalities.tabular.mlp import TabularMLP
    from panoramia.models.training import TrainingConfig, fit_classifier

    encoder = TabularEncoder.fit(rows, schema)
    kwargs: MlpKwargs = {
        "n_features": encoder.n_features,
        "n_classes": encoder.n_classes,
        "hidden": list(config.hidden),
    }
    training = TrainingConfig(
        epochs=config.epochs, batch_size=config.batch_size, learning_rate=config.learning_rate,
        weight_decay=config.weight_decay, seed=seed, accelerator=config.accelerator,
        devices=config.devices, precision=config.precision,
        select_best_on_validation=validation is not None,
    )  # fmt: skip
    encoded_validation = (
        (encoder.features(validation), encoder.labels(validation))
        if validation is not None
        else None
    )
    torch.manual_seed(seed)  # the initial weights too, not only training, follow the seed
    train = (encoder.features(rows), encoder.labels(rows))
    dp_facts: dict[str, object] = {}
    if dp is not None:
        from panoramia.models.dp_training import fit_classifier_dpsgd

        if validation is not None:
            raise ValueError("DP-SGD training selects no epoch on validation rows")
        model, metrics, run = fit_classifier_dpsgd(TabularMLP(**kwargs), train, training, dp)
        dp_facts = {"dp_sgd": run.to_dict()}
    else:
        model, metrics = fit_classifier(TabularMLP(**kwargs), train, training, encoded_validation)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, directory / "model.safetensors")
    encoder.save(directory / "encoder.json")
    manifest = {
        "format": "torch-safetensors",
        "module": MLP_MODULE,
        "kwargs": kwargs,
        "weights": "model.safetensors",
        "encoder": "encoder.json",
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return {**metrics, **dp_facts}


@dataclass
class XGBoostTargetConfig:
    n_estimators: int = 300
    max_depth: int = 6
    learning_rate: float = 0.1


def train_xgboost_directory(
    rows: pd.DataFrame,
    schema: TabularSchema,
    config: XGBoostTargetConfig,
    directory: Path,
    *,
    seed: int,
) -> dict[str, float]:
    """Train an xgboost classifier on ``rows`` and save it as an xgboost-json target."""
    import xgboost as xgb

    encoder = TabularEncoder.fit(rows, schema)
    labels = encoder.labels(rows)
    model = xgb.XGBClassifier(
        n_estimators=config.n_estimators, max_depth=config.max_depth,
        learning_rate=config.learning_rate, n_jobs=1, random_state=seed,
    )  # fmt: skip
    model.fit(encoder.features(rows), labels)
    directory.mkdir(parents=True, exist_ok=True)
    model.get_booster().save_model(str(directory / "model.xgb.json"))
    encoder.save(directory / "encoder.json")
    manifest = {"format": "xgboost-json", "file": "model.xgb.json", "encoder": "encoder.json"}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1))
    train_accuracy = float((model.predict(encoder.features(rows)) == labels).mean())
    return {"train_accuracy": train_accuracy}
