"""The text audit's schema (``panoramia-audit --config-name text``, ``conf/text.yaml``).

Hydra rejects unknown keys and wrongly typed values against these dataclasses before any stage
runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from panoramia.modalities.text.causal_lm import CausalLMConfig, GPT2Size
from panoramia.modalities.text.distinguisher import TextDistinguisherConfig
from panoramia.modalities.text.generator import TextGeneratorConfig
from panoramia.modalities.text.helper import TextHelperConfig
from panoramia.modalities.text.lora import LoraSettings
from panoramia.modalities.text.settings import PublicBaseSource
from panoramia.pipeline.config import DataConfigBase, JobConfigBase, TargetConfigBase


@dataclass
class TextDataConfig(DataConfigBase):
    """``python_docs`` (embedded: CPython's documentation topics and stdlib docstrings),
    ``pydoc`` (the topics only), ``austen`` (Jane Austen's novels, a document a chapter) or
    ``files`` (``members_path``/``nonmembers_path``: ``.txt``, ``.jsonl`` or a directory of
    them). Embedded data is shuffled into pools by document: no document is in two pools."""

    source: str = "python_docs"
    text_field: str = "text"
    """JSONL: the field that holds a document's text."""
    chunk_length: int = 64
    """Tokens per chunk (the membership unit)."""
    max_chunks_per_document: int | None = 50
    vocab_size: int = 2048
    """Demo targets: the byte-level BPE trained on the corpus (a target directory brings its
    own tokenizer)."""
    pool_chunks: int = 1600
    """Embedded data: chunks in each of the two pools (whole documents, at least this many)."""


@dataclass
class TextTargetConfig(TargetConfigBase, CausalLMConfig, GPT2Size, LoraSettings):
    """The audited causal LM: a demo GPT-2 or Llama-family model trained here (``kind: train``;
    its size, then how Lightning trains it: the whole network from fresh weights, or with
    ``adapter: lora`` a LoRA adapter over the public base LM) or a directory (``kind: path``: a
    local causal-LM directory in Hugging Face format with its tokenizer, or a ``peft``
    adapter over one)."""

    name: str = "gpt2"


@dataclass
class PublicBaseConfig:
    """A public base LM (the paper's pre-trained GPT-2): pre-trained once on public text, it
    initialises the generator and h when they name no ``base_model`` of their own."""

    source: str = PublicBaseSource.PACKAGE_DOCS.value
    """``package_docs``: docstrings of the installed ``packages`` (never the audited text);
    ``none``: no base (the generator and h start from fresh weights)."""
    packages: list[str] = field(default_factory=lambda: ["numpy", "scipy", "sklearn", "pandas"])
    chunks: int = 8000
    """Chunks pre-trained on (drawn at random; trained as pairs, to learn 2L positions)."""
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-3


@dataclass
class TextJobConfig(JobConfigBase):
    modality: str = "text"
    data: TextDataConfig = field(default_factory=TextDataConfig)
    target: TextTargetConfig = field(default_factory=TextTargetConfig)
    base: PublicBaseConfig = field(default_factory=PublicBaseConfig)
    generator: TextGeneratorConfig = field(default_factory=TextGeneratorConfig)
    helper: TextHelperConfig = field(default_factory=TextHelperConfig)
    distinguisher: TextDistinguisherConfig = field(default_factory=TextDistinguisherConfig)
