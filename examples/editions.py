"""The student edition of the class notebooks and the slide deck, both built offline.

    python examples/editions.py student [--out student]
    python examples/editions.py slides [--out build/slides/hdpbn-slides.pdf]

(``make student`` and ``make slides`` run these.)

**student** writes, for every class notebook (:data:`NOTEBOOKS`), a copy without its solutions
and without outputs, so that a student runs every cell (the labs too, which have questions but
no folded answers): each ``<details markdown="1">
<summary>Solution</summary> ... </details>`` block of a Markdown cell (the folded solutions of
the exercises) is removed, and nothing else; the problem set (``docs/problems.md``) goes with
them, and so do the modules of ``examples/`` that the notebooks import (``classroom.py``, which
shows their figures, and ``explain_figures.py``), so that the edition runs from its own folder.
Its marking scheme (``teaching/marking_scheme.md``) does not. The script refuses to write an
edition in which the word "Solution" is left.

**slides** writes one PDF, 16:9, from what is stored in the repository: a title page with the
course's learning objectives and prerequisites (``docs/teaching.md``), then, for each figure of
each executed notebook, a page with the section it belongs to, the figure as the notebook
stored it, and the first sentences of its "What to notice" remarks. Matplotlib draws every
page; nothing is fetched, so it builds without a network (``tests/test_teaching_editions.py``
builds it with sockets disabled).

Both write their files atomically (:mod:`fastpath.utils._files`).
"""

from __future__ import annotations

import argparse
import base64
import io
import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the class notebooks, stored executed (examples/<name>.ipynb, paired with <name>.py)
NOTEBOOKS = ("teaching", "structure", "labs")
#: those whose exercises have folded solutions (the labs ask questions and fold no answer)
SOLVED = ("teaching", "structure")
PROBLEMS = ROOT / "docs" / "problems.md"
TEACHING_PAGE = ROOT / "docs" / "teaching.md"
#: an import of a module, in a notebook's code (those of examples/ travel with the notebooks)
IMPORT = re.compile(r"^from (\w+) import|^import (\w+)$", flags=re.M)
SOLUTION = re.compile(r'\n?<details markdown="1"><summary>Solution</summary>.*?</details>\n?',
                      flags=re.S)


def strip_solutions(nb) -> int:
    """Remove every folded solution from the notebook's Markdown cells and every output from its
    code cells, in place; returns the number of solutions removed."""
    removed = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source, n = SOLUTION.subn("\n", cell.source)
            removed += n
        elif cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    return removed


def student_edition(out: Path, root: Path = ROOT) -> list[Path]:
    """Write the student edition into ``out``; returns the files written."""
    import nbformat

    from fastpath.utils._files import write_text

    out.mkdir(parents=True, exist_ok=True)
    written = []
    modules: set[str] = set()
    for name in NOTEBOOKS:
        nb = nbformat.read(root / "examples" / f"{name}.ipynb", as_version=4)
        modules.update(a or b for c in nb.cells if c.cell_type == "code"
                       for a, b in IMPORT.findall(c.source))
        if strip_solutions(nb) == 0 and name in SOLVED:
            raise ValueError(f"examples/{name}.ipynb has no folded solution to remove")
        text = nbformat.writes(nb)
        if "Solution" in text:
            raise ValueError(f"examples/{name}.ipynb: 'Solution' is left in the student edition")
        write_text(out / f"{name}.ipynb", text)
        written.append(out / f"{name}.ipynb")
    for module in sorted(m for m in modules if (root / "examples" / f"{m}.py").is_file()):
        write_text(out / f"{module}.py", (root / "examples" / f"{module}.py").read_text())
        written.append(out / f"{module}.py")
    write_text(out / "problems.md", (root / "docs" / "problems.md").read_text())
    written.append(out / "problems.md")
    return written


def _section_list(page: str, heading: str) -> list[str]:
    """The bullet items of the section ``## heading`` of a Markdown page, one line each."""
    body = page.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    items = re.split(r"\n- ", "\n" + body.strip())[1:]
    return [" ".join(item.split()) for item in items]


