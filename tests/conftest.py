"""Fixtures shared by several test modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastpath.io import load_dataset
from fastpath.utils._warn import forget_shown

from _fast_subset import add_option, configure


def pytest_addoption(parser):
    """``--fast``: make test-fast's subset (tests/_fast_subset.py)."""
    add_option(parser)


def pytest_configure(config):
    """``--fast``'s plugin (tests/_fast_subset.py); then, under pytest-xdist, compile the numba
    kernels once, in two processes at once (tests/_warm_kernels.py), before the workers start,
    so that no two workers compile the same kernel; a warm cache makes this a few seconds.
    ``HDPBN_NO_WARM_KERNELS=1`` skips it."""
    configure(config)
    if (hasattr(config, "workerinput") or not config.getoption("numprocesses", None)
            or os.environ.get("HDPBN_NO_WARM_KERNELS")):
        return
    script = Path(__file__).with_name("_warm_kernels.py")
    parts = [subprocess.Popen([sys.executable, str(script), part],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for part in ("0", "1")]
    for part in parts:
        _, err = part.communicate()
        if part.returncode:  # the tests will say what is wrong; this only warms a cache
            sys.stderr.write(f"tests/_warm_kernels.py failed:\n{err.decode()[-2000:]}\n")


@pytest.fixture(autouse=True)
def _data_warnings_said_anew():
    """Each test starts as a fresh process: no data warning shown yet (a DataWarning is shown
    once per process, fastpath.utils._warn)."""
    forget_shown()


@pytest.fixture(autouse=True)
def _numba_cache_read_as_warm(monkeypatch):
    """The command line's and a first fit's "compiling the numba kernels" line depends on the
    state of numba's cache, which the tests before fill: read as warm, so that what a test
    sees does not depend on its order (tests/test_first_fit_note.py checks the cold case)."""
    import fastpath.pipeline._config as config

    monkeypatch.setattr(config, "kernels_cold", lambda: False)


@pytest.fixture
def credit_csv(tmp_path):
    """credit-a as a CSV file with its target column ``class`` last."""
    X, y = load_dataset("credit-a")
    path = tmp_path / "credit.csv"
    X.assign(**{"class": y}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def car():
    """car's attributes and its labels as an array."""
    X, y = load_dataset("car")
    return X, np.asarray(y)


@pytest.fixture
def fits_in_memory_and_streamed_alike(car):
    """``check(make)``: the classifier ``make()`` fitted on car in memory and streamed in chunks
    of 500 rows predicts the same, proper, positive probabilities and fits the training rows;
    returns the in-memory fit and its probabilities."""
    X, y = car
    frame = X.assign(target=y)

    def check(make):
        memory = make().fit(X, y)
        streamed = make().fit(
            lambda: (frame.iloc[i:i + 500] for i in range(0, len(frame), 500)), "target")
        proba = memory.predict_proba(X)
        np.testing.assert_array_equal(streamed.predict_proba(X), proba)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert (proba > 0).all()
        assert np.mean(memory.predict(X) == y) > 0.9
        return memory, proba

    return check
