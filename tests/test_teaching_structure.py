"""examples/structure.ipynb, the structure half of the course, executes and teaches what it says.

Like the teaching notebook (tests/test_teaching_notebook.py) it is edited as
examples/structure.py, stored executed (the site shows it) and checked here: paired with its
script, every figure titled and followed by "what to notice", every exercise with a hint and a
folded solution, and a fresh execution on a new kernel reproduces the stored outputs, in which
every hand computation (MI, CMI, Kruskal's tree, kDB's parents, the selective kDB's argmin, the
ensemble's mean) agrees with fastpath's function. About 20 s once fastpath's kernels are compiled.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "structure.ipynb"
SCRIPT = ROOT / "examples" / "structure.py"

nbformat = pytest.importorskip("nbformat", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")
nbclient = pytest.importorskip("nbclient", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")
pytest.importorskip("ipykernel", reason="the teach extra is not installed: "
                    "pip install -e '.[teach]'")

SHOW = re.compile(r'show\(fig, "(\w+)"\)')
FIGURES = ("information", "tan_kdb", "skdb_curve", "members")


def _sources(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _streams(nb) -> list[str]:
    return ["".join(o.get("text", "") for o in c.get("outputs", []) if o.output_type == "stream")
            for c in nb.cells if c.cell_type == "code"]


def test_notebook_is_paired_with_its_script():
    jupytext = pytest.importorskip("jupytext", reason="jupytext (teach extra) is not installed")
    assert _sources(jupytext.read(SCRIPT)) == _sources(nbformat.read(NOTEBOOK, as_version=4)), (
        "examples/structure.py and structure.ipynb differ: run "
        "`jupytext --sync examples/structure.py`")


def test_sections_figures_and_exercises():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    for heading in ("## 1. Mutual information by hand", "## 2. The tic-tac-toe data",
                    "## 3. Chow-Liu and TAN", "## 4. kDB", "## 5. Selective kDB",
                    "## 6. ESKDB", "## 7. Exercises"):
        assert heading in text, heading
    shown = []
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and SHOW.search(c.source):
            shown.append(SHOW.search(c.source).group(1))
            assert "set_title(" in c.source or "suptitle(" in c.source
            # the figure's remarks follow it, possibly after the cell that prints its numbers
            after = next(d for d in nb.cells[i + 1:] if d.cell_type == "markdown")
            assert after.source.startswith("**What to notice.**"), shown[-1]
    assert tuple(shown) == FIGURES
    exercises = text.split("## 7. Exercises")[1]
    n = len(re.findall(r"^\*\*\d+\. ", exercises, flags=re.M))
    assert n == 3
    assert exercises.count("*Hint:*") == n
    assert exercises.count('<details markdown="1"><summary>Solution</summary>') == n


def test_stored_notebook_is_executed():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code if "print(" in c.source or SHOW.search(c.source))
    assert sum("image/png" in o.get("data", {}) for c in code for o in c.outputs) == len(FIGURES)


# executes the notebook in a kernel (about 20 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_notebook_executes_end_to_end(monkeypatch, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    stored = _streams(nb)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TEACHING_FIGURES", str(tmp_path))
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel: pip install -e '.[teach]'")
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
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
    for name in FIGURES:
        for ext in ("svg", "pdf"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 1000, (name, ext)
    assert _streams(nb) == stored, "the stored outputs are stale: re-execute the notebook"
