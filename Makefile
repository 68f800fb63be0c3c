# The two commands of the README: `make demo` and `make test`.
# Both create .venv with python3.12 when it is missing and install the project into it.
# `make weka` (optional, as root) installs Java and Debian's Weka for the `rf-weka` baseline of
# the experiments (docs/results.md); `make test` and `make demo` do not need it.

VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.hdpbn-installed
EXTRAS    ?= dev,bench,ppl,dask
# python3.12 from PATH when it runs; otherwise a pyenv-installed 3.12.
PYTHON312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
                 if $$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then echo $$p; break; fi; done)

.PHONY: demo test lint docs bench clean install weka

$(PY):
	@if [ -z "$(PYTHON312)" ]; then echo "error: python3.12 not found; install Python 3.12 or set PYTHON312=/path/to/python3.12" >&2; exit 1; fi
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hdpbn demo

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q

lint: $(STAMP)
	$(VENV)/bin/ruff check fastpath hdpbn_ppl validation tests benchmarks

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

# Weka 3.6 and a Java runtime from Debian (jar: /usr/share/java/weka.jar)
weka:
	apt-get update && apt-get install -y weka

clean:
	rm -rf $(VENV) site .pytest_cache .ruff_cache
