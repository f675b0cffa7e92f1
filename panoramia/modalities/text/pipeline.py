"""The text audit's stages (TextSet ``.npz`` chunks, causal LMs trained with Lightning).

The graph and the game are :class:`~panoramia.pipeline.graph.AuditPipeline`'s. The side
information of a chunk is its loss *sequence* under f or h (L−1 per-token losses), stored in
``sequences/<set>.npy`` (written a set at a time) beside the per-chunk means. Every stage
writes a content-addressed artifact: a rerun (another target, a resumed run) reuses the
tokenizer and chunks, the generator, the synthetic chunks and h.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from panoramia.errors import InputError
from panoramia.hashing import settings_key
from panoramia.modalities.text.config import TextDataConfig, TextJobConfig
from panoramia.modalities.text.data import (
    CONTROL_POOL,
    MEMBERS,
    NONMEMBERS,
    TOKENIZER,
    build_text_data,
    text_data_identity,
)
from panoramia.modalities.text.documents import TextSet, read_chunks
from panoramia.modalities.text.generator import SAMPLING
from panoramia.modalities.text.reference_units import REFERENCE_UNITS
from panoramia.modalities.text.sets import TEXT_SETS
from panoramia.modalities.text.settings import PublicBaseSource
from panoramia.pipeline.graph import STAGE_GRAPH, AuditPipeline, StageSpec
from panoramia.pipeline.seeds import child_rng, child_seed
from panoramia.pipeline.stages import StageResult
from panoramia.pipeline.stages.splits import (
    POOL_SET,
    SYNTHETIC_SETS,
    SyntheticWork,
    build_synthetic,
    synthetic_key,
)
from panoramia.pipeline.stages.stage_key import GENERATION_SEED, StageKey, fields_of
from panoramia.pipeline.synthetic_draw import deal

if TYPE_CHECKING:
    from transformers import PretrainedConfig

    from panoramia.modalities.text.generator import TextGeneratorConfig

EXAMPLES = 6
"""Chunks of each kind shown in the report."""
PROMPTS = "prompts.npz"

DATA = StageKey(
    "data",
    also_reads=(
        *fields_of("data", TextDataConfig, but=("split",)),
        "target.kind", "target.path", "target.base_model",  # where the tokenizer comes from
    ),
)  # fmt: skip
"""The corpus, its split and tokenizer (:func:`text_data_identity`: the data settings, and
the target's where they pick the tokenizer)."""
PUBLIC_BASE = StageKey(
    "base",
    also_reads=(
        "base", "data.chunk_length", "target", "generator.dropout", "generator.base_model",
        "helper.base_model", "generator.weight_decay", "generator.precision",
    ),
)  # fmt: skip
"""The public base LM: its settings, the chunk length, the architecture (the target's, at
the generator's dropout), the installed versions of the packages it reads, whether it is
wanted (no base model of their own for the generator and h, or a LoRA target on it) and
the generator's training settings it trains with (:func:`_borrowed_training`)."""
GENERATOR = StageKey(
    "generator", seeds=(GENERATION_SEED,),
    also_reads=("generator", "data.chunk_length", "target"),  # "generator": but SAMPLING
)  # fmt: skip
SYNTHETIC = synthetic_key(1, "generator", "helper.n_chunks")
HELPER = StageKey(
    "helper", seeds=(GENERATION_SEED,), also_reads=("helper", "data.chunk_length", "target")
)


def _package_versions(packages: list[str]) -> dict[str, str]:
    """Installed versions of the public text's packages (their docstrings are the text)."""
    from importlib.metadata import PackageNotFoundError, version

    names = {"sklearn": "scikit-learn"}
    found = {}
    for package in packages:
        try:
            found[package] = version(names.get(package, package))
        except PackageNotFoundError:
            raise InputError(f"base.packages: {package!r} is not an installed package") from None
    return found


class TextPipeline(AuditPipeline):
    """The stages of a text audit."""

    rows_are_units = False  # chunks come in documents: no reference attack (SPEC §2.4)

    job: TextJobConfig
    sets = TEXT_SETS
    device_sections = True
    _base: StageResult | None = None

    def distinguisher_is_blind(self) -> bool:
        return self.job.distinguisher.blind

    def graph(self) -> tuple[StageSpec, ...]:
        """The shared graph with the public base LM (stage ``base``) before the generator;
        the generator, h and the stand-ins start from it (they read it through
        :meth:`public_base`, which builds it once)."""
        base = StageSpec(  # the text graph runs only on a TextPipeline
            "base", ("data",),
            lambda audit, built: cast(TextPipeline, audit).public_base(built["data"]),
        )  # fmt: skip
        graph: list[StageSpec] = []
        for spec in STAGE_GRAPH:
            if spec.name == "generator":
                graph.append(base)
            if spec.name in ("generator", "helper", "stand_in"):
                spec = replace(spec, inputs=(*spec.inputs, "base"))
            graph.append(spec)
            if spec.name == "losses_target":
                graph.append(REFERENCE_UNITS)  # O(1) per document (SPEC §2.4)
        return tuple(graph)

    def side_losses(self, adapter, examples: TextSet) -> np.ndarray:
        """The loss sequence (N, L−1) of each chunk."""
        return adapter.per_token_loss(examples)

    def new_distinguisher(
        self, data: StageResult, index: int = 0
    ):  # -> panoramia.modalities.text.distinguisher.TextDistinguisher
        from panoramia.modalities.text.distinguisher import TextDistinguisher

        return TextDistinguisher(
            self.job.distinguisher,
            seed=self.distinguisher_seed(index),
            vocab_size=int(data.info["vocab_size"]),
        )

    def blind_classifier(self, seed: int):  # -> panoramia.modalities.text.blind.BlindTextClassifier
        """Token n-grams, no model (``baseline.blind``, docs/SPEC.md §2.9)."""
        from panoramia.modalities.text.blind import BlindTextClassifier

        return BlindTextClassifier(seed)

    def examples(self, stages: dict[str, StageResult]) -> dict[str, list[str]]:
        """The first audit member chunks and synthetic audit chunks, decoded."""
        from panoramia.modalities.text.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(stages["data"].directory / TOKENIZER)
        split, synthetic = stages["split"].directory, stages["synthetic_split"].directory
        sets = {
            "members (audit set)": read_chunks(split / "member_audit.npz"),
            "synthetic non-members (audit set)": read_chunks(synthetic / "synthetic_audit.npz"),
        }
        return {
            caption: tokenizer.batch_decode(chunks.tokens[:EXAMPLES].tolist())
            for caption, chunks in sets.items()
        }

    def audit_members(self, stages: dict[str, StageResult]) -> tuple[Any, list[str]]:
        """The audited member chunks, decoded (the data has no label: no groups)."""
        import pandas as pd

        from panoramia.modalities.text.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(stages["data"].directory / TOKENIZER)
        chunks = read_chunks(stages["split"].directory / "member_audit.npz")
        return pd.DataFrame({"chunk": tokenizer.batch_decode(chunks.tokens.tolist())}), []

    def check(self) -> None:
        """What a config alone cannot tell: the public base's packages are installed (every
        other text setting is checked before the job by
        :func:`panoramia.audit_settings.check_settings`)."""
        if self.job.base.source == PublicBaseSource.PACKAGE_DOCS:
            _package_versions(self.job.base.packages)

    def data(self) -> StageResult:
        identity = text_data_identity(self.job.data, self.job.target)
        return self.runner.run(
            DATA,
            lambda d: build_text_data(self.job.data, self.job.target, d),
            config=identity,
            inputs=[],
            label="data (tokenizer, chunks)",
        )

    def architecture(self, data: StageResult) -> PretrainedConfig:
        """The target's architecture: its config.json, or the demo GPT-2 of ``target.*``."""
        from panoramia.modalities.text.causal_lm import architecture_of, demo_architecture
        from panoramia.modalities.text.targets import text_model_folders
        from panoramia.modalities.text.tokenizer import load_tokenizer

        if self.job.target.kind == "path":
            assert self.job.target.path is not None
            return architecture_of(text_model_folders(Path(self.job.target.path))[0])
        if self.job.target.base_model:
            return architecture_of(self.job.target.base_model)
        tokenizer = load_tokenizer(data.directory / TOKENIZER)
        return demo_architecture(
            self.job.target, vocab_size=len(tokenizer), n_positions=self.job.data.chunk_length,
            eos_token_id=int(tokenizer.eos_token_id),
        )  # fmt: skip

    def _lora(self) -> bool:
        """Whether the demo target is a LoRA adapter over the public base."""
        return self.job.target.kind == "train" and self.job.target.adapter == "lora"

    def target_key(self, settings: dict) -> dict:
        """With the recipe's version for a Llama or LoRA target
        (:func:`panoramia.modalities.text.lora.recipe_key`); a GPT-2 trained whole keeps its key."""
        from panoramia.modalities.text.lora import recipe_key

        return recipe_key(settings)

    def target_inputs(self, data: StageResult) -> list[StageResult]:
        """A LoRA target starts from the public base: its stage is in the target's key."""
        return [self.public_base(data)] if self._lora() and not self.job.target.base_model else []

    def _train_like_target(self, data: StageResult, examples: TextSet, seed: int):
        """The demo target's recipe on ``examples``: (the trained model, a peft wrapper for a
        LoRA target; its training metrics)."""
        from panoramia.modalities.text.causal_lm import fit_causal_lm, new_causal_lm

        target = self.job.target
        if not self._lora():
            model = new_causal_lm(
                base_model=target.base_model, architecture=self.architecture(data), seed=seed
            )
            return fit_causal_lm(model, examples.tokens, target, seed=seed)
        from panoramia.modalities.text.lora import with_new_lora

        base = target.base_model or str(self.public_base(data).directory)
        model = new_causal_lm(base_model=base, architecture=None, seed=seed, dropout=target.dropout)
        return fit_causal_lm(with_new_lora(model, target, seed=seed), examples.tokens, target,
                             seed=seed)  # fmt: skip

    def train_demo_target(self, data: StageResult, directory: Path) -> dict:
        from panoramia.modalities.text.causal_lm import mean_loss, save_causal_lm

        target = self.job.target
        pool = read_chunks(
            data.directory / (CONTROL_POOL if target.members == "disjoint" else MEMBERS)
        )
        model, metrics = self._train_like_target(data, pool, target.train_seed)
        if self._lora():
            from panoramia.modalities.text.lora import save_peft_target

            base = Path(target.base_model or self.public_base(data).directory)
            save_peft_target(model, base, data.directory / TOKENIZER, directory)
        else:
            save_causal_lm(model, data.directory / TOKENIZER, directory)
        metrics["train_loss_per_token"] = mean_loss(model, pool.tokens)
        if (data.directory / NONMEMBERS).exists():
            holdout = read_chunks(data.directory / NONMEMBERS)
            metrics["holdout_loss_per_token"] = mean_loss(model, holdout.tokens)
        return metrics

    def public_base(self, data: StageResult) -> StageResult:
        """The public base LM (stage ``base``; once per tokenizer and settings, whatever the
        seed or target), or an empty stage when ``base.source=none``."""
        if self._base is not None:
            return self._base
        from panoramia.modalities.text.causal_lm import architecture_key, with_context

        config, generator = self.job.base, self.job.generator
        length = self.job.data.chunk_length
        lora_on_public_base = self._lora() and not self.job.target.base_model
        wanted = config.source != "none" and (
            lora_on_public_base or not (generator.base_model and self.job.helper.base_model)
        )
        identity: dict = {**asdict(config), "length": length} if wanted else {"source": "none"}
        if wanted:
            architecture = with_context(
                self.architecture(data), 2 * length, dropout=generator.dropout
            )
            identity["architecture"] = architecture_key(architecture)
            identity["versions"] = _package_versions(config.packages)
            identity.update(_borrowed_training(generator))

        def build(directory: Path) -> dict:
            if not wanted:
                return {"source": "none"}
            return _pretrain_base(self.job, data, architecture, directory)

        self._base = self.runner.run(
            PUBLIC_BASE, build, config=identity, inputs=[data], label="public base LM"
        )
        return self._base

    @staticmethod
    def _from_base(config, base: StageResult):  # -> the same config type
        """``config`` with its ``base_model`` set to the public base, unless it names one."""
        if config.base_model or base.info.get("source", "none") == "none":
            return config
        return replace(config, base_model=str(base.directory))

    def generator(self, data: StageResult, known: StageResult) -> StageResult:
        from panoramia.modalities.text.causal_lm import architecture_key, with_context

        architecture = self.architecture(data)
        base = self.public_base(data)
        config = self._from_base(self.job.generator, base)

        def build(directory: Path) -> dict:
            return _fit_generator(
                config, data, known, architecture, self.generation_seed, directory
            )

        settings = asdict(self.job.generator)  # the base, if any, is an input (its key)
        fit_config = {k: v for k, v in settings.items() if k not in SAMPLING}
        shape = with_context(architecture, 2 * self.job.data.chunk_length, dropout=config.dropout)
        fit_config.update(architecture=architecture_key(shape))
        return self.runner.run(
            GENERATOR, build, config=fit_config, inputs=[data, known, base],
            label="generator (LM)",
        )  # fmt: skip

    def synthetic(self, data: StageResult, known: StageResult, gen: StageResult) -> StageResult:
        return build_synthetic(
            self, data, known, gen, helper=self.job.helper.n_chunks,
            settings=asdict(self.job.generator),
            draw=lambda work: _sample_synthetic(work, self.generation_seed, self.job.generator),
            spec=SYNTHETIC,
        )  # fmt: skip

    def stand_in_key(self, data: StageResult) -> tuple[dict, list[StageResult]]:
        from panoramia.modalities.text.causal_lm import architecture_key, with_context

        architecture = self.architecture(data)
        length, dropout = self.job.data.chunk_length, self.job.helper.dropout
        shape = with_context(architecture, length, dropout=dropout)
        return {"architecture": architecture_key(shape)}, [self.public_base(data)]

    def _target_recipe(self) -> bool:
        """Whether the stand-ins train with the demo target's own recipe."""
        return self.job.audit.stand_in.recipe == "target" and self.job.target.kind == "train"

    def stand_in_recipe_key(self) -> dict:
        if not self._target_recipe():
            return {}
        recipe = self.target_key(settings_key(self.job.target))
        for name in ("name", "members", "train_seed", "path", "kind"):
            recipe.pop(name, None)
        return {"recipe": "target", "target": recipe}

    def train_stand_in(
        self, data: StageResult, examples: TextSet, directory: Path, seed: int
    ) -> dict:
        from panoramia.modalities.text.causal_lm import save_causal_lm
        from panoramia.modalities.text.helper import train_text_helper

        if self._target_recipe():  # as train_demo_target trains the target, on these examples
            model, metrics = self._train_like_target(data, examples, seed)
            if self._lora():  # a stand-in is only scored: its adapter folded into the base
                model = model.merge_and_unload()
            save_causal_lm(model, data.directory / TOKENIZER, directory)
            return metrics

        return train_text_helper(
            examples, self._from_base(self.stand_in_recipe(), self.public_base(data)), directory,
            architecture=self.architecture(data), tokenizer_dir=data.directory / TOKENIZER,
            seed=seed,
        )  # fmt: skip

    def helper(self, data: StageResult, known: StageResult, synthetic: StageResult) -> StageResult:
        from panoramia.modalities.text.causal_lm import architecture_key, with_context
        from panoramia.modalities.text.helper import train_text_helper

        architecture = self.architecture(data)
        length, dropout = self.job.data.chunk_length, self.job.helper.dropout
        base = self.public_base(data)
        helper = self._from_base(self.job.helper, base)

        def build(directory: Path) -> dict:
            return train_text_helper(
                read_chunks(synthetic.directory / "synthetic_helper.npz"), helper,
                directory, architecture=architecture, tokenizer_dir=data.directory / TOKENIZER,
                seed=child_seed(self.generation_seed, "helper"),
            )  # fmt: skip

        config = {
            **asdict(self.job.helper),  # the base, if any, is an input (its key)
            "architecture": architecture_key(with_context(architecture, length, dropout=dropout)),
        }
        return self.runner.run(
            HELPER, build, config=config, inputs=[data, synthetic, base], label="helper h (LM)"
        )


BORROWED_FROM_GENERATOR = ("weight_decay", "precision")
"""The generator's settings the public base trains with (beside its own ``base.*``)."""


def _borrowed_training(generator: Any) -> dict:
    """What the public base's key holds of :data:`BORROWED_FROM_GENERATOR`: those that differ
    from their defaults, under ``generator_training`` (none at the defaults, so that bases
    built before they entered the key keep it)."""
    defaults = {entry.name: entry.default for entry in fields(generator)}
    changed = {
        name: getattr(generator, name)
        for name in BORROWED_FROM_GENERATOR
        if getattr(generator, name) != defaults[name]
    }
    return {"generator_training": changed} if changed else {}


def _pretrain_base(
    job: TextJobConfig, data: StageResult, architecture: PretrainedConfig, directory: Path
) -> dict:
    """Build the public base LM into ``directory`` (the ``base`` stage's work); its info."""
    from panoramia.modalities.text.causal_lm import CausalLMConfig
    from panoramia.modalities.text.datasets import package_modules
    from panoramia.modalities.text.public_base import pretrain_public_base

    config, generator = job.base, job.generator
    training = CausalLMConfig(
        epochs=config.epochs, batch_size=config.batch_size,
        learning_rate=config.learning_rate, weight_decay=generator.weight_decay,
        **generator.device_settings(),
    )  # fmt: skip
    metrics = pretrain_public_base(
        package_modules(config.packages), data.directory / TOKENIZER,
        architecture, directory, length=job.data.chunk_length, count=config.chunks,
        training=training, seed=0,
    )  # fmt: skip
    return {"source": config.source, **metrics}


def _fit_generator(
    config: TextGeneratorConfig,
    data: StageResult,
    known: StageResult,
    architecture: PretrainedConfig,
    generation_seed: int,
    directory: Path,
) -> dict:
    """Fit the generator LM on D_G's training chunks into ``directory``, keeping its prompt
    chunks beside it (the ``generator`` stage's work); its info."""
    from panoramia.modalities.text.generator import TextGenerator

    members = read_chunks(known.directory / "member_generator.npz")
    order = child_rng(generation_seed, "generator/prompts").permutation(len(members))
    n_prompts = max(1, round(config.prompt_fraction * len(members)))
    prompts, train = members.take(order[:n_prompts]), members.take(order[n_prompts:])
    prompts.save(directory / PROMPTS)
    generator = TextGenerator(config)
    metrics = generator.fit(
        train, architecture=architecture,
        seed=child_seed(generation_seed, "generator"), validation=prompts,
    )  # fmt: skip
    generator.save(directory, data.directory / TOKENIZER)
    return {"trained_on": len(train), "prompts": len(prompts), **metrics}


def _sample_synthetic(
    work: SyntheticWork, generation_seed: int, settings: TextGeneratorConfig
) -> dict:
    """Draw the synthetic chunks (and the attacker's pool) into ``work.directory`` (the
    ``synthetic`` stage's work) with this job's sampling ``settings`` (``generator.SAMPLING``:
    the fitted generator is shared by jobs that sample differently); its info."""
    from panoramia.modalities.text.generator import TextGenerator

    gen, needed, pool, directory = work.gen, work.needed, work.pool, work.directory
    generator = TextGenerator.load(gen.directory, sampling=settings)
    prompts = read_chunks(gen.directory / PROMPTS)
    seed = child_seed(generation_seed, "synthetic")
    chunks = generator.sample(prompts, sum(needed.values()), seed=seed)
    deal(  # disjoint: h's chunks are never audited
        needed,
        lambda indices, name: chunks.take(indices).save(directory / f"synthetic_{name}.npz"),
        order=SYNTHETIC_SETS,
    )
    seeds = {"synthetic": seed}
    if pool:  # the attacker's extra false-positive side, drawn as the audit's
        seeds["pool"] = child_seed(generation_seed, "synthetic/pool")
        generator.sample(prompts, pool, seed=seeds["pool"]).save(directory / f"{POOL_SET}.npz")
    (directory / "seeds.json").write_text(json.dumps(seeds))
    return {
        "tokens_per_second": round(float(generator.tokens_per_second or 0.0), 1),
        "prompts": len(prompts),
        **needed,
        "pool": pool,
    }
