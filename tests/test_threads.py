"""fastpath.utils._threads: one thread knob for numba's kernels and the library's pools.

* fits and predictions of the estimators with ``n_jobs=1`` (selective kDB, HDP estimates, an
  ensemble) start no thread at all (counted in ``/proc/self/task`` in a fresh process), and
  with ``n_jobs=2`` they do (the check that the measurement can fail);
* the results do not depend on the count;
* the Dask partition runner runs every statistic, nested ones included, on one thread;
* ``limit_threads`` nests, restores, is per thread, and checks its argument; a
  :class:`ThreadedKernel` runs its serial compilation on one thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pytest

import fastpath
from fastpath.utils import limit_threads
from fastpath.utils._threads import ThreadedKernel, numba_threads

ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import json, os, sys, threading, time, warnings
import fastpath

def fit_predict(n):
    # every stage under the estimators' one knob: numba's kernels, the HDP sampler's pool, the
    # ensemble's members; nothing else limits the threads in this process
    X, y = fastpath.load_dataset("car")
    warnings.simplefilter("ignore")  # 40 iterations certify nothing
    short = fastpath.HDPOptions.preset("adaptive", n_iter=40)
    for clf in (fastpath.BayesNetClassifier("skdb", 2, "m", n_jobs=n),
                fastpath.BayesNetClassifier("kdb", 2, sampler=short, random_state=0, n_jobs=n),
                fastpath.ESKDBClassifier(3, 2, "m", random_state=0, n_jobs=n)):
        clf.fit(X, y).predict_proba(X)

n = int(sys.argv[1])
fastpath.BayesNetClassifier, fastpath.load_dataset  # imported first: imports start threads
before = len(os.listdir("/proc/self/task"))
fit_predict(n)  # compiles (or loads) every kernel; a thread it starts is counted below
peak, stop = [0], threading.Event()
def sample():
    while not stop.is_set():
        peak[0] = max(peak[0], len(os.listdir("/proc/self/task")))
        time.sleep(0.001)
sampler = threading.Thread(target=sample)
sampler.start()
for _ in range(2):
    fit_predict(n)
stop.set()
sampler.join()
print(json.dumps({"before": before, "peak": peak[0]}))
"""


def _thread_peak(n: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE, str(n)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# about 19 s: outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/task")
def test_a_fit_with_n_jobs_1_starts_no_thread():
    one = _thread_peak(1)
    assert one["peak"] == one["before"] + 1  # the sampling thread only
    if (os.cpu_count() or 1) >= 2:
        two = _thread_peak(2)
        assert two["peak"] > two["before"] + 1  # numba's pool: the measurement can fail


def test_results_do_not_depend_on_the_thread_count():
    X, y = fastpath.load_dataset("kr-vs-kp")
    out = []
    for n in (1, 2):
        with limit_threads(n):
            clf = fastpath.BayesNetClassifier(structure="skdb", k=2, estimation="m").fit(X, y)
            out.append(clf.predict_proba(X))
    assert np.array_equal(out[0], out[1])


class _Recorder:
    """A pass statistic recording the numba thread count it is updated under."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def fresh(self) -> _Recorder:
        return _Recorder()

    def update(self, codes, y, start) -> _Recorder:
        self.seen.append(numba_threads())
        return self

    def merge(self, other) -> _Recorder:
        self.seen += other.seen
        return self


class _Coder:
    def encode(self, frame, where):
        return frame.to_numpy(np.int64), np.zeros(len(frame), np.int64)


def test_the_dask_partition_runner_uses_one_thread_for_nested_statistics():
    from fastpath.scale._dask import _run_partition
    from fastpath.scale._errors import Where
    from fastpath.scale._stats import MemberStats, StatGroup

    group = StatGroup([_Recorder(), _Recorder()])
    proto = MemberStats([group])
    frame = pd.DataFrame({"a": np.arange(10)})
    before = numba_threads()
    with limit_threads(2):
        state = _run_partition(frame, Where("partition", 0, 0, len(frame)), _MemberCoder(),
                               proto, 4)
        assert numba_threads() == min(2, before)  # restored
    seen = [n for item in state.items[0].items for n in item.seen]
    assert seen == [1] * 6  # 3 chunks x 2 statistics


class _MemberCoder(_Coder):
    def encode(self, frame, where):
        codes, y = super().encode(frame, where)
        return [codes], y


def test_limit_threads_nests_restores_and_is_per_thread():
    outer = numba_threads()
    with limit_threads(1) as n:
        assert n == 1 and numba_threads() == 1
        seen = []
        worker = threading.Thread(target=lambda: seen.append(numba_threads()))
        worker.start()
        worker.join()
        assert seen[0] == outer  # a new thread does not inherit the count
        with limit_threads(2):
            assert numba_threads() == min(2, outer)
        assert numba_threads() == 1
    assert numba_threads() == outer
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError), limit_threads(bad):
            pass


def _count(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def test_a_threaded_kernel_runs_its_serial_twin_on_one_thread(monkeypatch):
    kernel = ThreadedKernel(_count)
    assert kernel.serial.py_func.__qualname__ == "_count_serial"  # its own cache files
    calls = []
    monkeypatch.setattr(kernel, "serial", lambda a: calls.append("serial") or 0.0)
    monkeypatch.setattr(kernel, "parallel", lambda a: calls.append("parallel") or 0.0)
    with limit_threads(1):
        kernel(np.ones(3))
    with limit_threads(2):
        kernel(np.ones(3))
    two = min(2, numba.config.NUMBA_NUM_THREADS)
    assert calls == ["serial", "parallel" if two > 1 else "serial"]
