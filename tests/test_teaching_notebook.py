"""examples/teaching.ipynb executes end to end, and is the same notebook as examples/teaching.py.

The notebook is the class material of docs/theory.md: a student runs it cell by cell, so every
cell must run, in order, on a fresh kernel. Executed with nbclient (the ``teach`` extra, part of
the ``test`` extra); skipped with the reason when the extra is not installed. About 30 s.
"""

from __future__ import annotations

import os
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


def test_notebook_executes_end_to_end(monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # jupyter_client starts the native "python3" kernel with this interpreter; it imports this
    # checkout's packages
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
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
