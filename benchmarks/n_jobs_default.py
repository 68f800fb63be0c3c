"""What a user who leaves ``n_jobs`` out gains or loses: fit and predict seconds with
``n_jobs=None`` (the default, all cores) against ``n_jobs=1`` (scikit-learn's default).

    python benchmarks/n_jobs_default.py [DATASET ...]
    python benchmarks/n_jobs_default.py credit-a kr-vs-kp DATASETS/adult.csv.gz \
        DATASETS/connect-4.csv.gz

DATASET is a bundled name (``credit-a``, ``kr-vs-kp``) or the path of a ``.csv.gz`` whose last
column is the class (default: the two bundled ones). Prints one JSON line per (dataset, model,
n_jobs): the median wall-clock seconds of ``fit`` and of ``predict_proba`` on the training rows over
``--repeats`` runs, which alternate the two settings so that both see the same machine load.
A first fit of each setting compiles or loads numba's kernels and is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _load(name: str):
    import pandas as pd

    from fastpath.io import list_datasets, load_dataset

    if name in list_datasets():
        return load_dataset(name)
    if not name.endswith(".csv.gz"):
        raise SystemExit(f"{name!r} is neither a bundled dataset ({', '.join(list_datasets())}) "
                         "nor the path of a .csv.gz")
    frame = pd.read_csv(name)
    return frame.iloc[:, :-1], frame.iloc[:, -1]


def _models():
    from fastpath import BayesNetClassifier, ESKDBClassifier

    return {
        "BayesNetClassifier(kdb, k=2, hdp)":
            lambda n_jobs: BayesNetClassifier("kdb", k=2, random_state=0, n_jobs=n_jobs),
        "ESKDBClassifier(n_estimators=5, hdp)":
            lambda n_jobs: ESKDBClassifier(n_estimators=5, random_state=0, n_jobs=n_jobs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    names = args.datasets or ["credit-a", "kr-vs-kp"]
    models = _models()
    X0, y0 = _load("credit-a")
    for make in models.values():  # compile or load every kernel, serial and parallel
        for n_jobs in (1, None):
            make(n_jobs).fit(X0, y0).predict_proba(X0)
    for name in names:
        X, y = _load(name)
        for label, make in models.items():
            times: dict[object, dict[str, list[float]]] = {
                n: {"fit": [], "predict": []} for n in (1, None)}
            for r in range(args.repeats):
                for n_jobs in ((1, None) if r % 2 == 0 else (None, 1)):
                    t = time.perf_counter()
                    clf = make(n_jobs).fit(X, y)
                    times[n_jobs]["fit"].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    clf.predict_proba(X)
                    times[n_jobs]["predict"].append(time.perf_counter() - t)
            for n_jobs, t in times.items():
                print(json.dumps({
                    "dataset": name, "rows": len(y), "model": label, "n_jobs": n_jobs,
                    "cores": os.cpu_count(),
                    "fit_s": round(statistics.median(t["fit"]), 3),
                    "predict_s": round(statistics.median(t["predict"]), 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
