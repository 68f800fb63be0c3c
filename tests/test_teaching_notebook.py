"""examples/teaching.ipynb executes end to end, and is the same notebook as examples/teaching.py.

The notebook is the class material of docs/theory.md: a student runs it cell by cell, so every
cell must run, in order, on a fresh kernel. Executed with nbclient (the ``teach`` extra, part of
the ``test`` extra); skipped with the reason when the extra is not installed. About 40 s (more
when fastpath's numba kernels are compiled for the first time).

The notebook is stored *executed*: the site shows it as a page with its outputs and figures
(mkdocs.yml, mkdocs-jupyter). So the stored outputs are checked against a fresh execution:
after a change of the notebook or of the code it runs, ``make notebook`` re-executes it.
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

#: the figures of the notebook, by the names its ``show(fig, name)`` saves them under
FIGURES = ("crd", "franchise", "crp_simulated", "stick_breaking", "pitman_yor", "shrinkage",
           "alpha_posterior", "alpha_draws", "traces", "rank_plot", "plate_diagram",
           "explain_structure", "explain_waterfall", "explain_reliability")


def test_notebook_is_paired_with_its_script():
    assert_paired("teaching")


def test_notebook_sections_figures_and_exercises():
    """The class's path is all there; every figure is titled and followed by "what to notice";
    every exercise has a hint and a folded solution."""
    nb = read("teaching")
    text = "\n".join(c.source for c in nb.cells)
    for heading in ("## 1. The worked example", "## 2. Tables", "### The restaurant and the "
                    "franchise", "### A simulated restaurant against eq. (8)",
                    "### The Dirichlet process behind the restaurant",
                    "**The Pitman-Yor process and Kneser-Ney.**",
                    "## 3. One step by hand", "**Eq. (7) for $n = 3$.**",
                    "**One table-count update**", "**One concentration update**",
                    "**Eq. (14) by hand.**", "### The Gibbs draws against the exact posterior",
                    "### Why dataset 2's exact value (0.794) is not the paper's 0.86",
                    "### Several chains: R-hat, effective sample size and a rank plot",
                    "## 7. The model as a picture: the plate diagram",
                    "## 8. Past depth one: a kDB-1 table", "### Two back-offs",
                    "### Level against same-parent tying", "## 9. m-estimates against HDP",
                    "### What one prediction is made of", "## 10. Exercises"):
        assert heading in text, heading
    assert_figures_explained(nb, FIGURES)
    exercises = text.split("## 10. Exercises")[1]
    n = len([line for line in exercises.splitlines() if line.startswith("**") and ". " in line
             and line[2].isdigit()])
    assert n == 6
    assert exercises.count("*Hint:*") == n
    # markdown="1": the site renders the solution's Markdown (md_in_html), as Jupyter does
    assert exercises.count('<details markdown="1"><summary>Solution</summary>') == n
    assert "window=10" in exercises  # exercise 5 runs the paper's window without editing code


def test_stored_notebook_is_executed():
    """The site's page shows the stored outputs: every code cell has run, every figure is there."""
    assert_stored_executed(read("teaching"), FIGURES)


def test_notebook_executes_end_to_end(monkeypatch, tmp_path):
    """On a fresh kernel (about 40 s once the kernels are compiled): no error, no warning,
    every figure written for slides, the stored outputs reproduced, and what they say."""
    text = execute("teaching", monkeypatch, tmp_path)
    # the worked example's exact posterior (docs/model.md, section 2) and the cap sensitivity
    assert "0.8566" in text
    assert "[0.8947 0.8892 0.876 ]" in text
    # the steps by hand agree with the sampler's functions
    assert "teaching.table_count_conditional gives the same weights: True" in text
    assert "teaching.estimate: [0.85 0.15]" in text
    assert "Gamma(2, 1), exact root (the model as stated):  0.7942" in text
    # four chains through ArviZ: R-hat, bulk and tail ESS beside fastpath's batch-means MCSE;
    # the long run's R-hat is 1.00, the 30-iteration run's concentration is flagged
    runs = re.findall(r"4 chains of (\d+) iterations.*?\n(.*?)\n   fastpath's batch-means MCSE "
                      r"of P\(X1=0 \| Y=0\): (0\.\d+)", text, flags=re.S)
    assert [r[0] for r in runs] == ["2000", "30"]
    for n_iter, table, _ in runs:
        assert "ess_bulk" in table and "ess_tail" in table and "r_hat" in table
        rhat = float(re.search(r"concentration\[depth1\]\s+(?:\S+\s+){4}(\d\.\d+)",
                               table).group(1))
        assert (rhat <= 1.01) if n_iter == "2000" else (rhat > 1.05), (n_iter, rhat)
    # section 9: the contributions sum to the log-odds; one row in ten has a wide interval
    assert "prior + contributions = the model's log-odds (to 1e-12): True" in text
    widths = re.search(r"median width (0\.\d+), widest tenth above (0\.\d+)", text)
    assert widths and float(widths.group(1)) < 0.3 < float(widths.group(2))
