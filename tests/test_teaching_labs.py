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

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "labs.ipynb"
SCRIPT = ROOT / "examples" / "labs.py"

nbformat = pytest.importorskip("nbformat", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")
nbclient = pytest.importorskip("nbclient", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")
pytest.importorskip("ipykernel", reason="the teach extra is not installed: "
                    "pip install -e '.[teach]'")

SHOW = re.compile(r'show\(fig, "(\w+)"\)')
#: what changes from run to run: fit times (Lab A's last column), Lab B's memory and seconds
MEASURED = re.compile(r"(?m)^(kr-vs-kp|car)( .*?)\s+[\d.]+$|^ *[\d,]+ +[\d.]+ +(whole|streamed)"
                      r" +[\d.]+ +[\d.]+$")


def _sources(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _streams(nb) -> list[str]:
    text = ["".join(o.get("text", "") for o in c.get("outputs", []) if o.output_type == "stream")
            for c in nb.cells if c.cell_type == "code"]
    return [MEASURED.sub(lambda m: m.group(1) + m.group(2) if m.group(1) else m.group(3), t)
            for t in text]


def test_notebook_is_paired_with_its_script():
    jupytext = pytest.importorskip("jupytext", reason="jupytext (teach extra) is not installed")
    assert _sources(jupytext.read(SCRIPT)) == _sources(nbformat.read(NOTEBOOK, as_version=4)), (
        "examples/labs.py and labs.ipynb differ: run `jupytext --sync examples/labs.py`")


def test_labs_figure_and_questions():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    for heading in ("## Lab A. The ensemble against a random forest and a booster",
                    "## Lab B. A table that does not fit in memory", "**Question A.**",
                    "**Question B.**"):
        assert heading in text, heading
    shown = [(i, SHOW.search(c.source).group(1)) for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and SHOW.search(c.source)]
    assert [name for _, name in shown] == ["reliability"]
    i = shown[0][0]
    assert "suptitle(" in nb.cells[i].source
    assert nb.cells[i + 1].source.startswith("**What to notice.**")


@pytest.mark.study  # about two minutes on one core (Lab B's fits under tracemalloc): make study
def test_notebook_executes_end_to_end(monkeypatch, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    stored = _streams(nb)
    assert all(c.get("outputs") for c in nb.cells if c.cell_type == "code"
               and ("print(" in c.source or SHOW.search(c.source))), "not stored executed"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TEACHING_FIGURES", str(tmp_path))
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel: pip install -e '.[teach]'")
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    rows = re.findall(r"^(kr-vs-kp|car) +(.+?) +(0\.\d{4}|1\.0000) +(\d+\.\d{4}) +[\d.]+$", text,
                      flags=re.M)
    assert len(rows) == 6
    # Lab B: the whole table's peak grows with the rows, the streamed fit's does not (10 %)
    peaks = {(int(r.replace(",", "")), how): float(p) for r, how, p in
             re.findall(r"^ *([\d,]+) +[\d.]+ +(whole|streamed) +([\d.]+)", text, flags=re.M)}
    assert len(peaks) == 4
    assert peaks[100_000, "whole"] > 2 * peaks[25_000, "whole"]
    assert peaks[100_000, "streamed"] < 1.2 * peaks[25_000, "streamed"] + 1
    assert peaks[100_000, "streamed"] < peaks[100_000, "whole"]
    assert "the same probabilities from the whole table and from the chunks: True" in text
    for ext in ("svg", "pdf"):
        assert (tmp_path / f"reliability.{ext}").stat().st_size > 1000
    assert _streams(nb) == stored, "the stored outputs are stale: re-execute the notebook"
