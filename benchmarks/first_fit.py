"""The first fit of a process against the second: numba's kernels compiled (cold cache) or
loaded from the cache (warm), the pause docs/usage.md describes.

    mkdir /tmp/numba-cold
    NUMBA_CACHE_DIR=/tmp/numba-cold python benchmarks/first_fit.py   # cold: compiles
    NUMBA_CACHE_DIR=/tmp/numba-cold python benchmarks/first_fit.py   # warm: loads
    python benchmarks/first_fit.py                                    # the default cache

Prints one JSON line: the import's seconds, and the wall-clock and CPU seconds of two fits of
``BayesNetClassifier("kdb", k=2, random_state=0)`` (HDP estimates, the adaptive sampler) on the
bundled *car* dataset in one process.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    t0 = time.perf_counter()
    import numba

    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    t_import = time.perf_counter() - t0
    X, y = load_dataset("car")
    walls, cpus = [], []
    for _ in range(2):
        t, c = time.perf_counter(), time.process_time()
        BayesNetClassifier("kdb", k=2, random_state=0).fit(X, y)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    print(json.dumps({
        "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR"), "import_s": round(t_import, 2),
        "first_fit_s": round(walls[0], 2), "first_fit_cpu_s": round(cpus[0], 2),
        "second_fit_s": round(walls[1], 2), "second_fit_cpu_s": round(cpus[1], 2),
        "threads": numba.get_num_threads(),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
