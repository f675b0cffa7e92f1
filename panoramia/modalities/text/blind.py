"""A blind text classifier: member vs generated from the chunk's tokens alone, no model's losses.

Blind baselines (Das, Zhang and Tramèr 2024) show that a bag of words often tells a data set's
members from its non-members when the two were not drawn alike. Here the non-members are
generated, so a blind classifier measures how far the generator's chunks can be told apart
without any model: docs/SPEC.md §2.9.

:class:`BlindTextClassifier` is a logistic regression on TF-IDF-weighted token unigrams and
bigrams (token ids as words; scikit-learn). ``fit(tokens, labels)`` keeps out-of-fold logits of
the training chunks (each from a model that never saw that chunk), so a distinguisher that
stacks the blind logit as a feature does not learn from a column that saw its own labels;
``logits(tokens)`` scores other chunks with the mean of the fold models (the same scale).
Labels: 1 = member (the positive class), 0 = generated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

FOLDS = 5
"""Folds of the training chunks' out-of-fold logits."""
REGULARISATION = 1.0
"""The logistic regression's inverse L2 strength (scikit-learn's ``C``)."""


def token_documents(chunks: Any) -> list[str]:
    """Chunks (a :class:`~panoramia.modalities.text.documents.TextSet`, or (N, L) int token ids) → N
    space-separated strings of ids (the vectoriser's words)."""
    return [" ".join(map(str, row)) for row in np.asarray(getattr(chunks, "tokens", chunks))]


@dataclass
class BlindTextClassifier:
    """Bag of token n-grams → logistic regression; ``seed`` fixes the folds."""

    seed: int
    description: str = "tf-idf token 1-2-grams, logistic regression (no model's losses)"
    models: list[Any] = field(default_factory=list, repr=False)
    training_logits: np.ndarray | None = field(default=None, repr=False)

    def key(self) -> dict[str, object]:
        """What the classifier is, for a stage key: its words, model and regularisation."""
        return {"description": self.description, "ngrams": [1, 2], "C": REGULARISATION,
                "folds": FOLDS}  # fmt: skip

    def _new(self) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        return make_pipeline(
            TfidfVectorizer(token_pattern=r"\S+", ngram_range=(1, 2), sublinear_tf=True),
            LogisticRegression(C=REGULARISATION, max_iter=2000),
        )

    def fit(
        self, tokens: Any, labels: np.ndarray, *, out_of_fold: bool = True
    ) -> BlindTextClassifier:
        """Fit on chunks (a TextSet or (N, L) token ids) with labels (N,) 1 = member.

        ``out_of_fold`` (for a stacked column): one model per fold of :data:`FOLDS`; each
        training chunk's logit comes from the model that did not see it
        (:attr:`training_logits`), and other chunks get the mean of the fold models' logits,
        on the same scale. ``out_of_fold=False``: one model on every training chunk (for a
        classifier that only scores other chunks)."""
        from sklearn.model_selection import StratifiedKFold

        documents, labels = token_documents(tokens), np.asarray(labels, int)
        folds = min(FOLDS, int(np.bincount(labels, minlength=2).min()))
        self.training_logits, self.models = None, []
        if not out_of_fold or folds < 2:
            self.models = [self._new().fit(documents, labels)]
            if out_of_fold:  # too few of one class to hold any out: a constant column
                self.training_logits = np.zeros(len(documents))
            return self
        self.training_logits = np.zeros(len(documents))
        split = StratifiedKFold(folds, shuffle=True, random_state=self.seed)
        for seen, held_out in split.split(np.zeros(len(labels)), labels):
            model = self._new().fit([documents[i] for i in seen], labels[seen])
            held = [documents[i] for i in held_out]
            self.training_logits[held_out] = model.decision_function(held)
            self.models.append(model)
        return self

    def logits(self, tokens: Any) -> np.ndarray:
        """Log-odds of "member" for chunks, float64 (N,): the mean over the fitted models."""
        assert self.models, "fit first"
        documents = token_documents(tokens)
        return np.mean([model.decision_function(documents) for model in self.models], axis=0)

    def probabilities(self, tokens: Any) -> np.ndarray:
        """P(member) of (N, L) chunks, float64 (N,) in [0, 1]."""
        return 1.0 / (1.0 + np.exp(-self.logits(tokens)))
