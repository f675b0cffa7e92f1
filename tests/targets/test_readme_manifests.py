"""The README's worked ``target.json`` examples name the fields the loaders read: opened in a
folder holding only the manifest, each stops at a missing file (or, for HTTP, loads), never at
a missing field or an unknown format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from panoramia.errors import InputError
from panoramia.targets import load_target

README = Path(__file__).resolve().parents[2] / "docs" / "TARGETS.md"  # the formats' worked examples


def readme_manifests() -> list[dict]:
    blocks = re.findall(r"```json\n(.*?)```", README.read_text(), flags=re.S)
    manifests = [json.loads(re.sub(r"^\s+", "", block, flags=re.M)) for block in blocks]
    return [manifest for manifest in manifests if "format" in manifest]


def test_every_format_has_a_worked_example() -> None:
    formats = {(m["format"], m.get("modality", "tabular")) for m in readme_manifests()}
    assert formats >= {
        ("skops", "tabular"), ("xgboost-json", "tabular"), ("torch-safetensors", "tabular"),
        ("lightgbm-text", "tabular"), ("catboost-cbm", "tabular"),
        ("torchscript", "tabular"), ("http", "tabular"), ("torchscript", "image"),
        ("hf-image-classification", "tabular"), ("hf-causal-lm", "tabular"), ("peft", "text"),
        ("onnx", "tabular"), ("onnx", "image"), ("onnx", "text"),
    }  # fmt: skip


@pytest.mark.parametrize("manifest", readme_manifests(), ids=lambda m: m["format"])
def test_a_readme_manifest_reaches_its_files(manifest: dict, tmp_path: Path) -> None:
    (tmp_path / "target.json").write_text(json.dumps(manifest))
    try:
        target = load_target(tmp_path)
    except InputError as error:
        message = str(error)
        assert "lacks" not in message, message
        assert "unknown format" not in message, message
        assert re.search(r"missing|no Hugging Face|not a", message), message
    else:
        assert manifest["format"] == "http"  # nothing to open before the first request
        assert target.identity() == {"format": "http", "url": manifest["url"]}
