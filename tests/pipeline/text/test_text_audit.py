"""The text audit end to end (``--config-name text``) on the documentation topics, tiny."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.cli_support import run_audit, run_command
from tests.conftest import SMALL_NULL, shared_store, stage
from tests.lora_support import tiny_llama_base, with_lora

TINY = ["--config-name", "text", "+experiment=text_tiny", "threads=1", SMALL_NULL]
HEADLINE = ("c_lb", "c_plus_eps_lb", "eps_tilde")


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's text artifact store, shared by every test and worker."""
    return shared_store(tmp_path_factory, "text-artifacts")


def audit(*args: str, artifacts: Path, run_dir: Path | None = None) -> subprocess.CompletedProcess:
    return run_audit(TINY, *args, artifacts=artifacts, run_dir=run_dir)


def test_text_audit_writes_a_full_report_and_reruns_from_cache(
    artifacts: Path, tmp_path: Path
) -> None:
    done = audit(artifacts=artifacts, run_dir=tmp_path / "first")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "first" / "report.json").read_text())
    assert report["modality"] == "text"
    assert report["eps_tilde"] == pytest.approx(max(0.0, report["c_plus_eps_lb"] - report["c_lb"]))
    data = report["data"]
    assert data["chunk_length"] == 32
    assert data["vocab_size"] == 512
    assert report["m"] == data["split"]["members"]["audit"] == data["synthetic"]["audit"]
    assert data["synthetic"]["tokens_per_second"] > 0
    assert data["held_out_drawn"] is True
    o1 = report["reference_audits"]["o1"]  # per document: the split was drawn by document
    assert (o1["unit"], o1["randomised"]) == ("document", True)
    units = np.load(stage(artifacts, report, "reference_units") / "unit_losses.npz")
    assert o1["n"] == min(units["member"].sum(), (units["member"] == 0).sum())
    assert units["member"].sum() == data["member_documents"]
    assert o1["per_example"]["n"] == report["m"]  # the rule before's game, a figure
    assert report["target"]["identity"]["format"] == "hf-causal-lm"
    assert "holdout_loss_per_token" in report["target"]
    assert report["timings"]["base"]["seconds"] > 0  # the public base LM, pre-trained here
    generator = json.loads((stage(artifacts, report, "generator") / "generator.json").read_text())
    assert generator["base_model"].startswith(str(artifacts / "base"))
    blind = report["baseline"]["blind"]  # token n-grams, no model (docs/SPEC.md §2.9)
    assert set(blind) >= {"c_lb", "c_lb_two_sided", "auc", "beats_baseline", "note"}
    assert blind["beats_baseline"] == (
        blind["c_lb"] > report["c_lb"] or blind["c_lb_two_sided"] > report["two_sided"]["c_lb"]
    )
    assert ("told apart without any model" in blind["note"]) == blind["beats_baseline"]
    phases = [c["params"]["phase"] for c in report["attack"]["distinguisher"]["selection"]]
    assert phases == ["head", "all"]
    examples = report["examples"]
    assert set(examples) == {"members (audit set)", "synthetic non-members (audit set)"}
    assert all(len(texts) == 6 and all(texts) for texts in examples.values())
    page = (tmp_path / "first" / "report.html").read_text()
    charts = page.count('<img src="data:image/png;base64,')  # one chart an image
    assert charts >= 6  # null, precision, θ_lb, ROC, a loss chart per model
    assert page.count('" alt="') == charts
    assert "members the attack is surest about" in page  # her chunks, decoded
    assert page.count("<pre class=chunk>") == 12
    scores = np.load(stage(artifacts, report, "attack") / "scores.npz")
    assert np.unique(scores["scores"]).size > 50  # continuous scores
    assert scores["side"].shape == (report["m"], 31)  # the loss sequence of each chunk
    sequences = stage(artifacts, report, "losses_target") / "sequences"  # a set a file
    assert {p.stem for p in sequences.glob("*.npy")} >= {"member_audit", "synthetic_audit"}
    assert np.load(sequences / "member_audit.npy").shape[1] == 31
    synthetic = stage(artifacts, report, "synthetic")
    audit_chunks = np.load(synthetic / "synthetic_audit.npz")["tokens"]
    helper_chunks = np.load(synthetic / "synthetic_helper.npz")["tokens"]
    assert not {tuple(r) for r in audit_chunks} & {tuple(r) for r in helper_chunks}

    again = audit(artifacts=artifacts, run_dir=tmp_path / "second")
    assert again.returncode == 0
    assert again.stderr.count(": reused (") == 23
    second = json.loads((tmp_path / "second" / "report.json").read_text())
    assert [report[k] for k in HEADLINE] == [second[k] for k in HEADLINE]


