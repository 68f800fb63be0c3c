"""ESKDB against random forest, side by side: fit seconds and predict throughput per fold.

    python benchmarks/eskdb_speed.py DATASETS/adult.csv.gz DATASETS/car.csv.gz
    python benchmarks/eskdb_speed.py DATASETS --limit 10 --repeat 3   # a folder of *.csv.gz

For every dataset (class column last; ``--typing manifest`` as in the experiments), the first
training/test split of the experiments' protocol (stratified 2-fold, seed 0), and every
classifier (default: ``eskdb-hdp`` = ESKDB-20 with 1,000 HDP iterations, ``rf`` and ``rf-raw``, as
the experiment runner builds them, single-threaded: ``n_jobs=1`` and one numba thread, after a
warm-up that compiles the kernels), the fits and predictions are timed in turn,
``--repeat`` times interleaved (so a noisy machine affects all classifiers alike); the minimum
over repeats is kept. Prints one JSON line per dataset and classifier, then the ratio of the mean
fit seconds per fold (ESKDB / each forest) over the datasets and each classifier's predict
throughput (test rows per second, encoding included).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from validation.experiments.classifiers import make_classifier, parse_classifier
from validation.experiments.runner import (
    CrossValidation,
    discover_datasets,
    load_dataset,
)


def _warm_up(names: list[str], iterations: int, n_jobs: int = 1) -> None:
    """Compile (or load from numba's cache) every kernel before anything is timed (with
    ``n_jobs`` threads: the parallel compilations too)."""
    from fastpath.io import load_dataset as load_bundled

    X, y = load_bundled("credit-a")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in names:
            model = make_classifier(parse_classifier(c), iterations=min(iterations, 50), seed=0,
                                    n_jobs=n_jobs)
            model.fit(X.iloc[:200], np.asarray(y)[:200])
            model.predict_proba(X.iloc[200:260])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--classifiers", default="eskdb-hdp,rf,rf-raw")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="only the first N datasets (by size)")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)

    names = [c.strip() for c in args.classifiers.split(",") if c.strip()]
    refs = discover_datasets(args.data)
    # one thread everywhere, as the experiment runner's workers (the forests get n_jobs=1)
    numba.set_num_threads(1)
    _warm_up(names, args.iterations)
    if args.limit:
        refs = refs[: args.limit]
    fit_s = {c: [] for c in names}
    rows_per_s = {c: [] for c in names}
    for ref in refs:
        X, labels = load_dataset(ref, args.typing)
        y_codes = np.unique(labels, return_inverse=True)[1]
        _, _, train, test = next(iter(CrossValidation().splits(y_codes)))
        best = {c: [np.inf, np.inf] for c in names}
        for _ in range(args.repeat):
            for c in names:
                model = make_classifier(parse_classifier(c), iterations=args.iterations, seed=0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    model.fit(X.iloc[train], labels[train])
                    t1 = time.perf_counter()
                    model.predict_proba(X.iloc[test])
                    t2 = time.perf_counter()
                best[c] = [min(best[c][0], t1 - t0), min(best[c][1], t2 - t1)]
        for c in names:
            fit_s[c].append(best[c][0])
            rows_per_s[c].append(test.size / best[c][1])
            print(json.dumps({"dataset": ref.name, "classifier": c, "train_rows": int(train.size),
                              "fit_s": round(best[c][0], 4), "predict_s": round(best[c][1], 4),
                              "predict_rows_per_s": round(test.size / best[c][1])}), flush=True)
    first = names[0]
    for c in names[1:]:
        ratio = np.mean(fit_s[first]) / np.mean(fit_s[c])
        print(f"mean fit s per fold over {len(refs)} datasets: {first} {np.mean(fit_s[first]):.3f}"
              f" / {c} {np.mean(fit_s[c]):.3f} = {ratio:.2f}")
    for c in names:
        print(f"{c}: median predict throughput {np.median(rows_per_s[c]):,.0f} rows/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
