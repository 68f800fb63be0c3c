"""What the credible intervals cost, and that asking for nothing new costs nothing.

Usage::

    python benchmarks/intervals_cost.py --baseline /tmp/base   # a checkout of the base commit
    python benchmarks/intervals_cost.py                        # the intervals' cost only

With ``--baseline``, the default fit (``BayesNetClassifier(structure="kdb", k=2)``, default
sampler, seed 0) is fitted, saved and timed predicting on each bundled dataset by this tree and
by the baseline tree, each in its own process (side by side, one run): the probabilities and
the saved model's arrays are compared bit for bit, and the prediction times are given with
their ratio. Then, in this tree, the same fit with ``record_draws=True``: its fit time, the
probabilities (the draws come from their own stream, so they are the same bits), the model
file's size, and the time of ``predict_proba_draws`` (200 draws) against ``predict_proba``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

DATASETS = ("car", "credit-a", "kr-vs-kp", "tic-tac-toe")


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(repeat: int) -> dict:
    """This process's tree: per dataset, the default fit's prediction time and the hashes of
    its probabilities and of its model file's arrays."""
    import numpy as np

    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    out = {}
    for name in DATASETS:
        X, y = load_dataset(name)
        big = X.sample(20_000, replace=True, random_state=0).reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = BayesNetClassifier(structure="kdb", k=2, random_state=0).fit(X, y)
        proba = clf.predict_proba(big)
        seconds = _best(lambda clf=clf, big=big: clf.predict_proba(big), repeat)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.npz")
            clf.save(path)
            size = os.path.getsize(path)
            with np.load(path) as archive:
                arrays = hashlib.sha256()
                for key in sorted(archive.files):
                    if key != "meta":  # the JSON holds the fit's timings
                        arrays.update(key.encode() + archive[key].tobytes())
        out[name] = {"predict_s": seconds, "rows": len(big),
                     "proba": hashlib.sha256(proba.tobytes()).hexdigest(),
                     "arrays": arrays.hexdigest(), "file_bytes": size}
    return out


def interval_costs(repeat: int) -> list[dict]:
    """The intervals' cost in this tree (module docstring)."""
    import numpy as np

    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    rows = []
    for name in DATASETS:
        X, y = load_dataset(name)
        test = X.sample(2_000, replace=True, random_state=0).reset_index(drop=True)
        fits = {}
        for draws in (False, True):
            clf = BayesNetClassifier(structure="kdb", k=2, random_state=0)
            if draws:
                clf.set_params(sampler=clf.hdp_options().replace(record_draws=True))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                clf.fit(X, y)
                fit_s = time.perf_counter() - t0
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "m.npz")
                clf.save(path)
                size = os.path.getsize(path)
            fits[draws] = (clf, fit_s, size)
        plain, with_draws = fits[False][0], fits[True][0]
        same = np.array_equal(plain.predict_proba(test), with_draws.predict_proba(test))
        proba_s = _best(lambda c=with_draws, t=test: c.predict_proba(t), repeat)
        draws_s = _best(lambda c=with_draws, t=test: c.predict_proba_draws(t), repeat)
        n_draws = with_draws.predict_proba_draws(test.head(1)).shape[0]
        kept = sum(r.draws.nbytes for r in with_draws.hdp_results_)
        rows.append({"dataset": name, "fit_s": fits[False][1], "fit_draws_s": fits[True][1],
                     "same_proba": same, "file_bytes": fits[False][2],
                     "file_draws_bytes": fits[True][2], "draws_in_memory_bytes": kept,
                     "draws": n_draws, "predict_proba_s": proba_s,
                     "predict_proba_draws_s": draws_s, "rows": len(test)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a checkout of the base commit to compare with")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.repeat)))
        return
    if args.baseline:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        results = {}
        for label, tree in (("baseline", args.baseline), ("this tree", here)):
            env = dict(os.environ, PYTHONPATH=tree)
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure",
                                   "--repeat", str(args.repeat)], env=env, cwd=tree,
                                  capture_output=True, text=True, check=True)
            results[label] = json.loads(done.stdout.strip().splitlines()[-1])
        print("| dataset | rows | predict_proba, baseline (s) | this tree (s) | ratio | "
              "probabilities | model arrays | file bytes (baseline, this) |")
        print("|---|---:|---:|---:|---:|---|---|---|")
        for name in DATASETS:
            a, b = results["baseline"][name], results["this tree"][name]
            print(f"| {name} | {a['rows']} | {a['predict_s']:.4f} | {b['predict_s']:.4f} | "
                  f"{b['predict_s'] / a['predict_s']:.2f} | "
                  f"{'identical' if a['proba'] == b['proba'] else 'DIFFER'} | "
                  f"{'identical' if a['arrays'] == b['arrays'] else 'DIFFER'} | "
                  f"{a['file_bytes']}, {b['file_bytes']} |")
        print()
    print("| dataset | fit (s) | fit, record_draws (s) | predict_proba same | model file "
          "(bytes) | with draws (bytes) | draws in memory (bytes) | draws | predict_proba "
          "(s) | predict_proba_draws (s) | rows |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in interval_costs(args.repeat):
        print(f"| {r['dataset']} | {r['fit_s']:.2f} | {r['fit_draws_s']:.2f} | "
              f"{r['same_proba']} | {r['file_bytes']} | {r['file_draws_bytes']} | "
              f"{r['draws_in_memory_bytes']} | {r['draws']} | {r['predict_proba_s']:.4f} | "
              f"{r['predict_proba_draws_s']:.3f} | {r['rows']} |")


if __name__ == "__main__":
    main()
