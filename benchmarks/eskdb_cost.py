"""The ensemble's cost against the forest's, per dataset and as medians, in one run.

    python benchmarks/eskdb_cost.py DATASETS                        # every dataset of the folder
    python benchmarks/eskdb_cost.py DATASETS --before e8e84ff       # and an older commit's
    python benchmarks/eskdb_cost.py DATASETS --n-jobs 2 --exclude kddcup
    python benchmarks/eskdb_cost.py DATASETS --million adult        # 10^6 rows predicted
    python benchmarks/eskdb_cost.py DATASETS --ensemble eskdb4-hdpe # 4 members, else defaults
    python benchmarks/eskdb_cost.py DATASETS --largest 10           # the ten largest only
    python benchmarks/eskdb_cost.py DATASETS --n-jobs -1            # every core, every model
    python benchmarks/eskdb_cost.py DATASETS --also eskdb4-hdpe     # and 4 members, same rounds

For every dataset (class column last, ``--typing manifest`` as in the experiments) and the first
split of the experiments' protocol (stratified 2-fold, seed 0): ``ESKDBClassifier()`` with its
defaults (the runner's ``eskdb-mix-dwc-hdpe``; ``eskdb-hdpe`` is the generative ensemble of
stochastic MDL members, the default before the discriminative layer) and scikit-learn's forest twice
-- on the same MDL codes (the runner's ``rf``: 100 trees, the paper's settings) and on the raw
columns (``rf-raw``: the same forest on numbers and one-hot nominal columns, what a user runs) --
are fitted on the training half and predict the test half, in turn, with ``--n-jobs`` threads each
(default 1: one numba thread too; ``-1``: every core, the ensemble's members and both forests' trees
in parallel, numba's kernels with as many threads); predictions are
timed ``--repeat`` times, interleaved, encoding included (the test rows are selected from the
table before the clock starts, as a caller holds them), and the fastest kept. ``--rounds N``
fits every model N times, in rounds that interleave the models (their order turned by one
each round, so that no model always follows the same one), and keeps each one's fastest fit
and prediction (this 2-core machine's speed drifts by tens of percent within minutes). With
``--before REV`` the same is done, before the others and in a separate process (one Python
cannot import two versions of the library), by ``ESKDBClassifier()`` of commit ``REV``, checked
out into a temporary worktree. Prints one JSON line per dataset, then the medians over the
datasets of ESKDB fit seconds / forest fit seconds and of ESKDB test rows per second / forest
test rows per second: against ``rf`` (the keys ``fit_ratio``, ``predict_ratio``, as before
``rf-raw`` was measured), against ``rf-raw`` (``raw_fit_ratio``, ``raw_predict_ratio``) and
against the faster of the two forests, fit and prediction each (``best_fit_ratio``,
``best_predict_ratio``). ``--no-raw-forest`` leaves ``rf-raw`` out (the output of the runs
before it was added).

``--largest N``: only the N datasets with the most training rows x attributes (the first
split's training half; every dataset is read once to count them), measured smallest first.

``--million NAME``: that dataset's fitted models also predict 10^6 rows (its rows repeated, in
batches of 10^5), a throughput figure for large inputs. ``--ensemble NAME``: another ensemble of
the runner's (``eskdb4-hdpe``: 4 members, ``eskdb-m``: m-estimates; the rest as the defaults) in
place of ``eskdb-hdpe``, e.g. to price a cheaper configuration. ``--also NAMES``: more of the
runner's ensembles (comma-separated), measured as further sides of the same rounds, so that a
cheaper configuration is priced against the same forests' timings as the default; each
dataset's line gets their fit seconds, test rows per second and ratios to the faster forest
(under ``also``), and the medians are printed for each.

Last, for every ensemble measured, whether issue 45's targets hold over these datasets (against
the faster forest: test rows per second a median >= 5x and >= 2x on each dataset; fit a median
<= 1.5 forest fits and <= 3 on each), with the datasets that miss them.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the two classifiers, as the experiment runner names them (``ESKDBClassifier()`` as shipped:
#: mixed resolution, the discriminative layer, the ensemble's sampler)
ENSEMBLE = "eskdb-mix-dwc-hdpe"
FOREST = "rf"
RAW_FOREST = "rf-raw"

# What one measurement does, as a program: run here for this checkout, and in a subprocess
# with an older checkout first on sys.path for --before (that checkout's ESKDBClassifier()).
_WORKER = r'''
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
import numba
from fastpath import ESKDBClassifier
from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset

def measure(path, typing, n_jobs, repeat):
    ref = discover_datasets([path])[0]
    X, labels = load_dataset(ref, typing)
    y = np.unique(labels, return_inverse=True)[1]
    _, _, train, test = next(iter(CrossValidation().splits(y)))
    model = ESKDBClassifier(n_jobs=n_jobs, random_state=0)
    fit_s, predict_s = time_fit_and_predict(model, X, labels, train, test, repeat)
    return {"fit_s": fit_s, "predict_s": predict_s, "test_rows": int(test.size)}

'''
_MAIN = r'''

if __name__ == "__main__":
    numba.set_num_threads(int(sys.argv[3]))
    warm = discover_datasets([sys.argv[2]])[0].path  # compile before anything is timed
    for line in sys.stdin:
        path, typing, n_jobs, repeat = json.loads(line)
        if warm is not None:
            measure(str(warm), typing, n_jobs, 1)
            warm = None
        print(json.dumps(measure(path, typing, n_jobs, repeat)), flush=True)
'''


class Before:
    """``ESKDBClassifier()`` of an older commit, measured by a worker process."""

    def __init__(self, rev: str, warm_path: str, threads: int) -> None:
        self.dir = tempfile.mkdtemp(prefix="hdpbn-before-")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", self.dir, rev],
                       check=True, capture_output=True)
        script = Path(self.dir) / "_cost_worker.py"
        script.write_text(_WORKER + "\n\n" + inspect.getsource(time_fit_and_predict) + _MAIN)
        env = {**os.environ, "PYTHONPATH": self.dir}
        self.proc = subprocess.Popen(
            [sys.executable, str(script), self.dir, warm_path, str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=self.dir)

    def measure(self, path: str, typing: str, n_jobs: int, repeat: int) -> dict:
        self.proc.stdin.write(json.dumps([path, typing, n_jobs, repeat]) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", self.dir],
                       check=False, capture_output=True)


def time_fit_and_predict(model, X, labels, train, test, repeat):
    """Seconds of ``model``'s fit on the rows ``train`` and of its fastest of ``repeat``
    predictions of the rows ``test`` (the worker of ``--before`` runs this same source). The
    rows are taken from ``X`` before the clock starts: pandas' row selection (2 ms for
    audiology's 69 categorical columns) is the benchmark's work, not the model's."""
    X_train, X_test = X.iloc[train], X.iloc[test]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X_train, labels[train])
        fit_s = time.perf_counter() - t0
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            model.predict_proba(X_test)
            times.append(time.perf_counter() - t0)
    return fit_s, min(times)


