"""The support screen (``panoramia.modalities.tabular.support``): rows with value pairs D_G never
shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from panoramia.modalities.tabular.support import SupportScreen


def _real(n: int, seed: int = 0) -> pd.DataFrame:
    """Husbands are male, wives female, education-num follows education; age is continuous-ish."""
    rng = np.random.default_rng(seed)
    relationship = rng.choice(["Husband", "Wife", "Own-child", "Unmarried"], n)
    either = rng.choice(["Male", "Female"], n)
    sex = np.where(relationship == "Husband", "Male",
                   np.where(relationship == "Wife", "Female", either))  # fmt: skip
    education = rng.choice(["HS-grad", "Bachelors", "Masters"], n)
    number = pd.Series(education).map({"HS-grad": 9, "Bachelors": 13, "Masters": 14})
    return pd.DataFrame({
        "relationship": relationship, "sex": sex, "education": education,
        "education-num": number.to_numpy(), "fnlwgt": rng.integers(10_000, 500_000, n),
    })  # fmt: skip


def test_rows_that_break_the_real_structure_are_dropped() -> None:
    real = _real(4000)
    screen = SupportScreen.fit(real, novelty=0.005, seed=0)
    assert ("relationship", "sex") in screen.checks
    assert ("education", "education-num") in screen.checks
    assert not any("fnlwgt" in group for group in screen.checks)  # continuous: left alone
    candidates = pd.DataFrame({
        "relationship": ["Husband", "Husband", "Wife", "Own-child"],
        "sex": ["Male", "Female", "Female", "Female"],
        "education": ["Masters", "Masters", "HS-grad", "Bachelors"],
        "education-num": [14, 14, 9, 9],
        "fnlwgt": [123_457, 99_999, 42, 7],
    })  # fmt: skip
    assert screen.passes(candidates).tolist() == [True, False, True, False]
    assert len(screen.screen(candidates)) == 2


def test_real_rows_rarely_fail() -> None:
    """Fresh real rows from the same distribution fail about as rarely as ``novelty`` says."""
    screen = SupportScreen.fit(_real(4000, seed=1), novelty=0.005, seed=0)
    assert screen.passes(_real(4000, seed=2)).mean() > 0.99


def test_zero_novelty_turns_the_screen_off() -> None:
    real = _real(500)
    screen = SupportScreen.fit(real, novelty=0.0, seed=0)
    assert screen.checks == {}
    assert screen.passes(real.iloc[::-1]).all()
