"""examples/structure.ipynb, the structure half of the course, executes and teaches what it says.

Like the teaching notebook (tests/test_teaching_notebook.py) it is edited as
examples/structure.py, stored executed (the site shows it) and checked here: paired with its
script, every figure titled and followed by "what to notice", every exercise with a hint and a
folded solution, and a fresh execution on a new kernel reproduces the stored outputs, in which
every hand computation (MI, CMI, Kruskal's tree, kDB's parents, the selective kDB's argmin, the
ensemble's mean) agrees with fastpath's function. About 20 s once fastpath's kernels are compiled.
"""

from __future__ import annotations

import re

from _notebooks import (
    assert_figures_explained,
    assert_paired,
    assert_stored_executed,
    execute,
    read,
)

FIGURES = ("information", "tan_kdb", "skdb_curve", "members")


def test_notebook_is_paired_with_its_script():
    assert_paired("structure")


def test_sections_figures_and_exercises():
    nb = read("structure")
    text = "\n".join(c.source for c in nb.cells)
    for heading in ("## 1. Mutual information by hand", "## 2. The tic-tac-toe data",
                    "## 3. Chow-Liu and TAN", "## 4. kDB", "## 5. Selective kDB",
                    "## 6. ESKDB", "## 7. Exercises"):
        assert heading in text, heading
    assert_figures_explained(nb, FIGURES)
    exercises = text.split("## 7. Exercises")[1]
    n = len(re.findall(r"^\*\*\d+\. ", exercises, flags=re.M))
    assert n == 3
    assert exercises.count("*Hint:*") == n
    assert exercises.count('<details markdown="1"><summary>Solution</summary>') == n


def test_stored_notebook_is_executed():
    assert_stored_executed(read("structure"), FIGURES)


def test_notebook_executes_end_to_end(monkeypatch, tmp_path):
    """On a fresh kernel (about 20 s once the kernels are compiled): no error, no warning,
    every figure written for slides, the stored outputs reproduced, and what they say."""
    text = execute("structure", monkeypatch, tmp_path)
    # every hand computation equals the library's, digit for digit as printed
    pairs = re.findall(r"by hand (\d\.\d{4}), fastpath (\d\.\d{4})", text)
    assert len(pairs) == 6 and all(a == b for a, b in pairs)
    assert "fastpath.structure.tan gives the same parents: True" in text
    assert "fastpath.structure.kdb(k=2) gives the same parents: True" in text
    argmin = re.search(r"the argmin of the curves: (\(\d, \d\))  select_skdb: (\(\d, \d\))", text)
    assert argmin and argmin.group(1) == argmin.group(2)
    assert "predict_proba is the members' mean: True" in text
    # the ambiguity decomposition: mean member - ambiguity = the ensemble's Brier score
    brier = re.search(r"= (\d\.\d{4}), the ensemble's (\d\.\d{4})", text)
    assert brier and brier.group(1) == brier.group(2)
