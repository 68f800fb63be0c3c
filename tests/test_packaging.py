"""What ``make demo`` and ``make test`` install, and the documentation's math set-up.

``make demo`` installs the core dependencies only (no JAX, NumPyro, XGBoost or mkdocs);
``make test`` installs everything the test suite imports; ``make demo`` then ``make test`` adds the
test extra to the demo's environment. The Makefile is run for real with stub programs in place
of the virtual environment's ``python``, ``pip`` and ``hdpbn``: the stubs log their arguments, so
nothing is installed. mkdocs.yml is read with a YAML loader that ignores its ``!!python/name``
tags (mkdocs is not needed).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "hdpbn"
FIRST_PARTY = {"fastpath", "hdpbn_ppl", "validation", "tests", "benchmarks", "conftest"}
#: distributions that `make demo` must not install (prefixes: mkdocs covers mkdocs-material, ...)
HEAVY = ("jax", "jaxlib", "numpyro", "xgboost", "lightgbm", "catboost", "mkdocs")
#: import name -> distribution that provides it, where the two differ
DISTRIBUTION = {
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "xdist": "pytest-xdist",
    "arviz_base": "arviz",  # ArviZ 1.x is arviz + arviz_base + arviz_stats (+ arviz_plots)
    "arviz_stats": "arviz",
    "PIL": "pillow",
}
#: imported by the packages but needed by no test: the experiments skip the baseline without it
#: (the boosters' tests skip themselves without their library)
NOT_FOR_TESTS = {"xgboost", "lightgbm", "catboost", "zstandard"}
#: what a test skips itself without, on purpose: the offline-site test builds the site only
#: where a Chromium binary exists, which no extra installs (``make lint`` installs mkdocs)
SKIPPED_WITHOUT = {"mkdocs"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirement(req: str) -> tuple[str, list[str]]:
    """``"dask[dataframe]>=2024.1"`` -> ``("dask", ["dataframe"])``."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", req)
    assert m, req
    return _norm(m.group(1)), [e.strip() for e in (m.group(2) or "").split(",") if e.strip()]


def _resolve(extras) -> set[str]:
    """The distributions the core dependencies and ``extras`` name, self-references expanded."""
    project = _pyproject()
    optional = project.get("optional-dependencies", {})
    names: set[str] = set()
    todo, seen = [None, *extras], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        if extra is not None and extra not in optional:
            raise AssertionError(f"the Makefile installs extra {extra!r}, pyproject.toml has none")
        for req in project["dependencies"] if extra is None else optional[extra]:
            name, sub = _requirement(req)
            if name == PROJECT:
                todo.extend(sub)
            else:
                names.add(name)
    return names


def _heavy(names) -> list[str]:
    return sorted(n for n in names if n.startswith(HEAVY))


# --- the Makefile, run with stubs ---------------------------------------------------------------


@pytest.fixture
def make_run(tmp_path):
    """``make_run(target)`` runs ``make target`` with ``VENV`` a stub environment in ``tmp_path``
    and returns the command lines its stubs received since the previous call."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True)
    for prog in ("python", "python3", "pip", "hdpbn"):
        stub = venv / "bin" / prog
        stub.write_text(f'#!/bin/sh\necho "{prog} $*" >> "{log}"\n')
        stub.chmod(0o755)
    log.touch()
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    done = 0

    def run(target: str) -> list[str]:
        nonlocal done
        proc = subprocess.run([make, "--no-print-directory", target, f"VENV={venv}"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = log.read_text().splitlines()
        new, done = lines[done:], len(lines)
        return new

    return run


def _installed(calls: list[str]) -> tuple[set[str], list[str]]:
    """Distributions and extras of this project that the ``pip install`` calls install."""
    names, extras, project = set(), [], False
    for line in calls:
        words = line.split()
        if "pip" not in words or "install" not in words:
            continue
        for word in words[words.index("install") + 1:]:
            word = word.strip("'\"")
            if word.startswith("-"):
                continue
            m = re.fullmatch(r"\.(?:\[([^\]]*)\])?", word)
            if m:  # the project itself: its core dependencies and the extras asked for
                project = True
                extras += [e.strip() for e in (m.group(1) or "").split(",") if e.strip()]
            elif word != "pip":
                names.add(_requirement(word)[0])
    return (names | _resolve(extras) if project else names), extras


def _third_party_imports(paths, local=frozenset()) -> dict[str, set[str]]:
    """Top-level third-party modules imported (or ``pytest.importorskip``-ed) -> files;
    ``local``: module names that are files beside the tests."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "importorskip" and node.args
                  and isinstance(node.args[0], ast.Constant)):
                mods = [node.args[0].value]
            for mod in mods:
                top = mod.split(".")[0]
                if top in sys.stdlib_module_names or top in FIRST_PARTY or top in local:
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_core_dependencies_are_light():
    assert _heavy(_resolve([])) == []
    # what the demo (and the scikit-learn estimators, the progress bars) import
    assert {"numpy", "numba", "pandas", "scikit-learn", "tqdm"} <= _resolve([])


