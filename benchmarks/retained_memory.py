"""Bytes a fitted classifier's ``hdp_results_`` hold beyond its probability tables.

    cd CHECKOUT && python /path/to/benchmarks/retained_memory.py

Measures the checkout it is run from (its root is put first on ``sys.path``), so that the same
script compares two checkouts. For each bundled dataset (car, tic-tac-toe, kr-vs-kp; every
row), fits ``BayesNetClassifier(structure="kdb", k=2)`` and ``ESKDBClassifier(n_estimators=5)``
with their default samplers (and, where ``HDPOptions`` has it, ``keep_traces=False``) and
prints the bytes of the members' tables, the bytes of the distinct arrays reachable from
``hdp_results_`` that the tables do not share (the trees and options left out: the model holds
them anyway) and their ratio.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings

sys.path.insert(0, os.getcwd())

import numpy as np

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.io import load_dataset

DATASETS = ("car", "tic-tac-toe", "kr-vs-kp")


def _buffer(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _arrays(obj, out: dict[int, np.ndarray]) -> None:
    """Every distinct buffer reachable from a result's fields (tree and options left out)."""
    if isinstance(obj, np.ndarray):
        b = _buffer(obj)
        out[id(b)] = b
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name not in ("tree", "options"):
                _arrays(getattr(obj, f.name), out)


def measure(clf) -> tuple[int, int]:
    """(bytes of the tables, bytes of ``hdp_results_`` beyond them)."""
    tables = {id(b): b for m in clf.members_ for b in map(_buffer, m.probability_tables)}
    held: dict[int, np.ndarray] = {}
    for r in clf.hdp_results_:
        _arrays(r, held)
    extra = sum(b.nbytes for k, b in held.items() if k not in tables)
    return sum(b.nbytes for b in tables.values()), extra


def main() -> None:
    has_option = "keep_traces" in {f.name for f in dataclasses.fields(HDPOptions)}
    print("dataset, classifier, keep_traces: tables B, hdp_results_ beyond the tables B, ratio")
    for name in DATASETS:
        X, y = load_dataset(name)
        for label, make in (("kdb-2", lambda **kw: BayesNetClassifier("kdb", 2, **kw)),
                            ("eskdb-5", lambda **kw: ESKDBClassifier(5, **kw))):
            for keep in (True, False) if has_option else (True,):
                clf = make(random_state=0)
                if not keep:
                    clf.set_params(sampler=clf.hdp_options().replace(keep_traces=False))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(X, y)
                tables, extra = measure(clf)
                print(f"{name}, {label}, {keep}: {tables:,}, {extra:,}, {extra / tables:.2f}")


if __name__ == "__main__":
    main()
