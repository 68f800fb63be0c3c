"""How far the prediction plan merges class branches: trees, plan bytes and speed per bound.

    python benchmarks/merged_growth.py DATASETS/kddcup.csv.gz --bounds 4,8,16,64
    python benchmarks/merged_growth.py DATASETS --exclude kddcup --bounds 4,16 --repeat 0

A tree that the kernel cannot resolve in advance has its class branches merged into one tree
over its parents' values (one descent a row for every class) when the merged nodes' rows
number at most ``MERGED_GROWTH`` times its table's entries; otherwise it is descended once per
class (:mod:`fastpath.predict._inference`). For every dataset (class column last, ``--typing
manifest`` as in the experiments; the first split of the experiments' protocol)
``ESKDBClassifier()`` is fitted on the training half with one thread; then, for each bound of
``--bounds``, the ensemble's prediction plan is built with that bound and the script prints,
as one JSON line per dataset and bound: the trees merged and those still descended once per
class, the plan's megabytes, and (``--repeat`` > 0) the fastest of ``--repeat`` predictions of
the test half in test rows per second, one thread. The probabilities must be the same floats
for every bound (the script stops otherwise): the bound moves memory and time, never numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(ref, typing: str, bounds: list[int], repeat: int) -> list[dict]:
    from fastpath import ESKDBClassifier
    from fastpath.pipeline._members import prediction_plan
    from fastpath.predict import _inference
    from validation.experiments.runner import CrossValidation, load_dataset

    X, labels = load_dataset(ref, typing)
    y = np.unique(labels, return_inverse=True)[1]
    _, _, train, test = next(iter(CrossValidation().splits(y)))
    X_test = X.iloc[test]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = ESKDBClassifier(n_jobs=1, random_state=0).fit(X.iloc[train], labels[train])
    shipped = _inference.MERGED_GROWTH
    records, reference = [], None
    try:
        for bound in bounds:
            _inference.MERGED_GROWTH = bound
            plan = prediction_plan(clf.members_)
            clf._prediction_plan = plan  # the plan predictions read (built as a fit builds it)
            packed = plan.packed
            merged = packed.merged_node_offset >= 0
            descended = (~merged) & (packed.dense_offset < 0)
            record = {"dataset": ref.name, "bound": bound, "trees": int(merged.size),
                      "merged": int(merged.sum()), "descended_per_class": int(descended.sum()),
                      "plan_mb": round(sum(a.nbytes for a in packed) / 1e6, 1)}
            if repeat > 0:
                proba = clf.predict_proba(X_test)
                seconds = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    clf.predict_proba(X_test)
                    seconds.append(time.perf_counter() - t0)
                record["rows_per_s"] = round(test.size / min(seconds))
                if reference is None:
                    reference = proba
                elif not np.array_equal(proba, reference):
                    raise SystemExit(f"{ref.name}: bound {bound} changed the probabilities")
            records.append(record)
            print(json.dumps(record), flush=True)
    finally:
        _inference.MERGED_GROWTH = shipped
    return records


def main(argv=None) -> int:
    import numba

    from validation.experiments.runner import discover_datasets

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--bounds", default="4,16",
                    help="values of MERGED_GROWTH to compare (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="predictions timed per bound (0: no timing, no identity check)")
    ap.add_argument("--exclude", default="", help="dataset names to skip (comma-separated)")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)
    bounds = [int(b) for b in args.bounds.split(",") if b]
    if not bounds:
        ap.error("--bounds needs at least one value")
    numba.set_num_threads(1)
    excluded = {n for n in args.exclude.split(",") if n}
    for ref in discover_datasets(args.data):
        if ref.name not in excluded:
            measure(ref, args.typing, bounds, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
