"""CatBoost targets saved in CatBoost's own model formats (``"format": "catboost-cbm"``):
``model.save_model("model.cbm")`` (its binary format) or ``model.save_model("model.json",
format="json")``, picked by the file's suffix and opened with
``CatBoostClassifier().load_model(path, format="cbm" | "json")``: trees, numbers and the
categorical features' statistics, never code (nothing is unpickled). CatBoost's reader
trusts its input, so it first reads a private copy of the file in a process of its own
(:mod:`panoramia.modalities.tabular.catboost_probe`): a file that crashes it is one line.

The model is fed as CatBoost saw it when trained on a pandas DataFrame: its own
``feature_names_`` say which data columns it reads, in which order; its ``cat_features`` take
the data's values as text (CatBoost hashes a category's text; an integer category is its
decimal text, so the data's ``1`` and ``1.0`` both reach it as ``"1"``); a value it never saw
is one it treats as unseen. Text and embedding features are refused.

The class order is the model's own (``classes_``, stored in the file): without ``classes`` in
``target.json`` the data's label values must be those class names (a model trained on the
``income`` strings reads ``<=50K``/``>50K`` as they are); ``classes`` maps them explicitly, in
the model's class order (a model trained on 0/1 for ``<=50K``/``>50K`` takes ``["<=50K",
">50K"]``). The label is the one data column the model does not read. Only losses whose
predictions are class probabilities are audited: ``Logloss``, ``CrossEntropy`` (binary) and
``MultiClass`` (softmax).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from catboost import CatBoostClassifier, CatBoostError, Pool

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.catboost_probe import probe_catboost
from panoramia.modalities.tabular.frame_features import (
    canonical,
    class_indices,
    class_probabilities,
    first_line,
    label_column,
    numbers,
)
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.interface import shown_values as _shown
from panoramia.targets.manifest import manifest_file

FORMAT = "catboost-cbm"
FILE_FORMATS = {".cbm": "cbm", ".json": "json"}
"""The model file's suffix → the format CatBoost reads it in."""
CBM_MAGIC = b"CBM1"
"""The first bytes of every ``.cbm`` file."""
PROBABILITY_LOSSES = ("Logloss", "CrossEntropy", "MultiClass")
"""CatBoost loss functions whose predictions are class probabilities (the losses need them)."""


def _check_opening(path: Path, kind: str, *, shown: str) -> None:
    """InputError naming ``shown`` unless ``path`` begins as a CatBoost file of ``kind``
    does (read before CatBoost's own parser sees it)."""
    with open(path, "rb") as stream:
        start = stream.read(64)
    fits = start.startswith(CBM_MAGIC) if kind == "cbm" else start.lstrip()[:1] == b"{"
    if not fits:
        saved = 'model.save_model("model.cbm")' if kind == "cbm" else 'format="json"'
        raise InputError(f"model {shown!r}: not a CatBoost {kind} model (save it with {saved})")


def _category_text(value: object) -> str:
    """A categorical value as CatBoost hashes it: text as it is; a number as its decimal
    text, an integer-valued one without a fraction (``1.0`` is ``"1"``)."""
    if isinstance(value, str):
        return value
    return canonical(value)


