"""Text targets as people ship them: Llama, Qwen2 and GPT-NeoX causal-LM folders, and a LoRA
adapter (``peft``) over a local base; its refusals, each one line."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from panoramia.errors import InputError
from panoramia.modalities.text.causal_lm_losses import token_losses
from panoramia.modalities.text.documents import TextSet
from panoramia.targets import load_target
from panoramia.targets.manifest import MANIFEST
from tests.lora_support import with_lora

VOCAB = 400  # the demo tokenizer's size
LENGTH = 12
LORA_MODULES = ["q_proj", "v_proj"]


def llama_config() -> object:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip


def qwen2_config() -> object:
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip


def gpt_neox_config() -> object:
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, max_position_embeddings=64,
    )  # fmt: skip


FAMILIES: dict[str, Callable[[], object]] = {
    "llama": llama_config, "qwen2": qwen2_config, "gpt-neox": gpt_neox_config,
}  # fmt: skip


def chunks(n: int = 6, seed: int = 0) -> TextSet:
    tokens = np.random.default_rng(seed).integers(0, VOCAB, size=(n, LENGTH), dtype=np.int64)
    return TextSet(tokens, np.arange(n), np.zeros(n, dtype=np.int64))


def save_lm(config: object, directory: Path) -> torch.nn.Module:
    """A causal LM of fresh weights (seed 0) from ``config``, saved as safetensors."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.save_pretrained(directory)  # transformers 5 writes safetensors only
    assert (directory / "model.safetensors").is_file()
    return model


@pytest.mark.parametrize("family", FAMILIES)
def test_a_causal_lm_family_opens_through_the_loader(family: str, tmp_path: Path) -> None:
    save_lm(FAMILIES[family](), tmp_path)  # a bare Hugging Face folder, no target.json
    target = load_target(tmp_path)
    assert target.identity()["format"] == "hf-causal-lm"
    losses = target.per_example_loss(chunks())
    assert losses.shape == (6,)
    assert losses.dtype == np.float64
    assert np.isfinite(losses).all()
    assert abs(losses.mean() - math.log(VOCAB)) < 1.0  # fresh weights: near uniform
    assert target.per_token_loss(chunks()).shape == (6, LENGTH - 1)


@pytest.fixture(scope="module")
def lora_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """``base/`` (a tiny Llama), ``adapter/`` (LoRA of r=2 with non-zero weights, safetensors)
    and ``adapter_bin/`` (the same adapter pickled); and the wrapped model's own losses."""
    directory = tmp_path_factory.mktemp("lora")
    base = save_lm(llama_config(), directory / "base")
    model = with_lora(base, LORA_MODULES, scale=0.5, seed=1)
    model.eval()
    expected = token_losses(model, chunks().tokens)
    for folder, safe in (("adapter", True), ("adapter_bin", False)):
        model.save_pretrained(
            str(directory / folder), safe_serialization=safe, save_embedding_layers=False
        )
        config = directory / folder / "adapter_config.json"
        # what the adapter names as its base is never opened (offline, it could not be)
        settings = json.loads(config.read_text()) | {"base_model_name_or_path": "org/elsewhere"}
        config.write_text(json.dumps(settings))
    assert (directory / "adapter_bin" / "adapter_model.bin").is_file()
    return directory, expected


def peft_target(source: Path, into: Path, **fields: object) -> Path:
    """A copy of ``source`` with a ``peft`` manifest of ``fields`` over the defaults."""
    target = into / "target"
    shutil.copytree(source, target)
    manifest = {"format": "peft", "modality": "text", "base": "base", "adapter": "adapter"}
    (target / MANIFEST).write_text(json.dumps(manifest | fields))
    return target


