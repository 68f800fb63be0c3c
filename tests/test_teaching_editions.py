"""The class's editions (examples/editions.py), its problem set and its marking scheme.

* ``make student``: the notebooks lose every folded solution and every output, and nothing else;
  no line of any solution is left in the edition;
* ``make slides``: the PDF deck is built with every socket refused (no network), one page per
  stored figure after the title page;
* the problem set (docs/problems.md) and its marking scheme (teaching/marking_scheme.md) match
  question by question, marks included, and the scheme's numerical answers are recomputed here
  with the library and with independent arithmetic.
"""

from __future__ import annotations

import importlib.util
import math
import re
import socket
from pathlib import Path

import numpy as np
import pytest
from scipy.special import digamma

ROOT = Path(__file__).resolve().parents[1]
nbformat = pytest.importorskip("nbformat", reason="the teach extra is not installed: "
                               "pip install -e '.[teach]'")


def _editions():
    spec = importlib.util.spec_from_file_location("editions", ROOT / "examples" / "editions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


editions = _editions()
SOLUTION = re.compile(r'<details markdown="1"><summary>Solution</summary>(.*?)</details>', re.S)


def test_student_edition_has_no_solution_text(tmp_path):
    written = editions.student_edition(tmp_path / "student")
    # the notebooks' own modules of examples/ travel with them: the edition runs in its folder
    assert sorted(p.name for p in written) == ["classroom.py", "explain_figures.py",
                                               "labs.ipynb", "problems.md", "structure.ipynb",
                                               "teaching.ipynb"]
    for module in ("classroom.py", "explain_figures.py"):
        assert (tmp_path / "student" / module).read_text() == \
            (ROOT / "examples" / module).read_text()
    for name in editions.NOTEBOOKS:
        full = nbformat.read(ROOT / "examples" / f"{name}.ipynb", as_version=4)
        student = nbformat.read(tmp_path / "student" / f"{name}.ipynb", as_version=4)
        text = nbformat.writes(student)
        solutions = SOLUTION.findall("\n".join(c.source for c in full.cells))
        assert len(solutions) >= 3 or name not in editions.SOLVED, name
        assert "Solution" not in text and "<details" not in text
        # every substantial line of every solution is gone (code and prose alike), unless the
        # notebook has it outside its solutions too (an import, a line of section 5's code)
        elsewhere = SOLUTION.sub("", "\n".join(c.source for c in full.cells))
        lines = {line.strip() for s in solutions for line in s.splitlines()
                 if len(line.strip()) >= 25 and line.strip() not in elsewhere}
        assert len(lines) >= 10 or name not in editions.SOLVED
        left = [line for line in lines if line in text]
        assert not left, left[:3]
        # ... and nothing else: the same cells, the same text outside the solutions, no outputs
        assert len(student.cells) == len(full.cells)
        for a, b in zip(full.cells, student.cells, strict=True):
            assert a.cell_type == b.cell_type
            if a.cell_type == "markdown":
                assert b.source.split() == SOLUTION.sub("", a.source).split()
            else:
                assert b.source == a.source and b.outputs == [] and b.execution_count is None
        assert text.count("*Hint:*") == "\n".join(c.source for c in full.cells).count("*Hint:*")
    problems = (tmp_path / "student" / "problems.md").read_text()
    assert problems == (ROOT / "docs" / "problems.md").read_text()


def test_student_edition_refuses_a_notebook_without_solutions(tmp_path):
    root = tmp_path / "repo"
    (root / "examples").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "problems.md").write_text("# Problems\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("no exercise here")])
    for name in editions.SOLVED:
        nbformat.write(nb, root / "examples" / f"{name}.ipynb")
    with pytest.raises(ValueError, match="no folded solution"):
        editions.student_edition(tmp_path / "out", root=root)


def test_slides_build_without_network(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")

    def refuse(*args, **kwargs):
        raise OSError("no network while the slides are built")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    out = tmp_path / "deck" / "slides.pdf"
    pages = editions.slides(out)
    figures = sum("image/png" in o.get("data", {})
                  for name in editions.NOTEBOOKS
                  for c in nbformat.read(ROOT / "examples" / f"{name}.ipynb", 4).cells
                  if c.cell_type == "code" for o in c.outputs)
    assert pages == 1 + figures
    data = out.read_bytes()
    assert data.startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page\b", data)) == pages
    # every figure page has its section and its remarks
    for page in editions.slide_pages():
        assert page["section"] and page["notice"], page["section"]


def _questions(text: str) -> dict[int, tuple[str, int]]:
    return {int(n): (title, int(marks)) for n, title, marks in
            re.findall(r"^\*\*(\d+)\. ([^*]+)\*\* \[(\d+)\]", text, flags=re.M)}


def test_problem_set_and_marking_scheme_match():
    problems = (ROOT / "docs" / "problems.md").read_text()
    scheme = (ROOT / "teaching" / "marking_scheme.md").read_text()
    asked, answered = _questions(problems), _questions(scheme)
    assert sorted(asked) == list(range(1, 13))
    assert asked == answered
    total = sum(m for _, m in asked.values())
    assert f"{total} marks in all" in problems and f"{total} marks." in scheme
    # each answer's partial marks add up to the question's
    blocks = re.split(r"^\*\*\d+\. ", scheme, flags=re.M)[1:]
    for (n, (_, marks)), block in zip(sorted(answered.items()), blocks, strict=True):
        answer = re.sub(r"^[^*]+\*\* \[\d+\]", "", block)  # the title and its total
        parts = [int(x) for x in re.findall(r"\[(\d)\]", answer)]
        assert sum(parts) == marks, (n, parts)


def test_marking_scheme_numbers():
    """The scheme's numbers, recomputed (the library where it has the function)."""
    from fastpath.structure import kdb_from_scores, mutual_information, tan_from_scores
    from hdpbn_ppl import teaching

    scheme = " ".join((ROOT / "teaching" / "marking_scheme.md").read_text().split())
    # 1: I(X; Y) of the 2 x 2 table, by fastpath from rows
    x = np.repeat([0, 0, 1, 1], [30, 10, 10, 30])
    y = np.repeat([0, 1, 0, 1], [30, 10, 10, 30])
    mi = mutual_information(x[:, None], y, [2], 2)[0]
    assert f"{mi:.4f}" == "0.1308" and "0.1308" in scheme
    # 3: TAN and kDB of the four attributes A, B, C, D
    mis = np.array([0.4, 0.1, 0.3, 0.2])
    cmi = np.zeros((4, 4))
    for (i, j), w in {(0, 1): .30, (0, 2): .05, (0, 3): .20, (1, 2): .25, (1, 3): .10,
                      (2, 3): .15}.items():
        cmi[i, j] = cmi[j, i] = w
    assert tan_from_scores(mis, cmi).parents == ((), (0,), (1,), (0,))  # B<-A, C<-B, D<-A
    assert kdb_from_scores(mis, cmi, 1).parents == ((), (0,), (0,), (0,))
    assert kdb_from_scores(mis, cmi, 2).parents == ((), (0, 2), (0,), (0, 2))
    assert "Order by MI: $A, C, D, B$" in scheme
    # 4: Brier, ambiguity and log loss of two members
    p = np.array([[0.9, 0.1], [0.5, 0.5]])
    e = np.array([1.0, 0.0])
    brier = ((p - e) ** 2).sum(axis=1)
    ambiguity = ((p - p.mean(axis=0)) ** 2).sum(axis=1).mean()
    assert np.allclose([brier.mean(), ambiguity, ((p.mean(axis=0) - e) ** 2).sum()],
                       [0.26, 0.08, 0.18])
    assert f"{-np.log(p[:, 0]).mean():.4f}" == "0.3993" and f"{-np.log(0.7):.4f}" == "0.3567"
    for s in ("0.26", "0.08", "0.18", "0.3993", "0.3567"):
        assert s in scheme
    # 5, 6: Stirling numbers and the Chinese restaurant distribution (teaching sampler)
    s4 = np.exp(teaching.log_stirling_table(4)[4]).round(9)
    assert s4.tolist() == [0, 6, 11, 6, 1]
    assert "S(4, 1) = 6$, $S(4, 2) = 11$, $S(4, 3) = 6$, $S(4, 4) = 1" in scheme
    crd = teaching.crd_probabilities(3, 1.0, teaching.log_stirling_table(3))
    assert np.allclose(crd[1:], [1 / 3, 1 / 2, 1 / 6])
    assert np.isclose(crd @ np.arange(4), 11 / 6) and np.isclose(digamma(4) - digamma(1), 11 / 6)
    assert "$1/3, 1/2, 1/6$" in scheme and "11/6 = 1.8333" in scheme
    # 8: eq. (14) and the m-estimate
    theta = (np.array([2, 0]) + 2 * np.array([0.8, 0.2])) / 4
    assert np.allclose(theta, [0.9, 0.1]) and "(0.9, 0.1)" in scheme
    assert f"{2.5 / 3:.4f}" == "0.8333" and "0.8333" in scheme
    # 9: the concentration's Gamma
    rate = 1 - math.log(0.4) - math.log(0.9)
    assert f"{rate:.4f}" == "2.0217" and f"{9 / rate:.4f}" == "4.4518"
    assert "Gamma}(9, 2.0217)" in scheme and "4.4518" in scheme
    # 10: breaks of the stick
    assert math.ceil(math.log(1e-6) / math.log(2 / 3)) == 35 and "35 breaks" in scheme
    # 12: MCSE = sd / sqrt(ESS)
    assert f"{0.05 / math.sqrt(400):.4f}" == "0.0025" and "= 0.0025" in scheme
