"""A new user's first use: the first ``ESKDBClassifier()`` fit and prediction of a process
against the second ones, numba's kernels compiled (cold cache) or loaded (warm), and which
kernels were compiled for more than one type signature (a specialisation a fit or a
prediction may not need: each costs a compile in a fresh environment).

    mkdir /tmp/numba-cold
    NUMBA_CACHE_DIR=/tmp/numba-cold python benchmarks/first_use.py   # cold: compiles
    NUMBA_CACHE_DIR=/tmp/numba-cold python benchmarks/first_use.py   # warm: loads
    python benchmarks/first_use.py --dataset credit-a --signatures   # and the signatures
    NUMBA_CACHE_DIR=/tmp/numba-cold python benchmarks/first_use.py --after-demo  # a new user

``--after-demo``: first ``hdpbn demo`` in a process of its own (timed, ``demo_s``), then the
fits: what a user who ran ``make demo`` meets at a first fit in Python.

Prints one JSON line: the import's seconds, the wall-clock and CPU seconds of two fits and two
predictions (``predict_proba`` of the training table) of ``ESKDBClassifier(random_state=0)``
on a bundled dataset (default: credit-a, nominal and numeric columns with missing values), in
one process; with ``--signatures``, every fastpath kernel compiled for two signatures or more.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _timed(call) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    call()
    return round(time.perf_counter() - t, 2), round(time.process_time() - c, 2)


def _dispatchers():
    """Every numba dispatcher of fastpath's loaded modules, by qualified name."""
    from numba.core.registry import CPUDispatcher

    from fastpath.utils._threads import ThreadedKernel

    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("fastpath") or module is None:
            continue
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher):
                found[f"{name}.{attr}"] = value
            elif isinstance(value, ThreadedKernel):
                found[f"{name}.{attr}[serial]"] = value.serial
                found[f"{name}.{attr}[parallel]"] = value.parallel
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="credit-a")
    parser.add_argument("--signatures", action="store_true")
    parser.add_argument("--after-demo", action="store_true",
                        help="run `hdpbn demo` first, in its own process")
    args = parser.parse_args()
    demo_s = None
    if args.after_demo:
        import subprocess

        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from fastpath.cli._main import main; "
                        "raise SystemExit(main(['demo']))"], check=True,
                       stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[1])
        demo_s = round(time.perf_counter() - t, 2)
    t0 = time.perf_counter()
    import numba

    from fastpath import ESKDBClassifier
    from fastpath.io import load_dataset

    t_import = time.perf_counter() - t0
    X, y = load_dataset(args.dataset)
    out = {"numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR"), "dataset": args.dataset,
           "import_s": round(t_import, 2), "threads": numba.get_num_threads()}
    if demo_s is not None:
        out["demo_s"] = demo_s
    for run in ("first", "second"):
        clf = ESKDBClassifier(random_state=0)
        out[f"{run}_fit_s"], out[f"{run}_fit_cpu_s"] = _timed(lambda clf=clf: clf.fit(X, y))
        out[f"{run}_predict_s"], out[f"{run}_predict_cpu_s"] = _timed(
            lambda clf=clf: clf.predict_proba(X))
    if args.signatures:
        found = _dispatchers()
        out["kernels_compiled"] = sum(bool(d.signatures) for d in found.values())
        out["signatures"] = sum(len(d.signatures) for d in found.values())
        out["several"] = {name: [str(s) for s in d.signatures] for name, d in found.items()
                          if len(d.signatures) > 1}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
