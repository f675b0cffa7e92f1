"""``panoramia measure`` / ``panoramia o1``: formats, JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from panoramia.cli import app

BIN = Path(sys.executable).parent
runner = CliRunner()


def _measure_args(path: Path, *attacks: str) -> list[str]:
    args = ["measure", str(path), "--baseline-col", "baseline_pred"]
    for attack in attacks or ("mia_mlp10_pred",):
        args += ["--mia-col", attack]
    return [*args, "--json"]


def test_json_for_one_and_several_attacks(official_scores_path: Path) -> None:
    one = runner.invoke(app, _measure_args(official_scores_path))
    assert one.exit_code == 0, one.output
    document = json.loads(one.stdout)
    assert document["attack_column"] == "mia_mlp10_pred"
    assert round(document["c_lb"], 3) == 4.515
    assert round(document["eps_tilde"], 3) == 0.092
    several = runner.invoke(
        app, _measure_args(official_scores_path, "mia_mlp10_pred", "mia_mlp100_pred")
    )
    documents = json.loads(several.stdout)
    assert [d["attack_column"] for d in documents] == ["mia_mlp10_pred", "mia_mlp100_pred"]
    assert round(documents[1]["c_plus_eps_lb"], 3) == 4.533
    assert documents[1]["attack"]["saturated"] is True


def test_csv_parquet_and_npz_agree(official_scores_path: Path, tmp_path: Path) -> None:
    frame = pd.read_csv(official_scores_path)
    frame.to_parquet(tmp_path / "scores.parquet")
    np.savez(tmp_path / "scores.npz", **{c: frame[c].to_numpy() for c in frame.columns})
    frame.to_csv(tmp_path / "scores.csv.gz", index=False)
    outputs = [
        json.loads(runner.invoke(app, _measure_args(path)).stdout)
        for path in (
            official_scores_path,
            tmp_path / "scores.parquet",
            tmp_path / "scores.npz",
            tmp_path / "scores.csv.gz",
        )
    ]
    assert all(output == outputs[0] for output in outputs)


def test_table_output_and_options(official_scores_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "measure",
            str(official_scores_path),
            "--baseline-col",
            "baseline_pred",
            "--mia-col",
            "mia_mlp100_pred",
        ],
    )
    assert result.exit_code == 0
    assert "ε̃ = 0.018" in result.stdout
    assert "saturated" in result.stdout
    relaxed = runner.invoke(
        app,
        [
            *_measure_args(official_scores_path),
            "--thresholds",
            "all",
            "--confidence",
            "0.9",
            "--gamma",
            "1e-7",
            "--delta",
            "1e-6",
            "--table",
        ],
    )
    document = json.loads(relaxed.stdout)
    assert document["thresholds"] == "all"
    assert document["n_thresholds"] == 11023
    assert document["alpha_per_test"] == pytest.approx(0.1 / (2 * 11023))
    assert document["delta"] == 1e-6
    assert len(document["attack"]["table"]["tau"]) > 100


def test_o1_command(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    membership = rng.integers(0, 2, 3000)
    loss = rng.exponential(1.0, 3000) * np.where(membership == 1, 0.2, 1.0)
    pd.DataFrame({"member": membership, "loss": loss}).to_csv(tmp_path / "l.csv", index=False)
    result = runner.invoke(app, ["o1", str(tmp_path / "l.csv"), "--loss-col", "loss", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["eps_lb"] > 0.5
    assert document["r"] == document["k_plus"] + document["k_minus"]
    text = runner.invoke(app, ["o1", str(tmp_path / "l.csv"), "--loss-col", "loss"])
    assert "O(1) audit" in text.stdout


def _write(tmp_path: Path, name: str, frame: pd.DataFrame) -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


BAD_INPUTS = {
    "missing file": (None, "does not exist"),
    "missing column": (
        pd.DataFrame({"member": [0, 1], "baseline_pred": [0.1, 0.2]}),
        "missing column(s) 'mia_mlp10_pred'",
    ),
    "nan score": (
        pd.DataFrame(
            {
                "member": [0, 1, 1],
                "baseline_pred": [0.1, 0.2, 0.3],
                "mia_mlp10_pred": [0.1, np.nan, 0.3],
            }
        ),
        "attack scores: 1 NaN",
    ),
    "inf score": (
        pd.DataFrame(
            {
                "member": [0, 1, 1],
                "baseline_pred": [0.1, np.inf, 0.3],
                "mia_mlp10_pred": [0.1, 0.2, 0.3],
            }
        ),
        "1 infinite",
    ),
    "labels not 0/1": (
        pd.DataFrame(
            {
                "member": [0, 1, 3],
                "baseline_pred": [0.1, 0.2, 0.3],
                "mia_mlp10_pred": [0.1, 0.2, 0.3],
            }
        ),
        "labels must be 0",
    ),
    "single class": (
        pd.DataFrame({"member": [1, 1], "baseline_pred": [0.1, 0.2], "mia_mlp10_pred": [0.1, 0.2]}),
        "holds only members",
    ),
    "empty": (pd.DataFrame({"member": [], "baseline_pred": [], "mia_mlp10_pred": []}), "no rows"),
    "text score": (
        pd.DataFrame({"member": [0, 1], "baseline_pred": ["a", "b"], "mia_mlp10_pred": [0.1, 0.2]}),
        "must be numeric",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line(case: str, tmp_path: Path) -> None:
    frame, message = BAD_INPUTS[case]
    path = tmp_path / "missing.csv" if frame is None else _write(tmp_path, "s.csv", frame)
    result = runner.invoke(app, _measure_args(path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("panoramia: error: ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--thresholds", "grid:0"], "thresholds"), (["--confidence", "1.5"], "confidence")],
)
def test_bad_options_exit_2(official_scores_path: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(app, [*_measure_args(official_scores_path), *extra])
    assert result.exit_code == 2
    assert message in result.stderr


def test_unreadable_files_exit_2(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("member\n1\n")
    (tmp_path / "s.parquet").write_bytes(b"not parquet at all")
    np.savez(tmp_path / "s.npz", member=np.array([{"a": 1}, 2], dtype=object))
    for name, message in (
        ("s.txt", "unknown format"),
        ("s.parquet", "cannot read parquet"),
        ("s.npz", "pickled objects"),
    ):
        result = runner.invoke(app, _measure_args(tmp_path / name))
        assert result.exit_code == 2, result.stderr
        assert message in result.stderr


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.csv", BAD_INPUTS["nan score"][0])
    done = subprocess.run(
        [BIN / "panoramia", *_measure_args(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "Traceback" not in done.stderr


def test_measurement_path_imports_no_deep_learning_stack() -> None:
    code = (
        "import sys, panoramia.cli, panoramia.measure, panoramia.scores_file, "
        "panoramia.cli.render\n"
        "heavy = {'torch', 'lightning', 'transformers', 'sdv', 'xgboost'}\n"
        "loaded = heavy & {name.split('.')[0] for name in sys.modules}\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
