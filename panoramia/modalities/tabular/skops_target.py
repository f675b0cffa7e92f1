"""scikit-learn targets saved with skops (no pickle): an estimator taking raw feature rows.

skops loads the types it trusts by default (scikit-learn, numpy, scipy). Any other type in
the file is loaded only if its module is inside ``target.trusted_modules`` (the user's or the
operator's explicit choice, as for torch manifests): a manifest never vouches for its own file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.tabular.table import TabularSchema
from panoramia.targets.interface import loss_from_probabilities
from panoramia.targets.interface import shown_values as _shown
from panoramia.targets.manifest import manifest_file
from panoramia.targets.trust import is_trusted


@dataclass
class SkopsTarget:
    """``estimator.predict_proba(rows[features])``; ``classes_`` are the label values."""

    estimator: object
    schema: TabularSchema
    files: dict[str, str]
    classes: list[str] | None = None
    """The manifest's ``classes``: the data's label values in the model's class-index order
    (a model trained on 0/1 for data that says ``<=50K``/``>50K``); None: the model's own
    ``classes_`` are the label values."""

    @classmethod
    def load(
        cls, directory: Path, manifest: dict, trusted_modules: Iterable[str] = ()
    ) -> SkopsTarget:
        import skops.io as sio

        path = manifest_file(directory, manifest, "file")
        try:
            beyond_defaults = list(sio.get_untrusted_types(file=path))
        except Exception as error:
            raise InputError(f"model {str(path)!r}: not a skops file ({error})") from None
        prefixes = tuple(trusted_modules)
        untrusted = [
            t for t in beyond_defaults if not is_trusted(str(t).rsplit(".", 1)[0], prefixes)
        ]
        if untrusted:
            modules = sorted({str(t).rsplit(".", 1)[0] for t in untrusted})
            raise InputError(
                f"model {str(path)!r}: untrusted types {untrusted}; if you trust that code, "
                f"allow it with 'target.trusted_modules=[{','.join(modules)}]'"
            )
        trusted = beyond_defaults
        if "schema" not in manifest:
            raise InputError(f"target {str(directory)!r}: skops manifest needs a 'schema'")
        estimator = sio.load(path, trusted=trusted or None)
        classes = manifest.get("classes")
        if classes is not None:
            model_classes = list(getattr(estimator, "classes_", []))
            if not isinstance(classes, list) or len(classes) != len(model_classes):
                raise InputError(
                    f"target.json 'classes': give the data's label values in the model's class "
                    f"order, one per class of the model ({len(model_classes)}: "
                    f"{_shown(model_classes)})"
                )
            classes = [str(c) for c in classes]
        return cls(
            estimator,
            TabularSchema.from_dict(manifest["schema"]),
            {"file": file_sha256(path)},
            classes,
        )

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        model_classes = [str(c) for c in self.estimator.classes_]  # type: ignore[attr-defined]
        classes = self.classes or model_classes
        index = {c: i for i, c in enumerate(classes)}
        labels = rows[self.schema.label].astype(str).map(index)
        if labels.isna().any():
            unknown = sorted(set(rows[self.schema.label].astype(str)) - set(index))
            raise InputError(
                f"label {self.schema.label!r}: the data's values {_shown(unknown)} are not the "
                f'model\'s classes {_shown(model_classes)}; map them with "classes" in '
                "target.json (the data's label values in the model's class order, e.g. "
                f"{_shown(sorted(set(rows[self.schema.label].astype(str)))[: len(model_classes)])})"
            )
        probabilities = self.estimator.predict_proba(rows[list(self.schema.features)])  # type: ignore[attr-defined]
        return loss_from_probabilities(np.asarray(probabilities), labels.to_numpy(np.int64))

    def identity(self) -> dict[str, object]:
        return {"format": "skops", "sha256": self.files}
