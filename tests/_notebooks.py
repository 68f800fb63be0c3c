"""What the class notebooks' tests share (tests/test_teaching_notebook.py, _structure.py,
_labs.py): a notebook read as stored, its pairing with its script, its figures, and its
execution on a fresh kernel compared with the stored outputs.

Each notebook is edited as ``examples/<name>.py`` (jupytext's percent format) and stored
executed as ``examples/<name>.ipynb``, which the site shows; ``make notebook`` re-executes it.
nbformat, nbclient and ipykernel are the ``teach`` extra (part of the ``test`` extra): without
them, importing this module skips the test module that imports it, with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
_EXTRA = "the teach extra is not installed: pip install -e '.[teach]'"
nbformat = pytest.importorskip("nbformat", reason=_EXTRA)
nbclient = pytest.importorskip("nbclient", reason=_EXTRA)
pytest.importorskip("ipykernel", reason=_EXTRA)

#: a figure shown (and saved for slides) by a cell: ``show(fig, "<name>")``
SHOW = re.compile(r'show\(fig, "(\w+)"\)')


def read(name: str) -> Any:
    """examples/<name>.ipynb as stored."""
    return nbformat.read(ROOT / "examples" / f"{name}.ipynb", as_version=4)


def _sources(nb: Any) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def assert_paired(name: str) -> None:
    """examples/<name>.py and <name>.ipynb hold the same cells."""
    jupytext = pytest.importorskip("jupytext", reason="jupytext (teach extra) is not installed")
    assert _sources(jupytext.read(ROOT / "examples" / f"{name}.py")) == _sources(read(name)), (
        f"examples/{name}.py and {name}.ipynb differ: run `jupytext --sync examples/{name}.py`")


def shown(nb: Any) -> list[tuple[int, str]]:
    """(cell index, figure name) of every cell that shows a figure, in order."""
    return [(i, SHOW.search(c.source).group(1)) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and SHOW.search(c.source)]


def assert_figures_explained(nb: Any, figures: tuple[str, ...]) -> None:
    """The notebook shows ``figures`` in this order, each from a cell that titles it and is
    followed (possibly after a cell printing its numbers) by "**What to notice.**"."""
    for i, name in shown(nb):
        source = nb.cells[i].source
        assert "set_title(" in source or "suptitle(" in source, name
        after = next(c for c in nb.cells[i + 1:] if c.cell_type == "markdown")
        assert after.source.startswith("**What to notice.**"), name
    assert tuple(name for _, name in shown(nb)) == figures


def assert_stored_executed(nb: Any, figures: tuple[str, ...]) -> None:
    """Every code cell that prints or shows has its stored output; one image per figure."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code if "print(" in c.source or SHOW.search(c.source)), (
        "not stored executed: run `make notebook`")
    assert sum("image/png" in o.get("data", {}) for c in code for o in c.outputs) == len(figures)


def streams(nb: Any, normalise: Callable[[str], str] = lambda text: text) -> list[str]:
    """Each code cell's printed text (``normalise`` applied: what changes from run to run
    taken out)."""
    return [normalise("".join(o.get("text", "") for o in c.get("outputs", [])
                              if o.output_type == "stream"))
            for c in nb.cells if c.cell_type == "code"]


def execute(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *,
            timeout: int = 300, normalise: Callable[[str], str] = lambda text: text) -> str:
    """Execute examples/<name>.ipynb on a fresh python3 kernel (this checkout's packages, the
    Agg backend, the figures for slides written into ``tmp_path``), check that no cell
    failed or wrote to stderr (no warning of any library in a student's output) and that the
    outputs are the stored ones (``normalise``\\d), and return the printed text."""
    nb = read(name)
    stored = streams(nb, normalise)
    # jupyter_client starts the native "python3" kernel with this interpreter; it imports this
    # checkout's packages, and the notebook's own modules from examples/, where it runs
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TEACHING_FIGURES", str(tmp_path))
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel: pip install -e '.[teach]'")
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "examples")}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    for figure in (n for _, n in shown(nb)):
        for ext in ("svg", "pdf"):
            assert (tmp_path / f"{figure}.{ext}").stat().st_size > 1000, (figure, ext)
    assert streams(nb, normalise) == stored, (
        f"the stored outputs of examples/{name}.ipynb are stale: run "
        f"`make notebook NOTEBOOKS={name}`")
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
