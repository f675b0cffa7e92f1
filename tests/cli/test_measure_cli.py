"""``panoramia measure`` / ``panoramia o1``: formats, JSON, and one-line errors with exit 2."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from panoramia.cli import app
from tests.cli_support import run_command

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
    every = runner.invoke(
        app,
        [*_measure_args(official_scores_path), "--thresholds", "all", "--confidence", "0.9",
         "--table"],
    )  # fmt: skip
    document = json.loads(every.stdout)
    assert document["thresholds"] == "all"
    assert document["n_thresholds"] == 11023
    assert document["alpha_per_test"] == pytest.approx(0.1 / (2 * 11023))
    assert len(document["attack"]["table"]["tau"]) > 100
    # The relaxed tests (a branch and bound over every threshold's root) on the default grid.
    relaxed = runner.invoke(
        app, [*_measure_args(official_scores_path), "--gamma", "1e-7", "--delta", "1e-6"]
    )
    document = json.loads(relaxed.stdout)
    assert (document["gamma"], document["delta"]) == (1e-7, 1e-6)
    assert document["n_thresholds"] == 100


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
    [
        (["--thresholds", "grid:0"], "thresholds"),
        (["--confidence", "1.5"], "confidence"),
        (["--two-sided", "--thresholds", "all"], "--two-sided: the two-sided game uses grid"),
        (["--two-sided", "--thresholds", "grid:1001"], "--two-sided: the two-sided game takes"),
        (["--two-sided", "--delta", "1e-5"], "--two-sided: the two-sided game has no relaxed"),
    ],
)
def test_bad_options_exit_2(official_scores_path: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(app, [*_measure_args(official_scores_path), *extra])
    assert result.exit_code == 2
    assert message in result.stderr


def test_two_sided_game_beside_the_papers(official_scores_path: Path) -> None:
    """``--two-sided`` adds the game of docs/SPEC.md §2.6 to each attack's result, the same
    figures as the library's; the paper's figures are unchanged."""
    from panoramia.measure.two_sided import measure_two_sided

    frame = pd.read_csv(official_scores_path)
    args = [*_measure_args(official_scores_path, "mia_mlp10_pred", "mia_mlp100_pred")]
    plain = json.loads(runner.invoke(app, args).stdout)
    both = json.loads(runner.invoke(app, [*args, "--two-sided", "--confidence", "0.9"]).stdout)
    for document, name in zip(both, ("mia_mlp10_pred", "mia_mlp100_pred"), strict=True):
        expected = measure_two_sided(
            frame["member"], baseline_scores=frame["baseline_pred"],
            attack_scores=frame[name], grid=100, confidence=0.9,
        ).to_dict()  # fmt: skip
        assert document["two_sided"] == json.loads(json.dumps(expected))
    assert all("two_sided" not in document for document in plain)
    shown = runner.invoke(app, [*args[:-1], "--two-sided"])  # the table, not JSON
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.count("two-sided game") == 2


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


def _one_line_exit_2(result: object, *names: str) -> None:
    """Exit status 2, one ``panoramia: error:`` line on stderr naming ``names``, no traceback."""
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("panoramia: error: ")
    for name in names:
        assert name in result.stderr, result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--noise-multiplier", "1e308", "--steps", "100"], ["--noise-multiplier", "1e+308"]),
        (["--noise-multiplier", "1e-300", "--steps", "100"], ["--noise-multiplier"]),
        (["--noise-multiplier", "1", "--steps", "1000000000000"], ["--steps"]),
        (["--noise-multiplier", "1", "--epochs", "1e308"], ["--epochs"]),
        (["--noise-multiplier", "1", "--sample-rate", "1e-300", "--epochs", "1e8"],
         ["--epochs/--sample-rate"]),
        (["--noise-multiplier", "0.1", "--steps", "10000000"], ["σ = 0.1", "T = 10000000"]),
    ],
)  # fmt: skip
def test_account_dpsgd_extreme_values_exit_2(options: list[str], names: list[str]) -> None:
    """Values that overflowed (σ = 1e308, epochs/q = inf) or asked for TiBs (T = 10¹²; σ = 0.1
    over 10⁷ steps) are refused in one line naming the option, before any accounting."""
    base = ["account", "dpsgd", "--sample-rate", "0.01"]
    if "--sample-rate" in options:
        base = base[:2]
    _one_line_exit_2(runner.invoke(app, [*base, *options]), *names)


def test_calibrate_and_tuning_check_dpsgd_options() -> None:
    steps = ["--sample-rate", "0.01", "--steps", "1000000000000"]
    _one_line_exit_2(
        runner.invoke(app, ["calibrate", "--target-advantage", "0.1", *steps]), "--steps"
    )
    tuning = "account tuning --runs 3 --noise-multiplier 1e308 --sample-rate 0.01 --steps 10"
    _one_line_exit_2(runner.invoke(app, tuning.split()), "--noise-multiplier")


def _npy_bytes(shape: tuple[int, ...], descr: str = "<f8", payload: bytes = b"\0" * 16) -> bytes:
    """A ``.npy`` member whose header declares ``shape`` over only ``payload``."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return header.getvalue() + payload