def _fit_and_predict(name: str, X: pd.DataFrame, labels: np.ndarray, train: np.ndarray,
                     test: np.ndarray, n_jobs: int, repeat: int):
    from validation.experiments.classifiers import make_classifier, parse_classifier

    model = make_classifier(parse_classifier(name), seed=0, n_jobs=n_jobs)
    fit_s, predict_s = time_fit_and_predict(model, X, labels, train, test, repeat)
    return model, fit_s, predict_s


def largest_datasets(refs: list, n: int, typing: str) -> list:
    """The ``n`` datasets of ``refs`` with the most training rows x attributes (the first split's
    training half, as measured), in the order of ``refs`` (smallest file first)."""
    from validation.experiments.runner import CrossValidation, load_dataset

    if n < 1:
        raise ValueError(f"--largest must be a positive number of datasets, got {n}")
    size = {}
    for ref in refs:
        X, labels = load_dataset(ref, typing)
        y = np.unique(labels, return_inverse=True)[1]
        _, _, train, _ = next(iter(CrossValidation().splits(y)))
        size[ref.name] = int(train.size) * int(X.shape[1])
    keep = set(sorted(size, key=lambda name: (-size[name], name))[:n])
    return [ref for ref in refs if ref.name in keep]


def _million(models: dict, X_test: pd.DataFrame) -> dict:
    """Seconds to predict 10^6 rows (the test rows repeated) in batches of 10^5."""
    reps = -(-100_000 // len(X_test))
    batch = pd.concat([X_test] * reps, ignore_index=True).iloc[:100_000]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, model in models.items():
            if model is None:
                continue
            t0 = time.perf_counter()
            for _ in range(10):
                model.predict_proba(batch)
            out[name] = time.perf_counter() - t0
    return out


def main(argv=None) -> int:
    import numba

    from benchmarks.eskdb_speed import _warm_up
    from fastpath.utils._validation import n_threads
    from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--n-jobs", type=int, default=1,
                    help="threads of every model (default 1; -1: every core)")
    ap.add_argument("--repeat", type=int, default=3, help="predictions timed per model")
    ap.add_argument("--rounds", type=int, default=1,
                    help="fits per model, interleaved (older commit, this one, the forests), "
                         "the fastest kept (default 1)")
    ap.add_argument("--before", help="also measure ESKDBClassifier() of this git revision")
    ap.add_argument("--million", default="", help="datasets whose models predict 10^6 rows")
    ap.add_argument("--exclude", default="", help="dataset names to skip (comma-separated)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N datasets (by size)")
    ap.add_argument("--largest", type=int, default=0,
                    help="only the N datasets with the most training rows x attributes")
    ap.add_argument("--no-raw-forest", action="store_true",
                    help=f"leave out {RAW_FOREST} (the forest on raw columns)")
    ap.add_argument("--typing", default="manifest")
    ap.add_argument("--ensemble", default=ENSEMBLE,
                    help=f"the runner's name of the ensemble measured (default {ENSEMBLE})")
    ap.add_argument("--also", default="",
                    help="more of the runner's ensembles measured in the same rounds "
                         "(comma-separated, e.g. eskdb4-hdpe)")
    args = ap.parse_args(argv)
    also = [n for n in args.also.split(",") if n]
    if args.no_raw_forest and also:
        ap.error("--also compares with the faster of both forests: drop --no-raw-forest")

    excluded = {n for n in args.exclude.split(",") if n}
    refs = [r for r in discover_datasets(args.data) if r.name not in excluded]
    if args.limit:
        refs = refs[: args.limit]
    if args.largest:
        refs = largest_datasets(refs, args.largest, args.typing)
    million = {n for n in args.million.split(",") if n}
    threads = min(n_threads(args.n_jobs), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    forests = {"forest": FOREST} if args.no_raw_forest else {"forest": FOREST,
                                                              "forest_raw": RAW_FOREST}
    _warm_up([args.ensemble, *also, *forests.values()], 50, args.n_jobs)
    before = Before(args.before, str(refs[0].path), threads) if args.before else None
    rows = []
    try:
        for ref in refs:
            X, labels = load_dataset(ref, args.typing)
            y = np.unique(labels, return_inverse=True)[1]
            _, _, train, test = next(iter(CrossValidation().splits(y)))
            record = {"dataset": ref.name, "train_rows": int(train.size),
                      "test_rows": int(test.size)}
            # --rounds rounds of (older commit, this one, the forests), each side's fastest kept:
            # the machine's speed drifts, and a round spreads the drift over the sides; the
            # order turns by one each round, so that no side always follows the same one (a
            # side can leave the machine busier or its caches colder)
            sides = ((["before"] if before is not None else []) + ["ensemble", *forests]
                     + [f"also:{name}" for name in also])
            best = {side: [math.inf, math.inf] for side in sides}
            models = {}
            for r in range(args.rounds):
                for side in sides[r % len(sides):] + sides[: r % len(sides)]:
                    if side == "before":
                        old = before.measure(str(ref.path), args.typing, args.n_jobs,
                                             args.repeat)
                        fit, pred = old["fit_s"], old["predict_s"]
                    else:
                        name = (args.ensemble if side == "ensemble" else
                                side[5:] if side.startswith("also:") else forests[side])
                        models[side], fit, pred = _fit_and_predict(
                            name, X, labels, train, test, args.n_jobs, args.repeat)
                    best[side] = [min(best[side][0], fit), min(best[side][1], pred)]
            (fit_e, pred_e), (fit_f, pred_f) = best["ensemble"], best["forest"]
            if before is not None:
                fit_o, pred_o = best["before"]
                record.update(before_fit_s=round(fit_o, 4),
                              before_rows_per_s=round(test.size / pred_o))
            record.update(fit_s=round(fit_e, 4), rf_fit_s=round(fit_f, 4),
                          fit_ratio=round(fit_e / fit_f, 3),
                          rows_per_s=round(test.size / pred_e),
                          rf_rows_per_s=round(test.size / pred_f),
                          predict_ratio=round(pred_f / pred_e, 3))
            if "forest_raw" in best:
                fit_r, pred_r = best["forest_raw"]
                record.update(rf_raw_fit_s=round(fit_r, 4),
                              rf_raw_rows_per_s=round(test.size / pred_r),
                              raw_fit_ratio=round(fit_e / fit_r, 3),
                              raw_predict_ratio=round(pred_r / pred_e, 3),
                              best_fit_ratio=round(fit_e / min(fit_f, fit_r), 3),
                              best_predict_ratio=round(min(pred_f, pred_r) / pred_e, 3))
            if also:
                fastest_fit, fastest_pred = min(fit_f, fit_r), min(pred_f, pred_r)
                record["also"] = {
                    name: {"fit_s": round(fit, 4), "rows_per_s": round(test.size / pred),
                           "best_fit_ratio": round(fit / fastest_fit, 3),
                           "best_predict_ratio": round(fastest_pred / pred, 3)}
                    for name, (fit, pred) in ((n, best[f"also:{n}"]) for n in also)}
            if before is not None:
                record.update(before_fit_ratio=round(record["before_fit_s"] / fit_f, 3),
                              before_predict_ratio=round(
                                  record["before_rows_per_s"] / record["rf_rows_per_s"], 3))
            if ref.name in million:
                seconds = _million({"eskdb": models["ensemble"], "rf": models["forest"],
                                    "rf_raw": models.get("forest_raw")}, X.iloc[test])
                record.update(million_rows_s=round(seconds["eskdb"], 2),
                              rf_million_rows_s=round(seconds["rf"], 2))
                if "rf_raw" in seconds:
                    record.update(rf_raw_million_rows_s=round(seconds["rf_raw"], 2))
            rows.append(record)
            print(json.dumps(record), flush=True)
    finally:
        if before is not None:
            before.close()
    frame = pd.DataFrame(rows)
    print(f"{len(frame)} datasets, n_jobs={args.n_jobs}, {args.ensemble}: median ESKDB fit / "
          f"forest fit "
          f"{frame.fit_ratio.median():.2f}, median ESKDB / forest test rows per second "
          f"{frame.predict_ratio.median():.2f}")
    print(f"  threads: {_threads_said(args.n_jobs, threads, list(forests.values()))}")
    if "raw_fit_ratio" in frame:
        for label, fit, pred in (
                (f"{RAW_FOREST} (raw columns)", "raw_fit_ratio", "raw_predict_ratio"),
                ("the faster forest (each measure)", "best_fit_ratio", "best_predict_ratio")):
            print(f"  against {label}: median fit / forest fit {frame[fit].median():.2f} "
                  f"(max {frame[fit].max():.2f}), median test rows per second / forest's "
                  f"{frame[pred].median():.2f} (min {frame[pred].min():.2f})")
    if before is not None:
        print(f"  before ({args.before}): median fit / forest fit "
              f"{frame.before_fit_ratio.median():.2f}, median test rows per second / forest's "
              f"{frame.before_predict_ratio.median():.2f}")
    for name in also:
        fit = frame["also"].map(lambda a, n=name: a[n]["best_fit_ratio"])
        pred = frame["also"].map(lambda a, n=name: a[n]["best_predict_ratio"])
        print(f"  {name} against the faster forest: median fit / forest fit {fit.median():.2f} "
              f"(max {fit.max():.2f}), median test rows per second / forest's "
              f"{pred.median():.2f} (min {pred.min():.2f})")
    if "best_fit_ratio" in frame:
        ratios = {args.ensemble: (frame.best_fit_ratio, frame.best_predict_ratio)}
        for name in also:
            ratios[name] = (frame["also"].map(lambda a, n=name: a[n]["best_fit_ratio"]),
                            frame["also"].map(lambda a, n=name: a[n]["best_predict_ratio"]))
        for name, (fit, pred) in ratios.items():
            print(f"  issue 45's targets, {name}: " + _targets_said(frame.dataset, fit, pred))
    largest = frame.nlargest(5, "train_rows")
    print("  five largest training sets: " + ", ".join(
        f"{r.dataset} {r.fit_ratio:.2f}" for r in largest.itertuples()))
    return 0


def _targets_said(names: pd.Series, fit: pd.Series, pred: pd.Series) -> str:
    """Issue 45's four targets against the faster forest, each met or not, in words."""
    parts = []
    for label, ok, misses in (
            ("prediction median >= 5x", pred.median() >= 5, None),
            (">= 2x on each", (pred >= 2).all(), names[pred < 2]),
            ("fit median <= 1.5", fit.median() <= 1.5, None),
            ("<= 3 on each", (fit <= 3).all(), names[fit > 3])):
        said = "met" if ok else "NOT met"
        if misses is not None and len(misses):
            said += f" ({', '.join(misses)})"
        parts.append(f"{label} {said}")
    return "; ".join(parts)


def _threads_said(n_jobs: int, threads: int, forests: list[str]) -> str:
    """What ``--n-jobs`` gave every model, in words (printed with the medians)."""
    models = f"the ensemble and {' and '.join(forests)}"
    if n_jobs == 1:
        return f"one each ({models}: n_jobs=1, one numba thread)"
    return (f"n_jobs={n_jobs} for {models} (the ensemble's members and the forests' trees in "
            f"parallel; numba kernels with {threads} threads, {os.cpu_count()} cores)")


if __name__ == "__main__":
    raise SystemExit(main())
