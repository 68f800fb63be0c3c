"""``hdpbn --help`` is quick (issue 29, point 7): the command line imports what a command runs
on once the command is chosen, so the help of the command line and of ``predict`` imports none
of numpy, pandas, numba, scikit-learn, scipy or pyarrow."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys

import pytest

from fastpath.cli import build_parser
from fastpath.cli._main import _SUMMARIES, _bundled_names
from fastpath.io import list_datasets

HEAVY = ("numpy", "pandas", "numba", "sklearn", "scipy", "pyarrow")


@pytest.mark.parametrize("argv", [["--help"], ["predict", "--help"], ["--version"]])
def test_help_imports_no_heavy_module(argv):
    script = (
        "import json, sys\n"
        "from fastpath.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert json.loads(res.stdout.strip().splitlines()[-1]) == []


def test_the_light_parser_lists_the_commands_as_the_full_one(capsys):
    texts = []
    for parser in (build_parser(""), build_parser()):
        with pytest.raises(SystemExit):
            parser.parse_args(["--help"])
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]


def test_the_help_texts_name_what_the_library_bundles():
    assert _bundled_names() == list_datasets()
    full = build_parser()
    commands = next(a for a in full._actions if a.dest == "command")
    helps = {a.dest: a.help for a in commands._choices_actions}
    for name, summary in _SUMMARIES.items():
        assert helps[name] == summary


def test_the_command_line_imports_without_global_statements():
    # each function imports what it runs on (issue 44, point 5): no name is injected into
    # the module by a ``global`` statement, and the module's own imports are light
    from fastpath.cli import _main

    module = ast.parse(inspect.getsource(_main))
    assert not [node for node in ast.walk(module) if isinstance(node, ast.Global)]
    top = {a.name.split(".")[0] for node in module.body if isinstance(node, ast.Import)
           for a in node.names}
    assert not top & set(HEAVY)
