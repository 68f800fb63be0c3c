"""Fit and predict time of selective kDB with HDP estimates (paper: adult, SkDB-5, 50,000 it.).

The paper reports 86 s to fit SkDB-5 with HDP estimates (50,000 iterations) on adult and under
1 s to classify 25,000 rows. This script fits ``BayesNetClassifier(structure="skdb", k=5,
estimation="hdp", sampler="paper", n_iter=50_000)`` on a stratified half of a dataset (seed 0)
and predicts the other half, after a JIT warm-up on 2,000 rows that is not timed::

    python benchmarks/skdb_timing.py DATASETS/adult.csv.gz --typing manifest --threads 2

``--typing manifest`` reads the column types from the folder's ``MANIFEST.csv`` as the experiment
runner does (``python -m validation.experiments --help``). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="a csv.gz / ARFF dataset with the class last")
    ap.add_argument("--typing", default="file", help="'file', 'manifest' or 'int<=N'")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="timed fits (the best and all are shown)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from fastpath import BayesNetClassifier, HDPOptions
    from fastpath.evaluation import rmse, stratified_folds, zero_one_loss
    from validation.experiments.runner import discover_datasets, load_dataset

    (ref,) = discover_datasets([args.data])
    X, y = load_dataset(ref, args.typing)
    classes, y_codes = np.unique(np.asarray(y).astype(str), return_inverse=True)
    _, _, train, test = next(iter(stratified_folds(y_codes, 2, 1, args.seed)))

    def model(n_iter):
        return BayesNetClassifier(structure="skdb", k=args.k, estimation="hdp",
                                  sampler=HDPOptions.preset("paper", n_iter=n_iter),
                                  n_jobs=args.threads, random_state=args.seed)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model(200).fit(X.iloc[train[:2000]], y[train[:2000]])  # JIT warm-up, not timed
        fits, predicts = [], []
        for _ in range(args.repeat):
            clf = model(args.iterations)
            t0 = time.perf_counter()
            clf.fit(X.iloc[train], y[train])
            t1 = time.perf_counter()
            proba = clf.predict_proba(X.iloc[test])
            t2 = time.perf_counter()
            fits.append(t1 - t0)
            predicts.append(t2 - t1)
    model_codes = np.searchsorted(classes, np.asarray(clf.classes_).astype(str))
    full = np.zeros((len(test), classes.size))
    full[:, model_codes] = proba
    sel = clf.selection_
    out = {
        "data": os.path.basename(args.data), "train_rows": len(train),
        "test_rows": len(test), "k": args.k, "iterations": args.iterations,
        "threads": args.threads, "fit_seconds": [round(t, 2) for t in fits],
        "predict_seconds": [round(t, 3) for t in predicts],
        "n_selected": int(sel.n_selected), "k_selected": int(sel.k_selected),
        "n_attributes": int(sel.structure.n_attributes),
        "tree_nodes": int(sum(t.n_nodes for t in clf.trees_)),
        "test_rmse": round(rmse(y_codes[test], full), 4),
        "test_zero_one_loss": round(zero_one_loss(y_codes[test], full), 4),
        "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}",
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
