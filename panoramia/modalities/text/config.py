"""The text audit's schema (``panoramia-audit --config-name text``,
``panoramia/modalities/text/conf/text.yaml``).

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
from panoramia.setting_bounds import COUNT, RATE, Limit, Range, ranged, ranged_list


@dataclass
class TextDataConfig(DataConfigBase):
    """``python_docs`` (embedded: CPython's documentation topics and stdlib docstrings),
    ``pydoc`` (the topics only), ``austen`` (Jane Austen's novels, a document a chapter) or
    ``files`` (``members_path``/``nonmembers_path``: ``.txt``, ``.jsonl`` or a directory of
    them). Embedded data is shuffled into pools by document: no document is in two pools."""

    source: str = "python_docs"
    text_field: str = "text"
    """JSONL: the field that holds a document's text."""
    chunk_length: int = ranged(64, Range(2, 10**9, integer=True))
    """Tokens per chunk (the membership unit)."""
    max_chunks_per_document: int | None = ranged(50, COUNT)
    vocab_size: int = ranged(2048, Range(256, 10**7, integer=True))
    """Demo targets: the byte-level BPE trained on the corpus (a target directory brings its
    own tokenizer)."""
    pool_chunks: int = ranged(1600, COUNT)
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
    packages: list[str] = ranged_list(lambda: ["numpy", "scipy", "sklearn", "pandas"], most=64)
    chunks: int = ranged(8000, COUNT)
    """Chunks pre-trained on (drawn at random; trained as pairs, to learn 2L positions)."""
    epochs: int = ranged(3, COUNT, limit=Limit.EPOCHS)
    batch_size: int = ranged(32, COUNT)
    learning_rate: float = ranged(1e-3, RATE)


@dataclass
class TextJobConfig(JobConfigBase):
    modality: str = "text"
    data: TextDataConfig = field(default_factory=TextDataConfig)
    target: TextTargetConfig = field(default_factory=TextTargetConfig)
    base: PublicBaseConfig = field(default_factory=PublicBaseConfig)
    generator: TextGeneratorConfig = field(default_factory=TextGeneratorConfig)
    helper: TextHelperConfig = field(default_factory=TextHelperConfig)
    distinguisher: TextDistinguisherConfig = field(default_factory=TextDistinguisherConfig)