@dataclass
class CatBoostTarget:
    """A CatBoost classifier seen through its per-example losses (see the module docstring)."""

    model: CatBoostClassifier
    classes: list[str]
    """The data's label values in the model's class-index order."""
    files: dict[str, str]
    own_classes: bool = False
    """Whether ``classes`` are the model's own class names (no ``classes`` in target.json)."""

    @classmethod
    def load(cls, directory: Path, manifest: dict) -> CatBoostTarget:
        """The target of ``manifest`` in ``directory``: its ``file`` a ``.cbm`` or ``.json``
        CatBoost model with a probability loss; ``classes`` (optional) the label values in
        the model's class order."""
        path = manifest_file(directory, manifest, "file")
        kind = FILE_FORMATS.get(path.suffix.lower())
        if kind is None:
            raise InputError(f"model {str(path)!r}: CatBoost targets must be .cbm or .json")
        with tempfile.TemporaryDirectory(prefix="panoramia-catboost-") as private:
            copy = Path(private) / f"model.{kind}"  # the bytes probed are the bytes opened
            shutil.copyfile(path, copy)
            _check_opening(copy, kind, shown=str(path))
            digest = file_sha256(copy)
            refused = probe_catboost(copy, kind, shown=str(path))
            if refused is not None:
                refused = refused.replace(str(copy), str(path))
                raise InputError(f"model {str(path)!r}: not a CatBoost model ({refused})")
            model = CatBoostClassifier()
            try:
                model.load_model(str(copy), format=kind)
                loss = str(model.get_all_params().get("loss_function", "unknown")).split(":")[0]
                own = [canonical(c) for c in model.classes_]
                special = [
                    *model.get_text_feature_indices(),
                    *model.get_embedding_feature_indices(),
                ]
            except (CatBoostError, ValueError, KeyError, TypeError) as error:
                line = first_line(error).replace(str(copy), str(path))
                raise InputError(f"model {str(path)!r}: not a CatBoost model ({line})") from None
        if loss not in PROBABILITY_LOSSES:
            raise InputError(
                f"model {str(path)!r}: loss function {loss!r} does not predict class "
                f"probabilities; train a CatBoostClassifier ({', '.join(PROBABILITY_LOSSES)})"
            )
        if special:
            names = [model.feature_names_[i] for i in special]
            raise InputError(
                f"model {str(path)!r}: text or embedding features {_shown(names)} are not "
                "audited (categorical and numeric features only)"
            )
        classes = _classes(manifest, own, where=str(directory))
        return cls(model, classes, {"file": digest}, own_classes="classes" not in manifest)

    def _pool(self, rows: pd.DataFrame) -> tuple[Pool, str]:
        """The model's features from ``rows`` as a CatBoost pool, and the label column."""
        names = [str(n) for n in self.model.feature_names_]
        label = label_column(rows, names)
        categorical = set(self.model.get_cat_feature_indices())
        frame = pd.DataFrame(index=rows.index)
        for index, name in enumerate(names):
            if index in categorical:
                frame[name] = rows[name].map(_category_text)
            else:
                frame[name] = numbers(rows, name)
        return Pool(frame, cat_features=sorted(categorical)), label

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        """−log p(true class) in nats, float64 of shape (n,), from the model's
        ``predict_proba`` (its columns in the model's class order)."""
        pool, label = self._pool(rows)
        if self.own_classes:
            hint = " (give 'classes' in target.json to map the data's values onto them)"
            labels = class_indices(rows, label, self.classes, "model's own classes", hint)
        else:
            labels = class_indices(rows, label, self.classes)
        try:
            # One thread, as LightGBM's (lightgbm_target.py): CatBoost's default is every core.
            output = np.asarray(self.model.predict_proba(pool, thread_count=1), dtype=np.float64)
        except (CatBoostError, ValueError) as error:
            raise InputError(
                f"target: the CatBoost model refused the data ({first_line(error)})"
            ) from None
        return loss_from_probabilities(class_probabilities(output, self.classes), labels)

    def identity(self) -> dict[str, object]:
        return {"format": FORMAT, "sha256": self.files}


def _classes(manifest: dict, own: list[str], *, where: str) -> list[str]:
    """The data's label values in the model's class order: the manifest's ``classes`` (as
    many as the model's), else the model's own class names."""
    classes = manifest.get("classes")
    if "classes" not in manifest:
        if len(own) < 2:
            raise InputError(
                f"target {where!r}: the CatBoost model stores no class names; give 'classes' "
                "in target.json (the data's label values in the model's class order)"
            )
        return own
    if not isinstance(classes, list) or len(classes) != len(own):
        raise InputError(
            f"target {where!r}: 'classes' in target.json must list {len(own)} label values "
            f"(the model's classes {_shown(own)}, in that order), got {classes!r:.200}"
        )
    return [str(c) for c in classes]