def _plain(markdown: str) -> str:
    """Markdown and LaTeX markup reduced to plain text for a slide."""
    text = markdown.replace("^*", "\N{ASTERISK OPERATOR}")  # n^*, k^* of selective kDB
    text = re.sub(r"\*\*|\*|`", "", text)
    text = re.sub(r"\$([^$]*)\$", r"\1", text)
    text = re.sub(r"\\(mathrm|hat|operatorname)\{([^}]*)\}", r"\2", text)
    text = text.replace("\\alpha", "α").replace("\\phi", "φ").replace("\\theta", "θ")
    text = text.replace("\\le", "≤").replace("\\approx", "≈").replace("\\", "")
    return " ".join(text.split())


def _first_sentences(text: str, n: int = 3) -> str:
    sentences = re.split(r"(?<=[.:])\s+(?=[A-Z])", text)
    return " ".join(sentences[:n])


def slide_pages(root: Path = ROOT) -> list[dict]:
    """The deck's pages after the title: one per stored figure of each notebook, with its
    section heading and the first sentences of the "What to notice" that follows it."""
    import nbformat

    pages = []
    for name in NOTEBOOKS:
        nb = nbformat.read(root / "examples" / f"{name}.ipynb", as_version=4)
        section = name
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                headings = re.findall(r"^#{1,3} (.+)$", cell.source, flags=re.M)
                if headings:
                    section = headings[-1]
                continue
            images = [o.data["image/png"] for o in cell.get("outputs", [])
                      if "image/png" in o.get("data", {})]
            if not images:
                continue
            notice = next((c.source for c in nb.cells[i + 1:] if c.cell_type == "markdown"
                           and c.source.startswith("**What to notice.**")), "")
            notice = notice.split("\n\n")[0].removeprefix("**What to notice.**")
            pages.append({"notebook": name, "section": _plain(section),
                          "png": base64.b64decode(images[0]),
                          "notice": _first_sentences(_plain(notice))})
    return pages


def slides(out: Path, root: Path = ROOT) -> int:
    """Write the PDF deck to ``out``; returns its number of pages."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    from fastpath.utils._files import atomic_write

    page = (root / "docs" / "teaching.md").read_text()
    objectives = _section_list(page, "Learning objectives")
    prerequisites = _section_list(page, "Prerequisites")
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with atomic_write(out, "wb") as fh, PdfPages(fh) as pdf:
        fig = plt.figure(figsize=(13.33, 7.5))
        fig.text(0.05, 0.92, "Hierarchical Dirichlet estimates for Bayesian network classifiers",
                 fontsize=22, weight="bold")
        fig.text(0.05, 0.87, "Petitjean, Buntine, Webb, Zaidi, Machine Learning 107 (2018); "
                 "the hdpbn class notebooks", fontsize=13, color="0.3")
        y = 0.79
        for title, items in (("Learning objectives", objectives),
                             ("Prerequisites", prerequisites)):
            fig.text(0.05, y, title, fontsize=15, weight="bold")
            y -= 0.045
            for item in items:
                wrapped = textwrap.fill(_plain(item), 125)
                fig.text(0.07, y, "• " + wrapped, fontsize=10.5, va="top")
                y -= 0.032 * (wrapped.count("\n") + 1) + 0.006
            y -= 0.035
        pdf.savefig(fig)
        plt.close(fig)
        n += 1
        for p in slide_pages(root):
            fig = plt.figure(figsize=(13.33, 7.5))
            fig.text(0.04, 0.95, p["section"], fontsize=17, weight="bold", va="top")
            fig.text(0.96, 0.95, f"examples/{p['notebook']}.ipynb", fontsize=9, color="0.4",
                     ha="right", va="top")
            image = mpimg.imread(io.BytesIO(p["png"]), format="png")
            ax = fig.add_axes((0.04, 0.2, 0.92, 0.68))
            ax.imshow(image)
            ax.axis("off")
            fig.text(0.05, 0.17, textwrap.fill(p["notice"], 125), fontsize=12, va="top")
            pdf.savefig(fig)
            plt.close(fig)
            n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("edition", choices=("student", "slides"))
    parser.add_argument("--out", type=Path, help="folder (student) or PDF file (slides)")
    args = parser.parse_args(argv)
    if args.edition == "student":
        written = student_edition(args.out or Path("student"))
        print("wrote", ", ".join(str(p) for p in written))
    else:
        out = args.out or Path("build/slides/hdpbn-slides.pdf")
        print(f"wrote {out}: {slides(out)} pages")


if __name__ == "__main__":
    main()
