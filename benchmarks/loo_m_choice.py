"""The m choice's leave-one-out scores: whole-model kernel against the full (n*, k*) kernel.

    python benchmarks/loo_m_choice.py DATASETS/thyroid.csv.gz DATASETS/connect-4.csv.gz

``m="auto"`` scores each candidate m by the leave-one-out RMSE of the whole model
(:func:`fastpath.estimate._m_choice.loo_m_scores`). It used to run the selection kernel, which
computes a softmax for every (n*, k*) of every row, and read its last entry; it now runs a
kernel for the whole model only. For every dataset (class column last; ``--typing manifest``
as in the experiments) this script codes the whole table (Weka's MDL), selects a SkDB-5
structure, and times, on one numba thread, ``loo_m_scores`` over the candidate grid against
the same sums taken from :func:`~fastpath.structure._selective.loo_row_errors` row by row (the
selection kernel's rows, summed in the same chunks), ``--repeat`` times interleaved; it checks
that both give the same floating-point RMSE and prints the ratio of the minimum times.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath.counts import CountAccumulator
from fastpath.encode import TableEncoder
from fastpath.estimate import M_GRID_POSITIVE
from fastpath.estimate._m_choice import loo_m_scores
from fastpath.structure import select_skdb, tree_specs
from fastpath.structure._selective import (
    full_depth,
    full_model_rmse,
    loo_chunk_starts,
    loo_model,
    loo_row_errors,
    loo_row_scratch,
    loo_settings,
)
from validation.experiments.runner import discover_datasets, load_dataset


@njit(cache=True)
def _every_entry_sums(codes, y, model, settings, chunk_starts, sse):
    """The selection kernel's sums, one thread: sse[chunk, n* - 1, k*]."""
    n_classes = model.class_counts.shape[0]
    n_trees = model.child_col.shape[0]
    max_k = settings.max_k
    cum, prob, nodes = loo_row_scratch(n_classes, max_k)
    row = np.empty((n_trees, max_k + 1))
    for h in range(chunk_starts.shape[0] - 1):
        for r in range(chunk_starts[h], chunk_starts[h + 1]):
            loo_row_errors(codes, y, r, model, settings, cum, prob, nodes, row)
            for a in range(n_trees):
                for k in range(max_k + 1):
                    sse[h, a, k] += row[a, k]


def every_entry_scores(specs, trees, class_counts, codes, y, grid) -> dict[float, float]:
    """What ``loo_m_scores`` returned before: the whole model's entry of the full sums."""
    model = loo_model(specs, trees, class_counts)
    max_k = full_depth(specs)
    chunk_starts = loo_chunk_starts(codes.shape[0])
    scores = {}
    for m in grid:
        sse = np.zeros((chunk_starts.size - 1, len(specs), max_k + 1))
        settings = loo_settings(m, False, max_k, codes.shape[0])
        _every_entry_sums(codes, y, model, settings, chunk_starts, sse)
        scores[float(m)] = full_model_rmse(sse.sum(axis=0), codes.shape[0])
    return scores


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)
    numba.set_num_threads(1)
    ratios = []
    for ref in discover_datasets(args.data):
        X, labels = load_dataset(ref, args.typing)
        y = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        n_classes = int(y.max()) + 1
        encoder = TableEncoder("auto").fit(X, y, n_classes)
        codes = encoder.transform(X).astype(np.int64)
        cards = encoder.cardinalities_
        selection = select_skdb(codes, y, cards, n_classes, 5)
        specs = tree_specs(selection.structure, cards, n_classes, selection.attributes)
        counts = CountAccumulator(specs).update(codes, y)
        trees = [counts.tree(t) for t in range(1, len(specs))]
        class_counts = counts.tree(0).counts[0]
        arguments = (specs[1:], trees, class_counts, codes, y, M_GRID_POSITIVE)
        new, old = loo_m_scores(*arguments), every_entry_scores(*arguments)  # compiles both
        if new != old:
            raise AssertionError(f"{ref.name}: the kernels disagree: {new} != {old}")
        best = {"whole model": np.inf, "every entry": np.inf}
        for _ in range(args.repeat):
            for name, score in (("whole model", loo_m_scores),
                                ("every entry", every_entry_scores)):
                t0 = time.perf_counter()
                score(*arguments)
                best[name] = min(best[name], time.perf_counter() - t0)
        ratio = best["every entry"] / best["whole model"]
        ratios.append(ratio)
        print(f"{ref.name}: {codes.shape[0]} rows, {len(trees)} trees, {n_classes} classes, "
              f"{len(M_GRID_POSITIVE)} candidates: every entry {best['every entry']:.3f} s, "
              f"whole model {best['whole model']:.3f} s, ratio {ratio:.2f} (identical scores)",
              flush=True)
    print(f"median ratio over {len(ratios)} datasets: {np.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
