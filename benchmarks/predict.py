"""Fit and predict throughput of a kDB-2 classifier, and counting throughput.

Usage::

    python benchmarks/predict.py --data DATASETS/adult.csv.gz [--repeat N]
    python benchmarks/predict.py --synthetic 1000000   # 15 nominal attributes, 5 values each

Prints rows/s for: the counting pass alone (15 nominal attributes, one core), prediction
(predict_proba, one thread and all threads) and the whole fit. The targets of the foundation
issue are >= 2,000,000 rows/s counting and >= 1,000,000 rows/s predicting on one core.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
import pandas as pd

from fastpath import BayesNetClassifier
from fastpath.counts import CountAccumulator
from fastpath.io import read_table


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def synthetic(n_rows: int, n_attr: int = 15, card: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_rows)
    shift = y[:, None] * (rng.random((n_rows, n_attr)) < 0.3)
    X = (rng.integers(0, card, (n_rows, n_attr)) + shift) % card
    frame = pd.DataFrame({f"a{j}": pd.Categorical(X[:, j].astype(str)) for j in range(n_attr)})
    return frame, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a table with the class last (CSV, CSV.gz, Parquet, ARFF)")
    parser.add_argument("--synthetic", type=int, default=0,
                        help="rows of synthetic data (15 nominal attributes) instead of --data")
    parser.add_argument("--predict-rows", type=int, default=1_000_000,
                        help="rows to classify (the data is tiled to this size)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    if args.synthetic:
        X, y = synthetic(args.synthetic)
        name = f"synthetic ({args.synthetic} rows, 15 nominal attributes)"
    elif args.data:
        frame = read_table(args.data).frame
        X, y = frame.iloc[:, :-1], frame.iloc[:, -1]
        name = args.data
    else:
        parser.error("give --data PATH or --synthetic N")

    clf = BayesNetClassifier(structure="kdb", k=2, estimation="m", m=1.0, random_state=0)
    clf.fit(X.iloc[:1000], np.asarray(y)[:1000])  # compile the kernels
    fit_s = best_of(lambda: clf.fit(X, y), args.repeat)
    print(f"data: {name}; {len(X)} rows x {X.shape[1]} attributes; kDB-2, m = 1")
    print(f"fit (encode + MDL + structure + counts + tables): {fit_s:.3f} s, "
          f"{len(X) / fit_s:,.0f} rows/s")

    # counting alone, on the model's own codes and tables
    codes = clf.transform_codes(X)
    y_codes = np.searchsorted(clf.classes_, np.asarray(y))
    reps = max(1, args.predict_rows // len(X))
    big_codes = np.tile(codes, (reps, 1))
    big_y = np.tile(y_codes, reps)
    CountAccumulator(clf.tree_specs_).update(big_codes[:10], big_y[:10])
    count_s = best_of(lambda: CountAccumulator(clf.tree_specs_).update(big_codes, big_y),
                      args.repeat)
    print(f"counting pass ({len(clf.tree_specs_)} tables, {len(big_y):,} rows): "
          f"{count_s:.3f} s, {len(big_y) / count_s:,.0f} rows/s")

    big_X = pd.concat([X] * reps, ignore_index=True) if reps > 1 else X
    big_codes = clf.transform_codes(big_X)
    from fastpath.predict import joint_log_likelihood

    threads = numba.get_num_threads()
    packed = clf.members_[0].pack()
    for n_threads in sorted({1, threads}):
        numba.set_num_threads(n_threads)
        kernel_s = best_of(lambda: joint_log_likelihood(packed, big_codes), args.repeat)
        print(f"predict kernel, {n_threads} thread(s), {len(big_X):,} rows: {kernel_s:.3f} s, "
              f"{len(big_X) / kernel_s:,.0f} rows/s")
    numba.set_num_threads(threads)
    total_s = best_of(lambda: clf.predict_proba(big_X), args.repeat)
    print(f"predict_proba end to end (encoding included), {threads} thread(s): {total_s:.3f} s, "
          f"{len(big_X) / total_s:,.0f} rows/s")


if __name__ == "__main__":
    main()