def test_a_lora_adapter_gives_the_same_losses_merged_or_not(
    lora_dir: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    source, expected = lora_dir
    merged = load_target(peft_target(source, tmp_path / "m"))
    wrapped = load_target(peft_target(source, tmp_path / "w", merge=False))
    data = chunks()
    merged_loss, wrapped_loss = merged.per_example_loss(data), wrapped.per_example_loss(data)
    assert merged_loss.shape == (6,)
    assert np.isfinite(merged_loss).all()
    assert np.allclose(merged_loss, wrapped_loss, atol=1e-5)
    assert np.allclose(wrapped.per_token_loss(data), expected, atol=1e-5)
    bare = load_target(source / "base").per_example_loss(data)
    assert np.abs(merged_loss - bare).max() > 1e-3  # the adapter changes the model
    identity = merged.identity()
    assert (identity["format"], identity["merge"]) == ("peft", True)
    assert wrapped.identity()["merge"] is False
    files = identity["sha256"]
    assert isinstance(files, dict)
    assert {"base/config.json", "base/model.safetensors", "adapter/adapter_config.json",
            "adapter/adapter_model.safetensors"} <= set(files)  # fmt: skip
    assert "target.json" not in files
    assert all(len(digest) == 64 for digest in files.values())


def _rewrite_adapter_config(target: Path, **fields: object) -> None:
    config = target / "adapter" / "adapter_config.json"
    config.write_text(json.dumps(json.loads(config.read_text()) | fields))


REFUSALS = [
    pytest.param({"adapter": "adapter_bin"}, None, "adapter_model.bin is a pickle", id="bin-only"),
    pytest.param({}, {"peft_type": "IA3"}, "peft_type 'IA3' is not one this audit opens", id="ia3"),
    pytest.param({}, {"peft_type": "PROMPT_TUNING"}, "'PROMPT_TUNING'", id="prompt-tuning"),
    pytest.param({"base": "../x"}, None, "'base' must name a file inside", id="base-escapes"),
    pytest.param({"adapter": "/etc"}, None, "'adapter' must name a file inside", id="adapter-out"),
    pytest.param({"base": "adapter"}, None, "no Hugging Face config.json", id="no-base"),
    pytest.param({"merge": "yes"}, None, "'merge' must be true or false", id="merge-not-bool"),
    pytest.param(
        {},
        {"target_modules": [*LORA_MODULES, "k_proj"]},
        "lacks weights its config declares",
        id="missing-weights",
    ),
    # no regular expression of hers is evaluated (issue 68, finding 4): peft would match each
    pytest.param(
        {},
        {"target_modules": "(q|v)_proj"},
        "'target_modules' is a string, which peft would match as a regular expression",
        id="target-modules-pattern",
    ),
    pytest.param(
        {},
        {"exclude_modules": "k_proj"},
        "'exclude_modules' is a string",
        id="exclude-modules-pattern",
    ),
    pytest.param(
        {}, {"layers_pattern": "layers"}, "'layers_pattern' is a string", id="layers-pattern-string"
    ),
    pytest.param(
        {},
        {"modules_to_save": ["lm_(head)*"]},
        "'modules_to_save' holds 'lm_(head)*'",
        id="modules-to-save-pattern",
    ),
    pytest.param(
        {},
        {"rank_pattern": {"(q|v)_proj": 4}},
        "'rank_pattern' holds '(q|v)_proj'",
        id="rank-pattern-key",
    ),
    pytest.param(
        {},
        {"alpha_pattern": {".*": 8}},
        "'alpha_pattern' holds '.*', not a module",
        id="alpha-pattern-key",
    ),
    pytest.param(
        {}, {"target_modules": ["q_proj"] * 5000}, "lists more than 4096 names", id="too-many-names"
    ),
    pytest.param(
        {},
        {"target_modules": {"q_proj": 1}},
        "'target_modules' must be a list",
        id="target-modules-object",
    ),
]


@pytest.mark.parametrize(("fields", "change", "message"), REFUSALS)
def test_a_peft_target_is_refused_with_one_line(
    lora_dir: tuple[Path, np.ndarray],
    tmp_path: Path,
    fields: dict,
    change: dict | None,
    message: str,
) -> None:
    target = peft_target(lora_dir[0], tmp_path, **fields)
    if change:
        _rewrite_adapter_config(target, **change)
    with pytest.raises(InputError) as refused:
        load_target(target)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_upload_takes_a_peft_folder_by_the_same_checks(
    lora_dir: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    from panoramia.service.uploads.checks import UploadRejected, check_model_folder

    kept = peft_target(lora_dir[0], tmp_path / "kept")
    assert check_model_folder(kept, shown="lora.tgz", trust_torchscript=False) == "peft"
    for name, fields in (("bin", {"adapter": "adapter_bin"}), ("out", {"base": "../x"})):
        refused = peft_target(lora_dir[0], tmp_path / name, **fields)
        with pytest.raises(UploadRejected) as error:
            check_model_folder(refused, shown="lora.tgz", trust_torchscript=False)
        assert str(error.value).startswith("lora.tgz: ")
        assert "\n" not in str(error.value)
        assert str(tmp_path) not in str(error.value)  # no server path shown
    _rewrite_adapter_config(kept, peft_type="IA3")
    with pytest.raises(UploadRejected, match="peft_type 'IA3'"):
        check_model_folder(kept, shown="lora.tgz", trust_torchscript=False)


CATASTROPHIC = "(a+)+$"
"""Matched against a 12-character module name, it took 29 s (38 times more each 2 more)."""


def test_a_pattern_in_an_adapter_config_is_refused_at_upload_at_once(
    lora_dir: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    """The upload check refuses a LoRA config that would have peft match a catastrophic
    pattern over every module's name, without matching anything (issue 68, finding 4);
    peft's ``all-linear`` and plain lists of names pass."""
    import time

    from panoramia.service.uploads.checks import UploadRejected, check_model_folder

    for name, change in (("all", {"target_modules": "all-linear"}), ("caps", {"target_modules":
                         "ALL-LINEAR"}), ("list", {"modules_to_save": ["lm_head"],
                         "rank_pattern": {"model.layers.0.self_attn.q_proj": 4}})):  # fmt: skip
        kept = peft_target(lora_dir[0], tmp_path / name)
        _rewrite_adapter_config(kept, **change)
        assert check_model_folder(kept, shown="lora.tgz", trust_torchscript=False) == "peft"
    for key, value in (("target_modules", CATASTROPHIC), ("exclude_modules", CATASTROPHIC),
                       ("layers_pattern", [CATASTROPHIC]), ("rank_pattern", {CATASTROPHIC: 2}),
                       ("target_modules", ["a" * 12 + "(a+)+$"])):  # fmt: skip
        refused = peft_target(lora_dir[0], tmp_path / f"{key}-{len(str(value))}")
        _rewrite_adapter_config(refused, **{key: value})
        started = time.perf_counter()
        with pytest.raises(UploadRejected) as error:
            check_model_folder(refused, shown="lora.tgz", trust_torchscript=False)
        assert time.perf_counter() - started < 1.0
        assert str(error.value).startswith("lora.tgz: ")
        assert f"adapter config {key!r}" in str(error.value)
        assert "\n" not in str(error.value)


def test_the_loaded_config_is_checked_as_peft_holds_it() -> None:
    """The check runs again on the ``LoraConfig`` the loader hands peft (its lists turned
    into sets), not only on the file."""
    from peft import LoraConfig

    from panoramia.modalities.text.targets import check_adapter_names

    check_adapter_names(vars(LoraConfig(target_modules=LORA_MODULES)), "target 'x'")
    check_adapter_names(vars(LoraConfig(target_modules="all-linear")), "target 'x'")
    with pytest.raises(InputError, match=r"^target 'x': adapter config 'target_modules' is a"):
        check_adapter_names(vars(LoraConfig(target_modules=CATASTROPHIC)), "target 'x'")
    with pytest.raises(InputError, match="'rank_pattern' holds"):
        check_adapter_names(
            vars(LoraConfig(target_modules=LORA_MODULES, rank_pattern={"q_proj|v": 4})), "x"
        )
