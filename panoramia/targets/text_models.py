"""Causal language-model targets: any local Hugging Face causal-LM directory.

Manifest (``target.json``): ``{"format": "hf-causal-lm", "modality": "text", "directory":
"."}`` (``directory`` relative to the target directory). A directory with a ``config.json``
and no manifest is opened the same way. Model and tokenizer are loaded with
``local_files_only=True`` (no code path touches the network) and never with remote code.

The loss of a chunk of L token ids is the mean of its L−1 next-token cross-entropies (nats);
:meth:`CausalLMTarget.per_token_loss` gives the whole sequence (the text distinguisher's side
features).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from panoramia.data.text import TextSet
from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.targets.manifest import inside_model_directory

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass
class CausalLMTarget:
    model: PreTrainedModel
    """A transformers causal LM, in eval mode."""
    folder: Path
    files: dict[str, str]

    def per_token_loss(self, chunks: TextSet) -> np.ndarray:
        """Next-token cross-entropy (nats) of tokens 2…L of each chunk: float64 (N, L−1)."""
        from panoramia.targets.causal_lm_losses import token_losses

        # transformers types get_input_embeddings() as a bare nn.Module
        vocabulary = int(self.model.get_input_embeddings().num_embeddings)  # type: ignore[arg-type]
        if len(chunks) and int(chunks.tokens.max()) >= vocabulary:
            raise InputError(
                f"target: token id {int(chunks.tokens.max())} but the model's vocabulary has "
                f"{vocabulary} entries (chunks tokenised with another tokenizer?)"
            )
        return token_losses(self.model, chunks.tokens)

    def per_example_loss(self, chunks: TextSet) -> np.ndarray:
        """Mean per-token loss of each chunk, float64 of shape (N,)."""
        return self.per_token_loss(chunks).mean(axis=1)

    def identity(self) -> dict[str, object]:
        return {"format": "hf-causal-lm", "sha256": self.files}


def load_causal_lm_target(directory: Path, manifest: dict, device: object = None) -> CausalLMTarget:
    """Open the causal LM that the manifest's ``directory`` (default ``.``) holds, on
    ``device`` (a ``torch.device``; default the CPU): its losses are computed there."""
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM

    from panoramia.targets.causal_lm_losses import quiet_transformers

    quiet_transformers()
    folder = inside_model_directory(Path(directory), manifest.get("directory", "."), "directory")
    if not (folder / "config.json").is_file():
        raise InputError(f"target {str(directory)!r}: no Hugging Face config.json in {folder}")
    try:
        model = AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, use_safetensors=True, trust_remote_code=False
        )
    except (OSError, ValueError, RuntimeError, SafetensorError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"target {str(folder)!r}: not a loadable causal LM ({first})") from None
    files = {f.name: file_sha256(f) for f in sorted(folder.iterdir()) if f.is_file()}
    files.pop("target.json", None)
    return CausalLMTarget(model.float().eval().to(device or "cpu"), folder, files)
