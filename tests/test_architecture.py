"""The layer rule of docs/architecture.md, checked on the source with ``ast``.

* no import cycle between modules (fastpath, hdpbn_ppl, validation);
* a package's private modules and names (``_name``) are its own: its modules import each
  other's freely, another package (hdpbn_ppl, validation) imports only public modules' public
  names (what the ``__init__`` files export);
* in fastpath, a folder imports only folders below it in :data:`LAYERS` (a module may import
  modules of its own folder, as long as no cycle forms);
* fastpath never imports hdpbn_ppl, and imports validation only lazily (the ``experiments``
  subcommand);
* imports inside functions only for optional extras, or for a module of ours that needs one
  (imported lazily on purpose so that the package imports without the extra); and in the
  command line (:data:`LAZY`), which imports what a command runs on once the command is chosen,
  so that ``hdpbn --help`` imports no numpy, pandas, numba or scikit-learn.

The checker is a function of a source folder, so the tests below also run it on small packages
with a planted cycle, private import, upward import or function-level import, and see it fail.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fastpath", "hdpbn_ppl", "validation")
#: fastpath's folders (and top-level modules), bottom to top
LAYERS = (
    "version", "utils", "io", "encode", "counts", "structure", "estimate", "predict",
    "pipeline", "scale", "classifier", "evaluation", "cli", "__init__",
)
#: packages whose modules may import anything inside a function (the command line: its
#: ``--help`` and the parsing of a command import only what that command needs)
LAZY = ("fastpath.cli",)
#: third-party modules of the optional extras (and the ``all`` extra's tools)
OPTIONAL = {
    "jax", "jaxlib", "numpyro", "arviz", "arviz_base", "dask", "distributed", "matplotlib",
    "xgboost", "networkx", "mpmath", "psutil", "pytest", "arviz_stats", "lightgbm", "catboost",
    "zstandard",  # .zst files, as pandas reads and writes them: pandas' optional dependency
}


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    imports: list[tuple[str, list[str], bool, int]] = field(default_factory=list)
    # (target module, imported names, inside a function, line)


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Module]:
    mods = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            mods[".".join(parts)] = Module(".".join(parts), path, is_package)
    return mods


def _in_function(tree: ast.AST) -> set[int]:
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    inside.add(id(sub))
    return inside


def _parse(mods: dict[str, Module]) -> None:
    for mod in mods.values():
        tree = ast.parse(mod.path.read_text(), filename=str(mod.path))
        inside = _in_function(tree)
        package = mod.name if mod.is_package else mod.name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                names = [a.name for a in node.names]
                mod.imports.append((base, names, id(node) in inside, node.lineno))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    mod.imports.append((a.name, [], id(node) in inside, node.lineno))


def _resolve(mods: dict[str, Module], base: str, name: str) -> str | None:
    """The module an import refers to: ``base.name`` when that is a module, else ``base``."""
    if f"{base}.{name}" in mods:
        return f"{base}.{name}"
    while base and base not in mods:
        base = base.rpartition(".")[0]
    return base or None


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "fastpath":
        return None
    key = parts[1] if len(parts) > 1 else "__init__"
    return LAYERS.index(key) if key in LAYERS else None


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _needs_an_extra(mods: dict[str, Module], packages: tuple[str, ...]) -> set[str]:
    """Modules that import an optional extra at the top, directly or through our modules."""
    heavy = {m for m, mod in mods.items()
             if any(t.split(".")[0] in OPTIONAL and not lazy for t, _, lazy, _ in mod.imports)}
    grew = True
    while grew:
        grew = False
        for m, mod in mods.items():
            if m in heavy:
                continue
            for base, names, lazy, _ in mod.imports:
                if lazy or base.split(".")[0] not in packages:
                    continue
                if any(_resolve(mods, base, n) in heavy for n in names or [""]):
                    heavy.add(m)
                    grew = True
                    break
    return heavy


def check(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every violation of the layer rule under ``root``, as readable lines (empty: none)."""
    mods = _modules(root, packages)
    _parse(mods)
    problems: list[str] = []
    edges: dict[str, set[str]] = {m: set() for m in mods}
    heavy = _needs_an_extra(mods, packages)
    for m, mod in mods.items():
        may_defer = any(m == p or m.startswith(p + ".") for p in LAZY)
        for base, names, lazy, line in mod.imports:
            for name in names or [""]:
                target = _resolve(mods, base, name) if base.split(".")[0] in packages else None
                where = f"{mod.path.relative_to(root)}:{line}"
                if target is None:
                    if (lazy and not may_defer
                            and base.split(".")[0] not in OPTIONAL | {"__future__"}):
                        problems.append(f"{where}: function-level import of {base} "
                                        "(only optional extras may be imported lazily)")
                    continue
                if target == m:
                    continue
                if not lazy:
                    edges[m].add(target)
                top = target.split(".")[0]
                if top != m.split(".")[0]:  # across packages: public modules and names only
                    private_name = (name.startswith("_") and not name.startswith("__")
                                    and target == base)
                    if private_name:
                        problems.append(f"{where}: imports the private name {base}.{name}")
                    elif any(p.startswith("_") for p in target.split(".")):
                        problems.append(f"{where}: imports the private module {target}")
                if m.startswith("fastpath") and top == "hdpbn_ppl":
                    problems.append(f"{where}: fastpath imports hdpbn_ppl")
                if lazy and not may_defer and top == m.split(".")[0] and target not in heavy:
                    problems.append(f"{where}: function-level import of {target}, which needs no "
                                    "optional extra (import it at the top)")
                lo, hi = _layer(m), _layer(target)
                if lo is not None and hi is not None and hi > lo:
                    problems.append(f"{where}: {m} (layer {LAYERS[lo]}) imports {target} "
                                    f"(layer {LAYERS[hi]}, above it)")
    for comp in _cycles(edges):
        problems.append("import cycle: " + " -> ".join(comp))
    return problems


