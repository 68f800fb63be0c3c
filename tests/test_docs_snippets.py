"""The quick-start snippets of the model and sampler pages run as written.

A reader copies them into a fresh interpreter: each block listed here is executed alone, in a
namespace of its own, so a name it uses without defining (the ``tree`` the pages once assumed)
fails the test. Blocks that are fragments by design (signatures, ``...``) or long measurements
(the window's bias, 4 x 20,000 iterations on 40 leaves) are not listed; the model page's NUTS
run is replaced by a stand-in that checks its arguments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"(?ms)^```python\n(.*?)^```", (DOCS / page).read_text())


def test_sampler_quick_start_runs():
    code = _python_blocks("sampler.md")[0]
    ns: dict = {}
    exec(compile(code, "docs/sampler.md", "exec"), ns)
    res = ns["res"]
    assert res.probabilities.shape == (3, 2)
    assert abs(res.probabilities[1, 0] - 0.8566) < 0.02  # the worked example (model.md, section 2)
    assert len(ns["many"]) == 2


@pytest.mark.ppl
def test_model_quick_start_runs(monkeypatch):
    """NUTS itself is tested elsewhere (tests/test_ppl_infer.py); here ``fit`` is replaced by a
    stand-in that checks the snippet's arguments against its signature, so the snippet's names
    and calls are checked in a second instead of a 20 s run."""
    pytest.importorskip("numpyro", reason="the ppl extra is not installed")
    import inspect
    from types import SimpleNamespace

    import hdpbn_ppl.infer
    from fastpath.counts import ContextTree

    calls = []

    def fit(*args, **kwargs):
        inspect.signature(hdpbn_ppl.infer.fit).bind(*args, **kwargs)
        calls.append(args)
        return SimpleNamespace(probabilities=None, mcse=None, concentration_mean=None,
                               diagnostics=None, datatree=None)

    monkeypatch.setattr(hdpbn_ppl.infer, "fit", fit)
    code = _python_blocks("model.md")[0]
    exec(compile(code, "docs/model.md", "exec"), {})
    assert len(calls) == 1 and isinstance(calls[0][0], ContextTree)


def test_the_readmes_when_to_use_it_quotes_the_results():
    """issue 55, point 5: the README states what to expect (accuracy, calibration, speed) and
    when a forest or a booster wins, with the numbers of docs/results.md (and the speed of
    docs/performance.md): each figure of its section is one of theirs."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    assert "## When to use it" in readme
    section = readme.split("## When to use it", 1)[1].split("\n## ", 1)[0]
    sources = (root / "docs" / "results.md").read_text() + (
        root / "docs" / "performance.md").read_text() + (root / "docs" / "usage.md").read_text()
    figures = set(re.findall(r"\d+\.\d+|\d+-\d+-\d+", section))
    assert len(figures) >= 20
    missing = sorted(f for f in figures if f not in sources)
    assert missing == [], missing
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert {"accuracy: 0-1 loss", "calibration: RMSE", "calibration: log loss"} <= {
        line.split("|")[1].strip() for line in table}
    assert "speed" in section and "Prefer a forest or a booster" in section


def test_usages_parameter_tables_hold_every_parameter_and_every_choice_the_cli_offers():
    """issue 55, point 7: ``--estimation`` offered m, hdp, hgs and hls where usage.md's table
    listed hdp and m; every parameter of both classifiers has a row, every structure and
    estimation method of the command line is named in its row."""
    import inspect
    from pathlib import Path

    from fastpath import BayesNetClassifier, ESKDBClassifier
    from fastpath.cli import build_parser
    from fastpath.cli._main import FIT_STRUCTURE

    usage = (Path(__file__).resolve().parents[1] / "docs" / "usage.md").read_text()
    rows = {}
    for line in usage.splitlines():
        if line.startswith("| `"):
            name = line.split("|")[1].strip().strip("`")
            rows.setdefault(name, []).append(line)
    others = next(line for line in usage.splitlines() if line.startswith("| the others |"))
    for cls in (BayesNetClassifier, ESKDBClassifier):
        for name in inspect.signature(cls).parameters:
            assert name in rows or f"`{name}`" in others, (cls.__name__, name)
    fit = build_parser()._subparsers._group_actions[0].choices["fit"]
    choices = {a.dest: a.choices for a in fit._actions if a.choices}
    for dest, row in (("structure", "structure"), ("estimation", "estimation")):
        text = " ".join(rows[row])
        for choice in choices[dest]:
            assert f'"{choice}"' in text or f"--{dest} {choice}" in text, (dest, choice)
    assert fit.get_default("structure") == FIT_STRUCTURE