@pytest.mark.parametrize(
    ("shape", "descr", "message"),
    [
        ((10**12,), "<f8", "declares 1000000000000 values; at most 100000000 rows"),
        ((10**7,), "<f8", "declares 80000000 bytes of data but its member holds"),
        ((10,), "|S1000000", "values of 1000000 bytes"),
    ],
)
def test_crafted_npz_header_is_refused_before_loading(
    tmp_path: Path, shape: tuple[int, ...], descr: str, message: str
) -> None:
    """A header claiming 10¹² rows made np.load try to allocate 7.3 TiB (a traceback); the
    headers are now checked first and the file refused in one line naming the column."""
    path = tmp_path / "crafted.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for column in ("member", "baseline_pred", "mia_mlp10_pred"):
            archive.writestr(f"{column}.npy", _npy_bytes(shape, descr))
    _one_line_exit_2(runner.invoke(app, _measure_args(path)), "crafted.npz", "'member'", message)


def test_npz_reads_only_the_requested_columns(tmp_path: Path) -> None:
    """Other members (even a crafted one) are listed but never loaded."""
    path = tmp_path / "scores.npz"
    rng = np.random.default_rng(0)
    np.savez(
        path,
        member=rng.integers(0, 2, 500),
        baseline_pred=rng.random(500),
        mia_mlp10_pred=rng.random(500),
    )
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("unused.npy", _npy_bytes((10**12,)))
    result = runner.invoke(app, _measure_args(path))
    assert result.exit_code == 0, result.output
    missing = runner.invoke(app, [*_measure_args(path), "--mia-col", "nope"])
    _one_line_exit_2(missing, "'nope'", "unused")


def test_huge_threshold_grid_exits_2(official_scores_path: Path) -> None:
    """grid:2000000000 asked linspace for 16 GB; K is now at most MAX_GRID, named in one line."""
    from panoramia.measure.thresholds import MAX_GRID

    result = runner.invoke(
        app, [*_measure_args(official_scores_path), "--thresholds", "grid:2000000000"]
    )
    _one_line_exit_2(result, "thresholds", f"at most K = {MAX_GRID}", "2000000000")


@pytest.mark.parametrize(
    ("override", "names"),
    [
        ("seed=${oc.env:PANORAMIA_TEST_SURELY_UNSET}", ["seed", "PANORAMIA_TEST_SURELY_UNSET"]),
        ("seed=${oc.env:HOME}", ["seed", "could not be converted to Integer"]),
        ("target.name=${nope}", ["target.name", "'nope' not found"]),
        ("target.hidden=[16,${oc.env:PANORAMIA_TEST_SURELY_UNSET}]", ["target.hidden[1]"]),
        ("hydra.run.dir=${oc.env:PANORAMIA_TEST_SURELY_UNSET}", ["hydra.run.dir"]),
        ("audit.thresholds=grid:2000000000", ["audit.thresholds", "at most K"]),
    ],
)
def test_audit_config_errors_exit_2_in_one_line(
    override: str, names: list[str], tmp_path: Path
) -> None:
    """Interpolations that fail to resolve (an unset variable, a wrong type, an unknown key)
    were Hydra tracebacks with exit 1; now one line naming the key, before any stage runs."""
    environment = {k: v for k, v in os.environ.items() if k != "PANORAMIA_TEST_SURELY_UNSET"}
    command = [override, f"artifacts_dir={tmp_path / 'artifacts'}"]
    if not override.startswith("hydra.run.dir="):
        command.append(f"hydra.run.dir={tmp_path / 'run'}")
    done = run_command(command, env=environment, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("panoramia-audit: error: ")
    for name in names:
        assert name in done.stderr
    assert "Traceback" not in done.stderr
