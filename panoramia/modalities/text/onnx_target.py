"""ONNX causal language models (``"format": "onnx", "modality": "text"``), run by onnxruntime
after the graph's checks (:mod:`panoramia.targets.onnx_graph`).

The manifest gives, beside ``file``: ``"scores": "logits"`` (a causal LM's output is its
next-token logits over the vocabulary, (batch, length, vocabulary); nothing else is taken),
``directory`` (default ``.``: the folder holding the model's Hugging Face ``config.json`` and
tokenizer files, which the audit reads as for ``hf-causal-lm``: the tokenizer cuts the text,
the architecture shapes the helper and stand-in models), and optionally ``input`` and
``output`` (default ``input_ids`` and ``logits``, else the graph's only ones). Inputs beside the
token ids may be ``attention_mask`` (fed ones) and ``position_ids`` (fed 0…L−1); a graph that
wants more (a KV cache's ``past_key_values.*``: export with ``use_cache=False``) is refused
naming them.

The loss of a chunk of L token ids is the mean of its L−1 next-token cross-entropies (nats),
computed from the float32 logits as for ``hf-causal-lm`` (:mod:`panoramia.modalities.text
.causal_lm_losses`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.text.causal_lm_losses import LOSS_BATCH
from panoramia.modalities.text.documents import TextSet
from panoramia.targets.interface import shown_values
from panoramia.targets.manifest import hugging_face_folder
from panoramia.targets.onnx_graph import GraphValue, named_input, open_classifier
from panoramia.targets.onnx_runtime import NUMPY_TYPES, OnnxSession

TOKEN_INPUTS = ("input_ids",)
"""The token-id input's name where the manifest names none (Hugging Face's)."""
FILLED_INPUTS = ("attention_mask", "position_ids")
"""Inputs besides the token ids that are fed here: all ones, and the positions 0…L−1."""
INTEGERS = ("int64", "int32")


@dataclass
class OnnxCausalLMTarget:
    """An ONNX causal LM (see the module docstring)."""

    session: OnnxSession
    tokens_input: GraphValue
    output: GraphValue

    @property
    def shown(self) -> str:
        return self.session.graph.shown

    @classmethod
    def load(cls, directory: Path, manifest: dict, device: object = None) -> OnnxCausalLMTarget:
        """The target of ``manifest`` in ``directory`` (see the module docstring); one-line
        InputError for a graph or manifest that does not fit."""
        folder = hugging_face_folder(Path(directory), manifest)  # config.json, tokenizer
        graph, output, _ = open_classifier(directory, manifest, ("logits",))
        tokens_input = named_input(graph, manifest, TOKEN_INPUTS)
        others = [n for n in graph.inputs if n != tokens_input.name and n not in FILLED_INPUTS]
        if others:
            raise InputError(
                f"{graph.shown}: inputs {shown_values(others)} beside the token ids "
                f"{tokens_input.name!r}; a causal LM here takes the ids (and "
                f"{' and '.join(FILLED_INPUTS)}) only: export it without a KV cache "
                "(use_cache=False)"
            )
        for name in (tokens_input.name, *[n for n in FILLED_INPUTS if n in graph.inputs]):
            value = graph.inputs[name]
            if value.element not in INTEGERS or (value.dims is not None and len(value.dims) != 2):
                raise InputError(
                    f"{graph.shown}: input {name!r} is {value.shown()}; token ids and masks "
                    "are integers of shape (batch, length)"
                )
        if output.kind != "tensor" or (output.dims is not None and len(output.dims) != 3):
            raise InputError(
                f"{graph.shown}: output {output.name!r} is {output.shown()}; a causal LM's "
                "logits are (batch, length, vocabulary)"
            )
        graph.files["config.json"] = file_sha256(folder / "config.json")
        return cls(OnnxSession.open(graph, device), tokens_input, output)

    def _feeds(self, tokens: np.ndarray) -> dict[str, np.ndarray]:
        """The token ids, and the filled inputs the graph has (:data:`FILLED_INPUTS`)."""
        inputs = self.session.graph.inputs

        def typed(values: np.ndarray, name: str) -> np.ndarray:
            return values.astype(NUMPY_TYPES[inputs[name].element or "int64"])

        feeds = {self.tokens_input.name: typed(tokens, self.tokens_input.name)}
        if "attention_mask" in inputs:
            feeds["attention_mask"] = typed(np.ones(tokens.shape), "attention_mask")
        if "position_ids" in inputs:
            positions = np.broadcast_to(np.arange(tokens.shape[1]), tokens.shape)
            feeds["position_ids"] = typed(positions, "position_ids")
        return feeds

    def _check_tokens(self, tokens: np.ndarray) -> None:
        dims = self.tokens_input.dims
        if dims is not None and dims[1] is not None and dims[1] != tokens.shape[1]:
            raise InputError(
                f"{self.shown}: input {self.tokens_input.name!r} takes {dims[1]} tokens a "
                f"sequence; the audit's chunks hold {tokens.shape[1]} (data.chunk_length)"
            )
        vocabulary = self.output.dims[2] if self.output.dims else None
        if vocabulary is not None and tokens.size and int(tokens.max()) >= vocabulary:
            raise InputError(
                f"target: token id {int(tokens.max())} but the model's vocabulary has "
                f"{vocabulary} entries (chunks tokenised with another tokenizer?)"
            )

    def per_token_loss(self, chunks: TextSet) -> np.ndarray:
        """Next-token cross-entropy (nats) of tokens 2…L of each chunk: float64 (N, L−1)."""
        import torch

        tokens = np.asarray(chunks.tokens)
        self._check_tokens(tokens)
        parts = []
        for start in range(0, len(tokens), LOSS_BATCH):
            batch = tokens[start : start + LOSS_BATCH]
            logits = self.session.run(self._feeds(batch), self.output.name, batch=LOSS_BATCH)
            if logits.ndim != 3 or logits.shape[:2] != batch.shape:
                raise InputError(
                    f"{self.shown}: output {self.output.name!r} has shape {logits.shape} for "
                    f"{batch.shape} token ids; a causal LM's logits are (batch, length, "
                    "vocabulary)"
                )
            scores = torch.from_numpy(np.ascontiguousarray(logits[:, :-1])).float()
            targets = torch.from_numpy(batch[:, 1:].astype(np.int64))
            losses = torch.nn.functional.cross_entropy(
                scores.transpose(1, 2), targets, reduction="none"
            )
            parts.append(losses.double().numpy())
        if not parts:
            return np.zeros((0, max(0, tokens.shape[1] - 1)))
        return np.concatenate(parts)

    def per_example_loss(self, chunks: TextSet) -> np.ndarray:
        """Mean per-token loss of each chunk, float64 of shape (N,)."""
        return self.per_token_loss(chunks).mean(axis=1)

    def identity(self) -> dict[str, object]:
        """The report's record of the model: the format, the exporter, the files' hashes."""
        graph = self.session.graph
        return {"format": "onnx", "producer": graph.producer(), "sha256": graph.files}
