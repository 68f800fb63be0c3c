"""How stable is selective kDB's choice of (n*, k*) when only a sample of rows is scored?

    python benchmarks/selection_sample.py DATASETS --datasets adult,connect-4,nursery,pendigits

For every dataset (``--typing manifest``, the first training fold of the experiments' protocol,
Weka's MDL codes), six kDB-5 structures as ESKDB's members build them (member 0's mutual-
information order, five orders drawn by :func:`fastpath.structure.sample_order`) are scored by
leave-one-out on every training row, then on samples of ``--sizes`` rows
(:func:`fastpath.structure.loo_scores` with ``max_rows``, three sample keys each). For each size
it prints how often the sample chooses the full data's (n*, k*), the regret (the full-data RMSE
of the sample's choice minus the full-data minimum; mean and largest) and the time of the
sampled scoring as a share of the full one (one thread).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    from fastpath import BayesNetClassifier
    from fastpath.structure import kdb, loo_scores, mutual_information, sample_order
    from fastpath.utils import limit_threads
    from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--datasets", default="", help="only these names (comma-separated)")
    ap.add_argument("--sizes", default="1000,2000,5000")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)
    names = {n for n in args.datasets.split(",") if n}
    sizes = [int(s) for s in args.sizes.split(",")]
    for ref in discover_datasets(args.data):
        if names and ref.name not in names:
            continue
        X, labels = load_dataset(ref, args.typing)
        y = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        _, _, train, _ = next(iter(CrossValidation().splits(y)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            coder = BayesNetClassifier(structure="nb", estimation="m", m=1.0)
            coder.fit(X.iloc[train], labels[train])
        codes = np.ascontiguousarray(coder.transform_codes(X.iloc[train]), dtype=np.int64)
        yt = y[train]
        cards = list(coder.encoder_.cardinalities_)
        n_classes = int(y.max()) + 1
        n = codes.shape[0]
        rng = np.random.default_rng(1)
        mi = mutual_information(codes, yt, cards, n_classes)
        found: dict[int, list[tuple[bool, float, float]]] = {s: [] for s in sizes}
        for member in range(6):
            order = None if member == 0 else sample_order(mi, rng)
            full_structure = kdb(codes, yt, cards, n_classes, 5, order)
            with limit_threads(1):
                t0 = time.perf_counter()
                full = loo_scores(codes, yt, cards, n_classes, full_structure)
                full_s = time.perf_counter() - t0
                best = np.unravel_index(np.argmin(full), full.shape)
                for size in sizes:
                    if size >= n:
                        continue
                    for key in (11, 12, 13):
                        t0 = time.perf_counter()
                        sub = loo_scores(codes, yt, cards, n_classes, full_structure,
                                         max_rows=size, sample_key=key)
                        share = (time.perf_counter() - t0) / full_s
                        chosen = np.unravel_index(np.argmin(sub), sub.shape)
                        found[size].append((chosen == best, float(full[chosen] - full[best]),
                                            share))
        print(f"{ref.name}: {n} training rows, {codes.shape[1]} attributes, {n_classes} classes")
        for size, runs in found.items():
            if runs:
                same, regret, share = (np.asarray(v) for v in zip(*runs, strict=True))
                print(f"  {size:>6} rows: same (n*, k*) {same.mean():.2f}, regret mean "
                      f"{regret.mean():.5f} largest {regret.max():.5f}, time {share.mean():.2f}"
                      " of every row's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
