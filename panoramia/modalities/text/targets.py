"""Causal language-model targets: any local Hugging Face causal-LM directory, or a LoRA
adapter (Hugging Face ``peft``) over one.

Manifest (``target.json``): ``{"format": "hf-causal-lm", "modality": "text", "directory":
"."}`` (``directory`` relative to the target directory). A directory with a ``config.json``
and no manifest is opened the same way. Model and tokenizer are loaded with
``local_files_only=True`` (no code path touches the network) and never with remote code.

A LoRA adapter as people ship one: ``{"format": "peft", "modality": "text", "base": "base",
"adapter": "adapter", "merge": true}``: ``base`` a causal-LM folder, ``adapter`` the folder
``PeftModel.save_pretrained`` wrote (``adapter_config.json``, ``adapter_model.safetensors``),
both inside the target directory. The adapter config's ``base_model_name_or_path`` is
ignored (the manifest's ``base`` is what is opened); only LoRA (:data:`PEFT_TYPES`), only
safetensors weights and only module names as plain lists (:func:`check_adapter_names`: no
pattern peft would match as a regular expression) are accepted. ``merge`` (default true)
folds the adapter into the base's weights; false keeps the wrapped model. Either way the
losses are a causal LM's, as below.

The loss of a chunk of L token ids is the mean of its L−1 next-token cross-entropies (nats);
:meth:`CausalLMTarget.per_token_loss` gives the whole sequence (the text distinguisher's side
features).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from panoramia.errors import InputError
from panoramia.hashing import file_sha256
from panoramia.modalities.text.documents import TextSet
from panoramia.targets.manifest import MANIFEST, inside_model_directory, read_manifest

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from panoramia.modalities.text.onnx_target import OnnxCausalLMTarget

PEFT_TYPES = ("LORA",)
"""The adapters a ``peft`` manifest may hold (the adapter config's ``peft_type``)."""
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
PEFT_NAME_LISTS = (
    "target_modules", "exclude_modules", "modules_to_save", "layers_pattern", "target_parameters",
)  # fmt: skip
"""LoRA config keys that hold module (or parameter) names, each of which peft 0.21 matches as a
regular expression: a string value is one (``re.fullmatch`` over every module's name for
``target_modules`` and ``exclude_modules``), a list's items are spliced into patterns
(``modules_to_save``, ``layers_pattern``, ``target_modules`` when weights are tied)."""
PEFT_NAME_KEYS = ("rank_pattern", "alpha_pattern", "trainable_token_indices")
"""LoRA config keys holding an object keyed by module names: peft matches each key of
``rank_pattern`` and ``alpha_pattern`` as a regular expression (``get_pattern_key``)."""
ALL_LINEAR = "all-linear"
"""The one string ``target_modules`` may be: peft's shorthand (compared case-insensitively,
never matched as a pattern) for every linear layer but the output head."""
MAX_PEFT_NAMES = 4096
"""The most names one key of an adapter config may list."""
MAX_PEFT_NAME_CHARS = 200
PEFT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
"""What a module name of an adapter config may hold: as a pattern, such a name has no
quantifier, group or alternation, so matching it takes time linear in the module's name."""


@dataclass
class CausalLMTarget:
    model: PreTrainedModel
    """A transformers causal LM, in eval mode."""
    folder: Path
    files: dict[str, str]

    def per_token_loss(self, chunks: TextSet) -> np.ndarray:
        """Next-token cross-entropy (nats) of tokens 2…L of each chunk: float64 (N, L−1)."""
        from panoramia.modalities.text.causal_lm_losses import token_losses

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


@dataclass
class PeftTarget(CausalLMTarget):
    """A LoRA adapter over a causal LM: ``model`` is the merged LM, or the base wrapped by
    ``peft`` (``merge: false``); ``files`` hashes ``base/…`` and ``adapter/…``."""

    merged: bool = True

    def identity(self) -> dict[str, object]:
        return {"format": "peft", "merge": self.merged, "sha256": self.files}


def load_causal_lm_target(directory: Path, manifest: dict, device: object = None) -> CausalLMTarget:
    """Open the causal LM that the manifest's ``directory`` (default ``.``) holds, on
    ``device`` (a ``torch.device``; default the CPU): its losses are computed there."""
    folder = inside_model_directory(Path(directory), manifest.get("directory", "."), "directory")
    if not (folder / "config.json").is_file():
        raise InputError(f"target {str(directory)!r}: no Hugging Face config.json in {folder}")
    model = _open_causal_lm(folder)
    files = _hashes(folder)
    files.pop("target.json", None)
    return CausalLMTarget(model.eval().to(device or "cpu"), folder, files)


def peft_folders(directory: Path, manifest: dict) -> tuple[Path, Path]:
    """The ``base`` and ``adapter`` folders of a ``peft`` manifest, checked without loading
    anything: both inside ``directory``, the base with a ``config.json``, the adapter a LoRA
    config (:data:`PEFT_TYPES`) naming its modules plainly (:func:`check_adapter_names`) with
    safetensors weights; else InputError of one line."""
    directory = Path(directory)
    for field in ("base", "adapter"):
        if field not in manifest:
            raise InputError(f"target {str(directory)!r}: manifest lacks {field!r}")
    if not isinstance(manifest.get("merge", True), bool):
        raise InputError(f"target {str(directory)!r}: manifest field 'merge' must be true or false")
    base = inside_model_directory(directory, manifest["base"], "base")
    adapter = inside_model_directory(directory, manifest["adapter"], "adapter")
    if not (base / "config.json").is_file():
        raise InputError(f"target {str(directory)!r}: no Hugging Face config.json in base {base}")
    config = inside_model_directory(adapter, ADAPTER_CONFIG, "adapter")
    if not config.is_file():
        raise InputError(f"target {str(directory)!r}: adapter file {str(config)!r} missing")
    try:
        settings = json.loads(config.read_text())
        kind = settings.get("peft_type")
    except (ValueError, AttributeError, OSError, RecursionError):
        raise InputError(f"target {str(directory)!r}: {str(config)!r} is not JSON") from None
    if kind not in PEFT_TYPES:
        raise InputError(
            f"target {str(directory)!r}: adapter peft_type {kind!r} is not one this audit opens "
            f"({', '.join(PEFT_TYPES)})"
        )
    check_adapter_names(settings, f"target {str(directory)!r}")
    weights = inside_model_directory(adapter, ADAPTER_WEIGHTS, "adapter")
    if not weights.is_file():
        pickled = (adapter / "adapter_model.bin").exists()
        raise InputError(
            f"target {str(directory)!r}: adapter file {str(weights)!r} missing"
            + (" (adapter_model.bin is a pickle, never loaded: save the adapter with "
               "safe_serialization=True)" if pickled else "")
        )  # fmt: skip
    return base, adapter


def check_adapter_names(config: Mapping[str, object], where: str) -> None:
    """Refuse, with one line starting ``where`` and naming the key, an adapter config that
    would have peft evaluate a regular expression of the contributor's: each key of
    :data:`PEFT_NAME_LISTS` must be null or a list of at most :data:`MAX_PEFT_NAMES` plain
    names (:data:`PEFT_NAME_CHARS`, at most :data:`MAX_PEFT_NAME_CHARS` each), except
    ``target_modules`` may be :data:`ALL_LINEAR`; each of :data:`PEFT_NAME_KEYS` null or an
    object keyed by such names (``trainable_token_indices`` may be a list of token ids).
    Nothing is matched here: the check is linear in the config's size."""
    for key in (*PEFT_NAME_LISTS, *PEFT_NAME_KEYS):
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            if key == "target_modules" and value.lower() == ALL_LINEAR:
                continue
            raise InputError(
                f"{where}: adapter config {key!r} is a string, which peft would match as a "
                "regular expression; give a list of module names"
                + (f' (or "{ALL_LINEAR}")' if key == "target_modules" else "")
            )
        if key in PEFT_NAME_KEYS and isinstance(value, Mapping):
            names: list[object] = list(value)
        elif key == "trainable_token_indices" and isinstance(value, list):
            names = []  # token ids of the input embedding: no name at all
        elif key in PEFT_NAME_LISTS and isinstance(value, list | tuple | set | frozenset):
            names = list(value)
        else:
            shape = "an object keyed by module names" if key in PEFT_NAME_KEYS else "a list"
            raise InputError(f"{where}: adapter config {key!r} must be {shape} or null")
        _check_plain_names(names, key, where)


def _check_plain_names(names: list[object], key: str, where: str) -> None:
    """InputError naming ``key`` unless every one of ``names`` is a plain module name."""
    if len(names) > MAX_PEFT_NAMES:
        raise InputError(f"{where}: adapter config {key!r} lists more than {MAX_PEFT_NAMES} names")
    for name in names:
        if (
            not isinstance(name, str)
            or not 0 < len(name) <= MAX_PEFT_NAME_CHARS
            or not PEFT_NAME_CHARS.issuperset(name)
        ):
            raise InputError(
                f"{where}: adapter config {key!r} holds {str(name)[:40]!r}, not a module name "
                f"(letters, digits, '_' and '.', at most {MAX_PEFT_NAME_CHARS} characters): "
                "peft would match it as a regular expression"
            )


def text_model_folders(directory: Path) -> tuple[Path, Path]:
    """Where a text target's architecture (``config.json``) and its tokenizer lie: an
    ``hf-causal-lm`` manifest's ``directory``; a ``peft`` manifest's base, and its adapter for
    the tokenizer where the adapter ships one (an adapter trained with added tokens does); a
    directory without a manifest: itself. Both inside ``directory`` (InputError else)."""
    directory = Path(directory)
    if not (directory / MANIFEST).is_file():
        return directory, directory
    manifest = read_manifest(directory)
    if manifest.get("format") == "peft":
        base, adapter = peft_folders(directory, manifest)
        ships = any((adapter / name).is_file() for name in TOKENIZER_MARKERS)
        return base, adapter if ships else base
    folder = inside_model_directory(directory, manifest.get("directory", "."), "directory")
    return folder, folder


TOKENIZER_MARKERS = ("tokenizer.json", "tokenizer_config.json")
"""Files whose presence says a folder holds a Hugging Face tokenizer."""


def load_peft_target(directory: Path, manifest: dict, device: object = None) -> PeftTarget:
    """Open a ``peft`` manifest's LoRA adapter over its base (see the module docstring), on
    ``device`` (a ``torch.device``; default the CPU)."""
    from peft import LoraConfig, PeftModel
    from safetensors import SafetensorError

    base, adapter = peft_folders(Path(directory), manifest)
    merge = bool(manifest.get("merge", True))
    model = _open_causal_lm(base)
    try:
        config = LoraConfig.from_pretrained(str(adapter))  # never what it names as its base
        check_adapter_names(vars(config), f"target {str(adapter)!r}")  # the config peft uses
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            wrapped = PeftModel.from_pretrained(
                model, str(adapter), config=config, is_trainable=False,
                local_files_only=True, torch_device="cpu",
            )  # fmt: skip
    except InputError:
        raise
    except (OSError, ValueError, RuntimeError, TypeError, KeyError, SafetensorError) as error:
        raise InputError(
            f"target {str(adapter)!r}: not a LoRA adapter of this base ({_first_line(error)})"
        ) from None
    if any("missing adapter keys" in str(warning.message) for warning in caught):
        raise InputError(
            f"target {str(adapter)!r}: adapter_model.safetensors lacks weights its config "
            "declares (an adapter of another base model?)"
        )
    # a PeftModel forwards a causal LM's calls (input_ids → logits) to the model it wraps
    lm = cast("PreTrainedModel", wrapped.merge_and_unload() if merge else wrapped)
    files = {f"base/{name}": digest for name, digest in _hashes(base).items()}
    files |= {f"adapter/{name}": digest for name, digest in _hashes(adapter).items()}
    files.pop("base/target.json", None)
    return PeftTarget(lm.eval().to(device or "cpu"), Path(directory), files, merged=merge)


def _open_causal_lm(folder: Path) -> PreTrainedModel:
    """The causal LM in ``folder`` (float32, on the CPU), from local safetensors only."""
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM

    from panoramia.modalities.text.causal_lm_losses import quiet_transformers

    quiet_transformers()
    try:
        model = AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, use_safetensors=True, trust_remote_code=False
        )
    except (OSError, ValueError, RuntimeError, SafetensorError) as error:
        raise InputError(
            f"target {str(folder)!r}: not a loadable causal LM ({_first_line(error)})"
        ) from None
    return model.float()


def _hashes(folder: Path) -> dict[str, str]:
    return {f.name: file_sha256(f) for f in sorted(folder.iterdir()) if f.is_file()}


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def load_text_target(
    directory: Path, manifest: dict, trusted_modules: object = (), device: object = None
) -> CausalLMTarget | PeftTarget | OnnxCausalLMTarget:
    """The text target of ``manifest``: a LoRA adapter over its base (``peft``), an ONNX
    causal LM (``onnx``: :mod:`panoramia.modalities.text.onnx_target`), else a causal LM
    (``hf-causal-lm``). A causal LM names no classes, so ``trusted_modules`` does
    not apply."""
    if manifest["format"] == "peft":
        return load_peft_target(directory, manifest, device)
    if manifest["format"] == "onnx":
        from panoramia.modalities.text.onnx_target import OnnxCausalLMTarget

        return OnnxCausalLMTarget.load(directory, manifest, device)
    return load_causal_lm_target(directory, manifest, device)