def test_demo_installs_the_core_dependencies_only(make_run):
    calls = make_run("demo")
    names, extras = _installed(calls)
    assert any(c.split()[:2] == ["hdpbn", "demo"] for c in calls), calls
    assert _heavy(names) == [], f"make demo installs extras {extras}"
    assert {"numpy", "numba", "pandas", "scikit-learn", "tqdm"} <= names


def test_test_target_installs_what_the_tests_import(make_run):
    calls = make_run("test")
    names, _ = _installed(calls)
    tests = sorted((ROOT / "tests").rglob("*.py"))
    packages = [p for pkg in ("fastpath", "hdpbn_ppl", "validation")
                for p in sorted((ROOT / pkg).rglob("*.py"))]
    needed = _third_party_imports(tests, {p.stem for p in tests})
    for mod in SKIPPED_WITHOUT:
        needed.pop(mod, None)
    for mod, files in _third_party_imports(packages).items():  # reached through the packages
        if mod not in NOT_FOR_TESTS:
            needed.setdefault(mod, set()).update(files)
    missing = {mod: sorted(files)[:3] for mod, files in needed.items()
               if _norm(DISTRIBUTION.get(mod, mod)) not in names}
    assert not missing, f"make test does not install what these import: {missing}"
    pytest_calls = [c for c in calls if re.search(r"(-m pytest|\bpytest)\b", c)]
    assert pytest_calls, calls
    if any(re.search(r"\s(-n|--numprocesses)\b", c) for c in pytest_calls):
        assert "pytest-xdist" in names


def test_demo_then_test_installs_the_test_extra(make_run):
    demo_names, _ = _installed(make_run("demo"))
    test_names, _ = _installed(make_run("test"))
    assert _heavy(demo_names) == []
    assert {"pytest", "jax", "numpyro"} <= test_names, "make test after make demo installs nothing"
    # a second run finds both levels installed
    assert _installed(make_run("demo"))[0] == set()
    assert _installed(make_run("test"))[0] == set()


# --- the documentation's math -------------------------------------------------------------------


def _mkdocs_config() -> dict:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml's !!python/name:..., !ENV, !relative: keep the tag's text, construct nothing
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: suffix)
    Loader.add_multi_constructor("!", lambda loader, suffix, node: suffix)
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)


def test_mkdocs_renders_math_with_arithmatex_and_mathjax():
    config = _mkdocs_config()
    options = None
    for ext in config.get("markdown_extensions", []):
        if isinstance(ext, dict) and "pymdownx.arithmatex" in ext:
            options = ext["pymdownx.arithmatex"] or {}
    assert options is not None, "pymdownx.arithmatex is not enabled"
    assert options.get("generic") is True, "arithmatex needs generic: true for MathJax 3 / KaTeX"

    scripts = [s["path"] if isinstance(s, dict) else s for s in config.get("extra_javascript", [])]
    # the site works offline (issue 28): every script is served by the site itself
    assert not [s for s in scripts if re.match(r"(https?:)?//", s)], scripts
    docs = ROOT / config.get("docs_dir", "docs")
    for s in scripts:
        assert (docs / s).is_file(), s
    library = [i for i, s in enumerate(scripts) if re.search(r"mathjax|katex", s, re.I)
               and "vendor/" in s]
    assert library, f"no vendored MathJax or KaTeX script in extra_javascript: {scripts}"
    local = [i for i, s in enumerate(scripts) if "vendor/" not in s
             and "arithmatex" in (docs / s).read_text()]
    assert local, "no local script configures MathJax/KaTeX for arithmatex's elements"
    if any("mathjax" in scripts[i].lower() for i in library):
        # MathJax reads window.MathJax when it loads: the configuration goes first
        assert min(local) < min(library), scripts
    assert any("mermaid" in s for s in scripts), "mermaid is not served by the site"
    assert config.get("use_directory_urls") is False, "links must work from file://"


def test_docs_math_uses_arithmatex_delimiters():
    """Display math in the docs is ``$$...$$`` (or ``\\[...\\]``) on lines of its own, which
    arithmatex wraps; an unbalanced ``$$`` would leave raw LaTeX on the page."""
    for path in sorted((ROOT / "docs").glob("*.md")):
        text = re.sub(r"(?ms)^```.*?^```", "", path.read_text())  # fenced code blocks
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans
        assert text.count("$$") % 2 == 0, path.name
