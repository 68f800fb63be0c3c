"""Where ``ESKDBClassifier()``'s fit and prediction spend their time: cProfile, one thread.

    python benchmarks/eskdb_profile.py DATASETS/adult.csv.gz DATASETS/pendigits.csv.gz
    python benchmarks/eskdb_profile.py DATASETS --largest 3 --top 15

For every dataset (class column last, ``--typing manifest`` as in the experiments) and the first
split of the experiments' protocol (stratified 2-fold, seed 0), as ``benchmarks/eskdb_cost.py``
measures them: the runner's ensemble (default ``eskdb-hdpe``, ``ESKDBClassifier()`` with its
defaults) is fitted on the training half and predicts the test half under :mod:`cProfile`, with
one thread (``n_jobs=1``, one numba thread; kernels compiled beforehand). The prediction
profiled is the model's second: the first packs the members' tables, once per model, which the
cost benchmark's fastest of ``--repeat`` leaves out (its seconds are printed). Prints, per
dataset and phase, the wall seconds without the profiler (a separate fit and prediction: the
profiler's per-call cost inflates Python-heavy code), the profiled seconds and the ``--top``
functions by their own time (``tottime``; a numba kernel's time is the own time of the Python
function that calls its dispatcher), each with its share of the profiled phase, and for a
function with a tenth of the phase or more the callers that spent it. ``--largest N`` keeps the
N datasets with the most training rows x attributes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.eskdb_cost import largest_datasets
from benchmarks.eskdb_speed import _warm_up
from validation.experiments.classifiers import make_classifier, parse_classifier
from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset


def _where(key: tuple[str, int, str]) -> str:
    path, line, name = key
    return name if path == "~" else f"{Path(path).name}:{line}({name})"


def _top(profile: cProfile.Profile, top: int
         ) -> list[tuple[str, int, float, list[tuple[str, float]]]]:
    """The ``top`` functions by own time: (where, calls, seconds, callers), ``callers`` the
    functions that called it with the own seconds of those calls, largest first (a numba
    kernel's time is the own time of the Python function that calls its dispatcher, e.g.
    ``ThreadedKernel.__call__``: its callers say which kernel it was)."""
    stats = pstats.Stats(profile, stream=io.StringIO())
    rows = []
    for key, (_, calls, tottime, _, callers) in stats.stats.items():
        by_caller = sorted(((_where(c), v[2]) for c, v in callers.items()), key=lambda r: -r[1])
        rows.append((_where(key), calls, tottime, by_caller))
    rows.sort(key=lambda r: -r[2])
    return rows[:top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--ensemble", default="eskdb-hdpe",
                    help="the runner's name of the ensemble profiled (default eskdb-hdpe)")
    ap.add_argument("--largest", type=int, default=0,
                    help="only the N datasets with the most training rows x attributes")
    ap.add_argument("--top", type=int, default=12, help="functions listed per phase")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)

    refs = discover_datasets(args.data)
    if args.largest:
        refs = largest_datasets(refs, args.largest, args.typing)
    numba.set_num_threads(1)
    _warm_up([args.ensemble], 50, 1)
    spec = parse_classifier(args.ensemble)
    for ref in refs:
        X, labels = load_dataset(ref, args.typing)
        y = np.unique(labels, return_inverse=True)[1]
        _, _, train, test = next(iter(CrossValidation().splits(y)))
        X_train, X_test, y_train = X.iloc[train], X.iloc[test], labels[train]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_classifier(spec, seed=0, n_jobs=1)
            t0 = time.perf_counter()
            model.fit(X_train, y_train)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            model.predict_proba(X_test)  # the first packs the members' tables, once per model
            first_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            model.predict_proba(X_test)
            predict_s = time.perf_counter() - t0
            phases = {}
            profile = cProfile.Profile()
            model = make_classifier(spec, seed=0, n_jobs=1)
            t0 = time.perf_counter()
            profile.runcall(model.fit, X_train, y_train)
            phases["fit"] = (fit_s, time.perf_counter() - t0, profile)
            model.predict_proba(X_test)
            profile = cProfile.Profile()
            t0 = time.perf_counter()
            profile.runcall(model.predict_proba, X_test)
            phases["predict"] = (predict_s, time.perf_counter() - t0, profile)
        print(f"== {ref.name}: {train.size} training rows, {test.size} test rows, "
              f"{X.shape[1]} attributes; first prediction {first_s:.2f} s (packing included)")
        for phase, (plain, profiled, prof) in phases.items():
            print(f"  {phase}: {plain:.2f} s ({profiled:.2f} s profiled)")
            for where, calls, seconds, callers in _top(prof, args.top):
                print(f"    {seconds:8.3f} s {100 * seconds / profiled:5.1f} % {calls:>9} "
                      f"calls  {where}")
                if seconds >= 0.1 * profiled:  # a large share: which callers
                    for caller, own in callers[:4]:
                        print(f"        {own:8.3f} s from {caller}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
