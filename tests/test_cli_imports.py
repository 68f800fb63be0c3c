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


def test_the_lazy_names_are_those_the_command_line_imports():
    from fastpath.cli import _main

    declared = set()
    for function in (_main._import_commands, _main._import_option_names):
        tree = ast.parse(inspect.getsource(function))
        declared |= {n for node in ast.walk(tree) if isinstance(node, ast.Global)
                     for n in node.names}
    assert declared == set(_main._LAZY_NAMES)
    # what the module imports for readers and type checkers is what it imports at run time
    module = ast.parse(inspect.getsource(_main))
    checking = next(node for node in module.body if isinstance(node, ast.If)
                    and getattr(node.test, "id", None) == "TYPE_CHECKING")
    typed = {(a.asname or a.name) for node in ast.walk(checking)
             if isinstance(node, ast.Import | ast.ImportFrom) for a in node.names}
    assert typed == declared
    _main._import_commands()
    assert all(name in vars(_main) for name in declared)
