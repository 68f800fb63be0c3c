# The two commands of the README: `make demo` and `make test`.
# Both create .venv with python3.12 when it is missing, then install into it only what they need:
#   make demo     the core dependencies (numpy, numba, pandas, scipy, pyarrow, scikit-learn, tqdm)
#   make test     pyproject.toml's `test` extra: the core, ppl (JAX/NumPyro/ArviZ), dask, and the
#                 test tools (pytest, pytest-xdist, hypothesis, networkx, mpmath, matplotlib)
#   make lint     the `dev` extra (test + docs + ruff);  make docs: the `docs` extra (mkdocs)
#   make notebook the `teach` extra; re-executes the class notebooks (examples/teaching.ipynb,
#                 structure.ipynb, labs.ipynb) in place (the site shows their stored outputs, and
#                 tests/test_teaching_notebook.py, _structure.py, _labs.py check they are current)
#   make student  the `teach` extra; writes student/: the notebooks without their solutions or
#                 outputs, and the problem set (examples/editions.py)
#   make slides   the `teach` extra; writes build/slides/hdpbn-slides.pdf, offline
#   make install  every extra (`all`: also the boosters (xgboost, lightgbm, catboost) and the
#                 benchmarks' tools)
# Each level has its own stamp file in .venv, so `make demo` then `make test` installs the test
# extra on top of the demo's environment (pip adds only what is missing); a changed
# pyproject.toml re-runs the install of every level that is asked for again.
# `make weka` (optional, as root) installs Java and Debian's Weka for the `rf-weka` baseline of
# the experiments (docs/results.md); `make test` and `make demo` do not need it.

VENV      := .venv
PY        := $(VENV)/bin/python
# python3.12 from PATH when it runs; otherwise a pyenv-installed 3.12.
PYTHON312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
                 if $$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then echo $$p; break; fi; done)

.PHONY: demo test test-fast test-times study lint docs notebook student slides bench clean install weka

$(PY):
	@if [ -z "$(PYTHON312)" ]; then echo "error: python3.12 not found; install Python 3.12 or set PYTHON312=/path/to/python3.12" >&2; exit 1; fi
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# the core dependencies only. --no-compile: pip would byte-compile every module of every
# dependency (JAX, SciPy, pandas, ...), most never imported; Python compiles what is imported,
# once, at first import (make test's install 56 s instead of 192 s on 2 cores). That needs
# Python to write its bytecode: an environment that forbids it (PYTHONDONTWRITEBYTECODE, set in
# many container images) would have every process compile SciPy, scikit-learn and JAX again
# (10 CPU seconds to import fastpath's estimators instead of 3.5; make test starts some 40
# processes), so the targets below let Python write it, into .venv and the __pycache__ folders.
export PYTHONDONTWRITEBYTECODE :=
$(VENV)/.installed-core: $(PY) pyproject.toml
	$(PY) -m pip install --quiet --no-compile -e .
	@touch $@

# one extra of pyproject.toml (test, docs, dev, all, ...) on top of what is there
$(VENV)/.installed-%: $(PY) pyproject.toml
	$(PY) -m pip install --quiet --no-compile -e ".[$*]"
	@touch $@

install: $(VENV)/.installed-all

demo: $(VENV)/.installed-core
	$(VENV)/bin/hdpbn demo

# the test extra installs while numba compiles the kernels into its cache (tests/_warm_kernels.py,
# in two processes: it needs the core only), so that on a clean clone the two overlap; the
# suite then skips its own warm-up (tests/conftest.py)
test: $(VENV)/.installed-core
	@$(PY) tests/_warm_kernels.py 0 >/dev/null 2>&1 & p0=$$!; \
	$(PY) tests/_warm_kernels.py 1 >/dev/null 2>&1 & p1=$$!; \
	$(MAKE) --no-print-directory $(VENV)/.installed-test; rc=$$?; wait $$p0 $$p1; exit $$rc
	HDPBN_NO_WARM_KERNELS=1 $(PY) -m pytest -n 2 --dist loadgroup -q

# the suite less its long tests (marked slow or study, or over half a CPU second in
# tests/test_times.txt, or sharing a module fixture that is), in about a minute on 2 cores once
# the kernels are compiled; fails when a module of fastpath is left without a test
# (tests/_fast_subset.py)
test-fast: $(VENV)/.installed-test
	$(PY) -m pytest -n 2 --dist loadgroup -q --fast

# the whole suite, rewriting tests/test_times.txt (each test's CPU seconds) for test-fast
test-times: $(VENV)/.installed-test
	$(PY) -m pytest -n 2 --dist loadgroup -q --record-times

# what make test leaves out (pytest's `study` marker): the statistical studies and the
# experiment runner's end-to-end runs
study: $(VENV)/.installed-test
	$(PY) -m pytest -n 2 --dist loadgroup -q -m study

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check fastpath hdpbn_ppl validation tests benchmarks

docs: $(VENV)/.installed-docs
	$(VENV)/bin/mkdocs build --strict

# after a change of examples/teaching.py, structure.py or labs.py (or of the code they run):
# pair, then execute in place (without timing metadata, so that a re-execution changes only
# what the outputs change)
NOTEBOOKS := teaching structure labs
notebook: $(VENV)/.installed-teach
	for nb in $(NOTEBOOKS); do \
	    $(VENV)/bin/jupytext --sync examples/$$nb.py && \
	    MPLBACKEND=module://matplotlib_inline.backend_inline PYTHONPATH=$(CURDIR) \
	    $(PY) -c "import nbclient, nbformat; \
	        nb = nbformat.read('examples/$$nb.ipynb', 4); \
	        [c.metadata.pop('execution', None) for c in nb.cells]; \
	        nbclient.NotebookClient(nb, timeout=600, kernel_name='python3', record_timing=False, \
	            coalesce_streams=True, resources={'metadata': {'path': 'examples'}}).execute(); \
	        nbformat.write(nb, 'examples/$$nb.ipynb')" || exit 1; \
	done

# the class's student edition: the notebooks without solutions or outputs, and the problem set
student: $(VENV)/.installed-teach
	PYTHONPATH=$(CURDIR) $(PY) examples/editions.py student --out student

# the slide deck, a PDF built from the stored notebooks with matplotlib only (no network)
slides: $(VENV)/.installed-teach
	PYTHONPATH=$(CURDIR) $(PY) examples/editions.py slides --out build/slides/hdpbn-slides.pdf

# Weka 3.6 and a Java runtime from Debian (jar: /usr/share/java/weka.jar)
weka:
	apt-get update && apt-get install -y weka

clean:
	rm -rf $(VENV) site student build/slides .pytest_cache .ruff_cache
