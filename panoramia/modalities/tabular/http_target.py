"""A black-box target hosted by its owner: an HTTP endpoint that returns class probabilities.

Request: ``POST url`` with JSON ``{"rows": [{feature: value, ...}, ...]}``.
Answer: ``{"probabilities": [[p_class0, p_class1, ...], ...]}`` in the order of ``classes``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

import numpy as np
import pandas as pd

from panoramia.errors import InputError
from panoramia.modalities.tabular.table import TabularSchema
from panoramia.targets.interface import loss_from_probabilities

BATCH = 1024


@dataclass
class HttpTarget:
    url: str
    classes: list[str]
    schema: TabularSchema
    timeout: float = 30.0

    @classmethod
    def from_manifest(cls, manifest: dict) -> HttpTarget:
        for field in ("url", "classes", "schema"):
            if field not in manifest:
                raise InputError(f"http target manifest lacks {field!r}")
        return cls(
            url=str(manifest["url"]),
            classes=[str(c) for c in manifest["classes"]],
            schema=TabularSchema.from_dict(manifest["schema"]),
            timeout=float(manifest.get("timeout", 30.0)),
        )

    def _probabilities(self, rows: pd.DataFrame) -> np.ndarray:
        body = json.dumps({"rows": rows.to_dict(orient="records")}).encode()
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                document = json.loads(answer.read())
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            raise InputError(f"target endpoint {self.url!r} unreachable: {error}") from None
        except ValueError:
            raise InputError(f"target endpoint {self.url!r}: answer is not JSON") from None
        probabilities = np.asarray(document.get("probabilities"), dtype=np.float64)
        if probabilities.shape != (len(rows), len(self.classes)):
            raise InputError(
                f"target endpoint {self.url!r}: expected probabilities of shape "
                f"{(len(rows), len(self.classes))}, got {probabilities.shape}"
            )
        return probabilities

    def per_example_loss(self, rows: pd.DataFrame) -> np.ndarray:
        features = rows[list(self.schema.features)]
        probabilities = np.concatenate(
            [self._probabilities(features.iloc[i : i + BATCH]) for i in range(0, len(rows), BATCH)]
        )
        index = {c: i for i, c in enumerate(self.classes)}
        labels = rows[self.schema.label].map(index)
        if labels.isna().any():
            raise InputError(f"label {self.schema.label!r}: values unknown to the endpoint")
        return loss_from_probabilities(probabilities, labels.to_numpy(np.int64))

    def identity(self) -> dict[str, object]:
        return {"format": "http", "url": self.url}
