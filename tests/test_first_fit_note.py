"""The first fit of a process says, when verbose, that it loads or compiles the numba kernels
(issue 29, point 7: the pause of a first fit was silent)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fastpath.utils import _progress
from fastpath.utils._progress import COMPILE_NOTE, FIRST_FIT_NOTE


# compiles in a fresh process (about 8 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_the_first_verbose_fit_of_a_process_names_the_compile_and_no_later_one():
    script = (
        "from fastpath import BayesNetClassifier\n"
        "from fastpath.io import load_dataset\n"
        "X, y = load_dataset('car')\n"
        "X, y = X.iloc[::20], y.iloc[::20]\n"
        "for _ in range(2):\n"
        "    BayesNetClassifier('nb', estimation='m', m=1.0, verbose=1).fit(X, y)\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=600)
    # the one or the other, as numba's cache is warm or cold
    assert res.stderr.count(FIRST_FIT_NOTE) + res.stderr.count(COMPILE_NOTE) == 1
    first = res.stderr.splitlines()[0]  # before the first fit's stages
    assert FIRST_FIT_NOTE in first or COMPILE_NOTE in first


def test_only_the_first_fit_log_of_a_process_says_it_and_only_when_verbose(monkeypatch,
                                                                           capsys):
    monkeypatch.setattr(_progress, "_first_fit", [True])
    _progress.FitLog(0)  # a quiet first fit: nothing, and the next fit is not the first
    _progress.FitLog(1)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_progress, "_first_fit", [True])
    _progress.FitLog(1)
    _progress.FitLog(1)
    assert capsys.readouterr().err.count(FIRST_FIT_NOTE) == 1


def test_a_cold_cache_is_said_as_a_compile(monkeypatch, capsys):
    # issue 55, point 6: the first compile announced as one
    monkeypatch.setattr(_progress, "_first_fit", [True])
    _progress.FitLog(1, cold=lambda: True)
    assert capsys.readouterr().err.count(COMPILE_NOTE) == 1
    monkeypatch.setattr(_progress, "_first_fit", [True])
    asked = []
    _progress.FitLog(0, cold=lambda: asked.append(1) or True)  # quiet: not even asked
    assert capsys.readouterr().err == "" and asked == []


# compiles from an empty cache (about 12 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_an_empty_numba_cache_reads_as_cold_and_the_command_line_says_so(tmp_path):
    import os

    script = (
        "from fastpath.pipeline._config import kernels_cold\n"
        "print(kernels_cold())\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty"))
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=300, env=env)
    assert res.stdout == "True\n"
    # the cache of this checkout holds the kernels the tests ran: warm
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=300)
    assert res.stdout == "False\n"


def test_the_command_line_says_when_it_compiles(credit_csv, tmp_path, capsys, monkeypatch):
    import fastpath.pipeline._config as config
    from fastpath.cli import main

    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "nb", "--estimation", "m", str(credit_csv), "--model",
                 str(model), "--quiet"]) == 0
    monkeypatch.setattr(config, "kernels_cold", lambda: True)
    for argv in (["predict", str(credit_csv), "--model", str(model), "--out",
                  str(tmp_path / "p.csv")],
                 ["fit", "--structure", "nb", "--estimation", "m", str(credit_csv), "--model",
                  str(model)]):
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert err.count("compiling the numba kernels") == 1, err
    assert main(["predict", str(credit_csv), "--model", str(model), "--out",
                 str(tmp_path / "p.csv"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
