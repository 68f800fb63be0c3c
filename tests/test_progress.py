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
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # a terminal
    clf = BayesNetClassifier("nb", random_state=0, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    n_trees = X.shape[1] + 1
    assert f"{n_trees}/{n_trees}" in err and "tree/s" in err
    assert f"/{n_trees * clf.hdp_options().max_iter}" not in err


class _File(io.StringIO):
    """Standard error sent to a file: not a terminal."""

    def isatty(self) -> bool:
        return False


def test_a_verbose_fit_to_a_file_writes_one_line_per_stage(monkeypatch):
    # issue 55, point 4: tqdm's carriage-return updates made one 26,851-character line
    from fastpath import BayesNetClassifier, ESKDBClassifier
    from fastpath.io import load_dataset

    X, y = load_dataset("car")
    for model in (BayesNetClassifier("nb", random_state=0, verbose=1),
                  ESKDBClassifier(3, random_state=0, verbose=1)):
        stream = _File()
        monkeypatch.setattr(sys, "stderr", stream)
        model.fit(X, y)
        text = stream.getvalue()
        assert "\r" not in text and "\x1b" not in text
        lines = text.splitlines()
        assert all(line.startswith("[hdpbn") and len(line) < 300 for line in lines), lines
        assert sum(line.endswith(" trees done") for line in lines) == 1
        assert any(line.endswith("] fitted") for line in lines)


def test_the_bar_is_one_line_when_done_off_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _File())
    said = []
    bar = _progress.Progress("sampling", enabled=True, unit="tree", line=said.append)
    for done in range(11):
        bar(done, 10)
    assert said == ["sampling: 10 of 10 trees done"] and sys.stderr.getvalue() == ""
