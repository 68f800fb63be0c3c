"""fastpath.utils._progress: the stage lines and the progress bar of a fit (issue 46, point 9:
lines of threads ran together; the bar jumped by each tree's maximum)."""

from __future__ import annotations

import io
import sys
import threading

from fastpath.utils import _progress


class _Writes(io.StringIO):
    """Standard error that keeps every write call apart."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return super().write(text)


def test_stage_lines_of_threads_never_run_together(monkeypatch):
    stream = _Writes()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(_progress, "_first_fit", [False])
    log = _progress.FitLog(1)
    barrier = threading.Barrier(8)

    def say(i: int) -> None:
        barrier.wait()
        for j in range(50):
            log.stage(f"member {i}/{j}")

    threads = [threading.Thread(target=say, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # each line is one write, whole: no two lines can interleave
    assert all(call.endswith("\n") and call.count("\n") == 1 for call in stream.calls)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 400 and all(line.startswith("[hdpbn") for line in lines)


def test_the_bar_follows_a_total_that_shrinks(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    bar = _progress.Progress("sampling", enabled=True, unit="it")
    bar(0, 100)
    bar(10, 60)
    assert bar._bar is not None and bar._bar.total == 60 and bar._bar.n == 10
    bar(60, 60)
    assert bar._bar is None  # closed at its total
    assert "60/60" in stream.getvalue()


def test_a_verbose_fit_counts_its_trees(monkeypatch, capsys):
    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    X, y = load_dataset("car")
    clf = BayesNetClassifier("nb", random_state=0, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    n_trees = X.shape[1] + 1
    assert f"{n_trees}/{n_trees}" in err and "tree/s" in err
    assert f"/{n_trees * clf.hdp_options().max_iter}" not in err
