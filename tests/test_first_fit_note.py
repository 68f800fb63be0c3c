"""The first fit of a process says, when verbose, that it loads or compiles the numba kernels
(issue 29, point 7: the pause of a first fit was silent)."""

from __future__ import annotations

import subprocess
import sys

from fastpath.utils import _progress
from fastpath.utils._progress import FIRST_FIT_NOTE


def test_the_first_verbose_fit_of_a_process_names_the_compile_and_no_later_one():
    script = (
        "from fastpath import BayesNetClassifier\n"
        "from fastpath.io import load_dataset\n"
        "X, y = load_dataset('car')\n"
        "X, y = X.iloc[::20], y.iloc[::20]\n"
        "for _ in range(2):\n"
        "    BayesNetClassifier('nb', estimator='m', m=1.0, verbose=1).fit(X, y)\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=600)
    assert res.stderr.count(FIRST_FIT_NOTE) == 1
    assert FIRST_FIT_NOTE in res.stderr.splitlines()[0]  # before the first fit's stages


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
