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

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "teaching.ipynb"
SCRIPT = ROOT / "examples" / "teaching.py"

nbformat = pytest.importorskip("nbformat", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")
nbclient = pytest.importorskip("nbclient", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")
pytest.importorskip("ipykernel", reason="the teach extra is not installed: "
                    "pip install -e '.[teach]'")


def _sources(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_notebook_is_paired_with_its_script():
    jupytext = pytest.importorskip("jupytext", reason="jupytext (teach extra) is not installed")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert _sources(jupytext.read(SCRIPT)) == _sources(nb), (
        "examples/teaching.py and teaching.ipynb differ: run "
        "`jupytext --sync examples/teaching.py`")


SHOW = re.compile(r'show\(fig, "(\w+)"\)')
#: the figures of the notebook, by the names its ``show(fig, name)`` saves them under
FIGURES = ("crd", "franchise", "crp_simulated", "stick_breaking", "pitman_yor", "shrinkage",
           "alpha_posterior", "alpha_draws", "traces", "rank_plot", "plate_diagram")


def _streams(nb) -> list[str]:
    return ["".join(o.get("text", "") for o in c.get("outputs", []) if o.output_type == "stream")
            for c in nb.cells if c.cell_type == "code"]


def test_notebook_sections_figures_and_exercises():
    """The class's path is all there; every figure is titled and followed by "what to notice";
    every exercise has a hint and a folded solution."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
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
                    "## 10. Exercises"):
        assert heading in text, heading
    cells = nb.cells
    shown = []
    for i, c in enumerate(cells):
        if c.cell_type == "code" and SHOW.search(c.source):
            shown.append(SHOW.search(c.source).group(1))
            assert "set_title(" in c.source or "suptitle(" in c.source, c.source[:80]
            assert cells[i + 1].cell_type == "markdown"
            assert cells[i + 1].source.startswith("**What to notice.**"), shown[-1]
    assert tuple(shown) == FIGURES
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
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code if "print(" in c.source or SHOW.search(c.source))
    images = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
    assert images == len(FIGURES)


# executes the notebook in a kernel (about 50 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_notebook_executes_end_to_end(monkeypatch, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    stored = _streams(nb)
    # jupyter_client starts the native "python3" kernel with this interpreter; it imports this
    # checkout's packages
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TEACHING_FIGURES", str(tmp_path))  # the figures for slides
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel: pip install -e '.[teach]'")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.output_type == "error"]
    assert not errors
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []) if o.output_type == "stream")
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
    # no warning of any library in a student's output (TqdmWarning, Numba, Matplotlib ...)
    stderr = [o.text for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, stderr
    for name in FIGURES:
        for ext in ("svg", "pdf"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 1000, (name, ext)
    # the stored outputs (the site's page) are those of the current notebook and code
    assert _streams(nb) == stored, "the stored outputs are stale: run `make notebook`"
