"""Where an ESKDB fit spends its time: seconds per stage, next to the forest's whole fit.

    python benchmarks/eskdb_stages.py DATASETS --limit 20          # the 20 smallest
    python benchmarks/eskdb_stages.py DATASETS/adult.csv.gz --classifier eskdb-m

For every dataset (class column last; ``--typing manifest`` as in the experiments) the first
training fold of the experiments' protocol (stratified 2-fold, seed 0) is fitted once by the
ensemble as the experiment runner builds it (default ``eskdb-hdp``: 20 members, 1,000 HDP
iterations), single-threaded (``n_jobs=1``, one numba thread, kernels compiled beforehand),
with a timer around each stage's functions (:class:`StageClock`):

- ``coding``: every member's encoder (stochastic MDL cut points, then the codes);
- ``structure``: mutual information, the sampled order and the kDB-K parents;
- ``selection``: the leave-one-out scores of every (n*, k*) (selective kDB);
- ``counting``: the members' context trees;
- ``m choice``: the choice of each member's m (m-estimates only: leave-one-out over the candidates
  for ``m="auto"``, a holdout for ``m="holdout"``);
- ``estimation``: the HDP sampler over the distinct trees, or the m-estimate tables;
- ``other``: the rest of the fit.

Then scikit-learn's forest (``rf``, the runner's) is fitted on the same fold and timed. Prints one
JSON line per dataset, then the stages' shares of the summed ensemble fit seconds.
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

from benchmarks.eskdb_speed import _warm_up
from validation.experiments.classifiers import make_classifier, parse_classifier
from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset
from validation.experiments.timing import StageClock

#: stage -> the (owner, attribute) pairs whose calls make it up: module functions as the
#: pipeline looks them up, or methods of a class
STAGES = {
    "coding": [("fastpath.encode._encoder:TableEncoder", "fit"),
               ("fastpath.encode._encoder:TableEncoder", "transform"),
               ("fastpath.encode._encoder:TableEncoder", "transform_shared"),
               ("fastpath.pipeline._members", "fit_members"),
               ("fastpath.pipeline._memory", "column_cache")],
    "structure": [("fastpath.structure._selective", "kdb"),
                  ("fastpath.pipeline._members", "mutual_information"),
                  ("fastpath.pipeline._members", "sample_order")],
    "selection": [("fastpath.structure._selective", "loo_scores"),
                  ("fastpath.structure._selective", "_loo_kernel"),
                  ("fastpath.structure._selective", "accumulated_loo_model")],
    "counting": [("fastpath.counts._counting:CountAccumulator", "update")],
    "m choice": [("fastpath.pipeline._memory", "choose_m_from_codes")],
    "estimation": [("fastpath.pipeline._members", "estimate_tables")],
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--classifier", default="eskdb-hdp")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=0, help="only the first N datasets (by size)")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)

    refs = discover_datasets(args.data)
    if args.limit:
        refs = refs[: args.limit]
    numba.set_num_threads(1)
    _warm_up([args.classifier, "rf"], args.iterations)
    totals = dict.fromkeys([*STAGES, "other"], 0.0)
    fit_total = rf_total = 0.0
    for ref in refs:
        X, labels = load_dataset(ref, args.typing)
        y_codes = np.unique(labels, return_inverse=True)[1]
        _, _, train, _ = next(iter(CrossValidation().splits(y_codes)))
        model = make_classifier(parse_classifier(args.classifier), iterations=args.iterations,
                                seed=0)
        with warnings.catch_warnings(), StageClock(STAGES) as clock:
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model.fit(X.iloc[train], labels[train])
            fit_s = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            forest = make_classifier(parse_classifier("rf"), iterations=args.iterations, seed=0)
            t0 = time.perf_counter()
            forest.fit(X.iloc[train], labels[train])
            rf_s = time.perf_counter() - t0
        stages = dict(clock.seconds)
        stages["other"] = max(fit_s - sum(stages.values()), 0.0)
        for stage, seconds in stages.items():
            totals[stage] += seconds
        fit_total += fit_s
        rf_total += rf_s
        print(json.dumps({"dataset": ref.name, "train_rows": int(train.size),
                          "fit_s": round(fit_s, 3), "rf_fit_s": round(rf_s, 3),
                          **{k: round(v, 3) for k, v in stages.items()}}), flush=True)
    print(f"{args.classifier} over {len(refs)} datasets: {fit_total:.1f} s fitting "
          f"({fit_total / rf_total:.1f}x the forest's {rf_total:.1f} s)")
    for stage, seconds in totals.items():
        print(f"  {stage:<11} {seconds:8.1f} s  {100 * seconds / fit_total:5.1f} %  "
              f"({seconds / rf_total:.1f}x the forest's fit)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
