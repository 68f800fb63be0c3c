"""What the class notebooks share (examples/teaching.py, structure.py, labs.py): how a figure
is shown.

:func:`show` lays a figure out and displays it; with the environment variable
``TEACHING_FIGURES`` set to a folder (before the kernel or the script starts), it also writes
the figure there as ``<name>.svg`` and ``<name>.pdf``, for slides (docs/teaching.md). The
notebooks import it from the folder they run in (``make student`` copies this module beside
the student edition's notebooks).
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt

from fastpath.utils import save_figure


def show(fig, name: str) -> None:
    """Display ``fig``; with ``TEACHING_FIGURES`` set, also save it as name.svg and name.pdf."""
    fig.tight_layout()
    folder = os.environ.get("TEACHING_FIGURES")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for ext in ("svg", "pdf"):
            save_figure(fig, Path(folder) / f"{name}.{ext}")
    plt.show()
