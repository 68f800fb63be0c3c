"""examples/labs.ipynb, the course's two labs, executes and measures what it says.

Like the other class notebooks it is edited as examples/labs.py, stored executed (the site shows
it) and checked here: paired with its script, its figure titled and followed by "what to
notice", each lab ending with its question, and a fresh execution on a new kernel reproduces
the stored outputs (the measured times and memory aside, which change from run to run): Lab A's
three models on two datasets, Lab B's peak memory (tracemalloc), which for the streamed fit does
not grow with the file while the whole table's does, and the same model from the file as from
the table.
"""

from __future__ import annotations

import re

from _notebooks import assert_figures_explained, assert_paired, assert_stored_executed, execute
from _notebooks import read as read_notebook

#: what changes from run to run: fit times (Lab A's last column), Lab B's memory and seconds
MEASURED = re.compile(r"(?m)^(kr-vs-kp|car)( .*?)\s+[\d.]+$|^ *[\d,]+ +[\d.]+ +(whole|streamed)"
                      r" +[\d.]+ +[\d.]+$")


def _unmeasured(text: str) -> str:
    return MEASURED.sub(lambda m: m.group(1) + m.group(2) if m.group(1) else m.group(3), text)


def test_notebook_is_paired_with_its_script():
    assert_paired("labs")


def test_labs_figure_and_questions():
    nb = read_notebook("labs")
    text = "\n".join(c.source for c in nb.cells)
    for heading in ("## Lab A. The ensemble against a random forest and a booster",
                    "## Lab B. A table that does not fit in memory", "**Question A.**",
                    "**Question B.**"):
        assert heading in text, heading
    assert_figures_explained(nb, ("reliability",))


def test_stored_notebook_is_executed():
    assert_stored_executed(read_notebook("labs"), ("reliability",))


def test_notebook_executes_end_to_end(monkeypatch, tmp_path):
    """On a fresh kernel: no error, no warning, the figure written for slides, the stored
    outputs reproduced (the measured times and memory aside), and what they say."""
    text = execute("labs", monkeypatch, tmp_path, normalise=_unmeasured)
    rows = re.findall(r"^(kr-vs-kp|car) +(.+?) +(0\.\d{4}|1\.0000) +(\d+\.\d{4}) +[\d.]+$", text,
                      flags=re.M)
    assert len(rows) == 6
    # Lab B: four times the rows, the whole table's peak more than doubles, the streamed fit's
    # stays within 20 % (and 1 MB), below the whole table's
    peaks = {(int(r.replace(",", "")), how): float(p) for r, how, p in
             re.findall(r"^ *([\d,]+) +[\d.]+ +(whole|streamed) +([\d.]+)", text, flags=re.M)}
    small, large = sorted({rows for rows, _ in peaks})
    assert len(peaks) == 4 and large == 4 * small
    assert peaks[large, "whole"] > 2 * peaks[small, "whole"]
    assert peaks[large, "streamed"] < 1.2 * peaks[small, "streamed"] + 1
    assert peaks[large, "streamed"] < peaks[large, "whole"]
    assert "the same probabilities from the whole table and from the chunks: True" in text