def test_own_text_and_own_model_directory(artifacts: Path, tmp_path: Path) -> None:
    """A JSONL corpus and a bare Hugging Face directory (no target.json) of a causal LM."""
    from panoramia.modalities.text.datasets import load_pydoc_topics

    base = audit(artifacts=artifacts, run_dir=tmp_path / "base")  # reused once built
    assert base.returncode == 0, base.stderr[-3000:]
    report = json.loads((tmp_path / "base" / "report.json").read_text())
    model = tmp_path / "model"
    shutil.copytree(stage(artifacts, report, "target"), model)
    (model / "target.json").unlink()
    topics = load_pydoc_topics()
    members, held_out = tmp_path / "members.jsonl", tmp_path / "held_out.jsonl"
    members.write_text("".join(json.dumps({"text": t}) + "\n" for t in topics[:50]))
    held_out.write_text("".join(json.dumps({"text": t}) + "\n" for t in topics[50:]))
    # the model as a bare directory, then the same base shipped as a LoRA adapter (peft) over
    # it: a LoRA's tokenizer and architecture are read from its base, its losses from the
    # adapted model
    shipped = tmp_path / "lora"
    _lora_over(model, shipped)
    for name, folder, kind in (("run", model, "hf-causal-lm"), ("lora_run", shipped, "peft")):
        done = audit(
            # text_tiny sets data.source (pydoc) after the data group: files again here
            "data=text_files", "data.source=files", f"data.members_path={members}",
            f"data.nonmembers_path={held_out}", "data.chunk_length=32", "data.max_members=700",
            "target=text_path", f"target.path={folder}", artifacts=artifacts,
            run_dir=tmp_path / name,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads((tmp_path / name / "report.json").read_text())
        assert report["target"]["kind"] == "path"
        assert report["target"]["identity"]["format"] == kind
        assert report["data"]["members"] == 700
        assert report["data"]["nonmembers"] > 0
        assert report["m"] == 140
        assert report["data"]["held_out_drawn"] is False
        o1 = report["reference_audits"]["o1"]  # her own held-out documents: a figure
        assert (o1["unit"], o1["randomised"]) == ("example", False)
        assert "stays out of this verdict" in " ".join(report["verdict"]["meaning"])


def test_a_pretrained_base_gives_the_audit_its_tokenizer(artifacts: Path, tmp_path: Path) -> None:
    """``+experiment=smollm2_text`` in miniature (issue 70): a LoRA target, the generator and h
    all start from one local pre-trained Llama folder, and the audit's tokenizer is that
    model's (not a BPE trained on the corpus)."""
    from panoramia.modalities.text.datasets import load_pydoc_topics
    from panoramia.modalities.text.tokenizer import load_tokenizer

    base = tiny_llama_base(tmp_path / "pretrained", load_pydoc_topics()[:30], vocab_size=300)
    pretrained = [  # smollm2_text's settings (composed below) beside text_tiny's
        "base.source=none",
        f"generator.base_model={base}",
        f"helper.base_model={base}",
    ]
    done = audit(
        *pretrained, "target=lora_many_epochs", f"target.base_model={base}", "target.epochs=1",
        artifacts=artifacts, run_dir=tmp_path / "run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["data"]["vocab_size"] == len(load_tokenizer(base)) <= 300
    assert report["timings"]["base"]["seconds"] < 5  # base.source=none: nothing pre-trained
    tokenizer = stage(artifacts, report, "data") / "tokenizer" / "tokenizer.json"
    assert (
        json.loads(tokenizer.read_text())["model"]["vocab"]
        == json.loads((base / "tokenizer.json").read_text())["model"]["vocab"]
    )
    assert report["target"]["identity"]["format"] == "peft"
    missing = audit(
        *pretrained, "target=lora_many_epochs", f"target.base_model={tmp_path / 'nowhere'}",
        artifacts=artifacts, run_dir=tmp_path / "missing",
    )  # fmt: skip
    assert missing.returncode == 2
    assert "target.base_model" in missing.stderr.strip().splitlines()[-1]
    assert "Traceback" not in missing.stderr


def test_smollm2_experiment_composes() -> None:
    done = run_command(
        ["--config-name", "text", "+experiment=smollm2_text", "target=lora_many_epochs",
         "target.base_model=/models/smollm2", "generator.base_model=/models/smollm2",
         "helper.base_model=/models/smollm2", "--cfg", "job", "--resolve"]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("base_model: /models/smollm2") == 3
    assert "source: none" in done.stdout.split("base:")[1]
    assert "top_k: 200" in done.stdout


def test_lora_demo_target_with_calibrated_and_blind_features(
    artifacts: Path, tmp_path: Path
) -> None:
    """``target=lora_many_epochs`` from the embedded defaults: a Llama-family public base, a LoRA
    adapter trained over it and shipped in the peft format, stand-ins of its recipe; the attack
    reads calibrated loss features with reference models and the blind logit on both sides."""
    done = audit(
        "target=lora_many_epochs", "target.epochs=2", "distinguisher.features=calibrated",
        "distinguisher.blind=true", "audit.attack_side=target+helper+reference_models",
        "audit.baseline_side=stand_in+helper+reference_models", artifacts=artifacts,
        run_dir=tmp_path / "run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    target = report["target"]
    assert target["identity"]["format"] == "peft"
    assert set(target["identity"]["sha256"]) >= {
        "adapter/adapter_config.json",
        "adapter/adapter_model.safetensors",
        "base/config.json",
    }
    folder = stage(artifacts, report, "target")
    adapter_config = json.loads((folder / "adapter" / "adapter_config.json").read_text())
    assert adapter_config["base_model_name_or_path"] == "../base"  # not this store's path
    base_config = json.loads((stage(artifacts, report, "base") / "config.json").read_text())
    assert base_config["model_type"] == "llama"
    assert (folder / "base" / "model.safetensors").read_bytes() == (
        stage(artifacts, report, "base") / "model.safetensors"
    ).read_bytes()  # the adapter is over the public base, which stays as it was
    assert 0 < report["null"]["p_value"] <= 1  # the sides mirror each other: the null ran
    assert "attack_rmrn" not in report["timings"]  # no RM;RN beside a blind column (SPEC §2.9)
    from safetensors.numpy import load_file

    # the stand-ins trained the target's LoRA recipe: the base's embeddings left as they were
    base_weights = load_file(stage(artifacts, report, "base") / "model.safetensors")
    stand_in = load_file(stage(artifacts, report, "stand_in_1") / "model.safetensors")
    name = "model.embed_tokens.weight"
    np.testing.assert_array_equal(stand_in[name], base_weights[name])
    assert not all(np.array_equal(stand_in[k], base_weights[k]) for k in base_weights)
    scores = np.load(stage(artifacts, report, "attack") / "scores_0.npz")
    assert scores["side"].shape == (report["m"], 31, 4)  # f, h and the two other stand-ins


def _lora_over(base: Path, directory: Path) -> None:
    """A LoRA adapter (peft, non-zero) over a copy of ``base``, with its manifest."""
    from transformers import AutoModelForCausalLM

    shutil.copytree(base, directory / "base")
    model = AutoModelForCausalLM.from_pretrained(directory / "base", local_files_only=True)
    adapted = with_lora(model, ["c_attn"], scale=0.05, seed=0)
    adapted.save_pretrained(directory / "adapter", safe_serialization=True)
    manifest = {"format": "peft", "modality": "text", "base": "base", "adapter": "adapter"}
    (directory / "target.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("target.augment=crop", "Key 'augment' not in 'TextTargetConfig'"),
        ("data.source=wikipedia", "data.source: 'wikipedia' is not one of"),
        ("data.source=files", "data.members_path: required"),
        ("target=text_path", "target.path"),
        ("data.pool_chunks=5000", "data.pool_chunks: 5000 is too large"),
        ("target.n_head=3", "target.n_embd: 32 is not a multiple of target.n_head 3"),
        ("base.packages=[nosuchpackage]", "base.packages: 'nosuchpackage' is not an installed"),
        ("base.source=web", "base.source: 'web' is not package_docs or none"),
        ("base.source=nope", "base.source: 'nope' is not package_docs or none"),
        ("target.kind=mlp", "target.kind: 'mlp' is not train or path"),
        ("distinguisher.features=bag", "features: 'bag' is not sequence or calibrated"),
        ("target.architecture=bert", "target.architecture: 'bert' is not gpt2 or llama"),
        ("target=lora_many_epochs base.source=none", "target.adapter: a LoRA adapter trains"),
    ],
)
def test_bad_text_config_exits_2_with_one_line(override: str, message: str, tmp_path: Path) -> None:
    done = audit(*override.split(), artifacts=tmp_path / "a", run_dir=tmp_path / "run")
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("panoramia-audit: error: "), done.stderr
    assert message in lines[-1]
    assert "Traceback" not in done.stderr
    # before any stage runs, except what only the data stage can know (chunks per pool)
    assert len(lines) == (2 if "pool_chunks" in message else 1), done.stderr


def test_paper_scale_wikitext_experiment_composes() -> None:
    done = run_command(
        ["--config-name", "text", "+experiment=wikitext_gpt2",
         "data.members_path=/data/wiki.jsonl", "target.path=/models/ft",
         "generator.base_model=/models/gpt2", "helper.base_model=/models/gpt2",
         "--cfg", "job", "--resolve"]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for expected in ("name: gpt2-wikitext", "kind: path", "base_model: /models/gpt2", "top_k: 200"):
        assert expected in done.stdout
    assert "source: none" in done.stdout.split("base:")[1]  # no public base: GPT-2 is given