# ---------------------------------------------------------------------- the project
def test_the_project_follows_the_layer_rule():
    problems = check(ROOT)
    assert not problems, "\n".join(problems)


def test_every_fastpath_folder_has_a_layer():
    folders = {p.name for p in (ROOT / "fastpath").iterdir()
               if (p / "__init__.py").exists()}
    modules = {p.stem for p in (ROOT / "fastpath").glob("*.py")}
    assert folders | modules <= set(LAYERS), sorted((folders | modules) - set(LAYERS))


# ---------------------------------------------------------------------- the checker fails
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for rel in files:
        for parent in Path(rel).parents:
            if parent != Path(".") and not (tmp_path / parent / "__init__.py").exists():
                (tmp_path / parent / "__init__.py").write_text("")
    return tmp_path


GOOD = {
    "fastpath/utils/checks.py": "def check():\n    return 1\n",
    "fastpath/counts/tree.py": "from ..utils.checks import check\n",
    "fastpath/estimate/table.py": "from ..counts.tree import check\n",
}


def test_the_checker_passes_a_layered_package(tmp_path):
    assert check(_package(tmp_path, GOOD), ("fastpath",)) == []


def test_private_modules_and_names_are_free_inside_their_package(tmp_path):
    root = _package(tmp_path, {
        **GOOD,
        "fastpath/utils/_private.py": "def _helper():\n    return 1\n",
        "fastpath/counts/_tree.py": "from ..utils._private import _helper\n",
        "fastpath/counts/__init__.py": "from ._tree import _helper as helper\n",
        "hdpbn_ppl/model.py": "from fastpath.counts import helper\n",
    })
    assert check(root, ("fastpath", "hdpbn_ppl")) == []


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({"fastpath/utils/checks.py": "from ..utils import more\n",
          "fastpath/utils/more.py": "from . import checks\n"}, "import cycle"),
        ({"hdpbn_ppl/model.py": "from fastpath.utils.checks import _hidden\n"},
         "private name fastpath.utils.checks._hidden"),
        ({"hdpbn_ppl/model.py": "from fastpath.utils._hidden import check\n",
          "fastpath/utils/_hidden.py": "def check():\n    return 1\n"},
         "private module fastpath.utils._hidden"),
        ({"fastpath/counts/tree.py": "from ..estimate.table import x\n"},
         "(layer counts) imports fastpath.estimate.table (layer estimate, above it)"),
        ({"fastpath/counts/tree.py": "def f():\n    from ..utils.checks import check\n"},
         "function-level import of fastpath.utils.checks"),
        ({"fastpath/counts/tree.py": "def f():\n    import json\n"},
         "function-level import of json"),
        ({"fastpath/counts/tree.py": "import hdpbn_ppl.model\n",
          "hdpbn_ppl/model.py": "x = 1\n"}, "fastpath imports hdpbn_ppl"),
    ],
)
def test_the_checker_finds_each_kind_of_violation(tmp_path, extra, expected):
    root = _package(tmp_path, {**GOOD, **extra})
    problems = check(root, ("fastpath", "hdpbn_ppl"))
    assert any(expected in p for p in problems), problems


def test_the_command_line_may_import_lazily(tmp_path):
    command = "def run():\n    import json\n    from ..utils.checks import check\n"
    root = _package(tmp_path, {**GOOD, "fastpath/cli/main.py": command})
    assert check(root, ("fastpath",)) == []
    root = _package(tmp_path / "other", {**GOOD, "fastpath/counts/main.py": command})
    assert len(check(root, ("fastpath",))) == 2


def test_a_lazy_import_of_an_optional_extra_is_allowed(tmp_path):
    root = _package(tmp_path, {
        **GOOD,
        "fastpath/estimate/plot.py": "import matplotlib\n",
        "fastpath/estimate/table.py": "def f():\n    import dask\n    from . import plot\n",
    })
    assert check(root, ("fastpath",)) == []
