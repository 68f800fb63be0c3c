"""Is the stopping rule's Monte-Carlo standard error honest? Stopped trees against long runs.

The default sampler (``sampler="adaptive"``) stops a tree when the root mean square over the
training rows of the Monte-Carlo standard error (MCSE) of the probability each row reads is at
most the tolerance (:func:`fastpath.estimate.hdp._stopping.rows_mcse`). Batch means with short
batches underestimate an MCSE when the autocorrelation is long, so the reported error is checked
against the truth:

1. learn a classifier's structure (TAN, kDB-3, SkDB-5) on a dataset's rows and sample its
   trees with the default sampler (and any other preset asked for), as a fit would;
2. for every tree, sample a long reference of the same posterior -- 4 chains x 20,000
   iterations of the paper's moves by default, its own seed -- and take its posterior means as
   the truth (its own MCSE is reported and is small beside the tolerance);
3. the realised error of the stopped tree is the same root mean square over the training rows
   of (stopped estimate - reference) at the leaves, and the ratio realised / reported says
   how honest the reported MCSE is.

The estimator is accepted when the realised error is at most twice the tolerance for at least
95 % of the trees (docs/validation.md, "Is the stopping rule's MCSE honest?").

    python -m validation mcse-check DATASETS/credit-a.csv.gz ... \
        --samplers adaptive,adaptive-plain --out results/mcse_check.csv
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fastpath import BayesNetClassifier
from fastpath.estimate.hdp import HDPOptions, estimate_trees, rows_mcse
from fastpath.utils import write_csv

from .experiments.runner import discover_datasets, load_dataset

__all__ = ["STRUCTURES", "check_dataset", "realised_rows_error", "summarise_check"]

#: the structures checked: (label, BayesNetClassifier parameters)
STRUCTURES: dict[str, dict] = {
    "TAN": {"structure": "tan"},
    "kDB-3": {"structure": "kdb", "k": 3},
    "SkDB-5": {"structure": "skdb", "k": 5},
}


def realised_rows_error(tree, estimate: np.ndarray, reference: np.ndarray) -> float:
    """Root mean square over the training rows of ``estimate - reference`` at the leaves: the
    error a prediction meets on data like the training data, weighted as ``rows_mcse`` is
    (``sqrt(sum_{leaf, k} n_leaf,k (p - p_ref)^2 / N)``)."""
    diff = np.asarray(estimate, dtype=float) - np.asarray(reference, dtype=float)
    # rows_mcse takes per-cell errors and forms exactly this weighted root mean square
    return rows_mcse(tree, np.abs(diff))


def check_dataset(
    X: pd.DataFrame,
    y,
    dataset: str,
    *,
    structures: Sequence[str] = tuple(STRUCTURES),
    samplers: Sequence[str] = ("adaptive",),
    reference_iterations: int = 20_000,
    reference_chains: int = 4,
    seed: int = 0,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """One row per tree of each structure and sampler: iterations run, reported rows MCSE,
    realised error against the long reference, the reference's own rows MCSE, and the seconds
    of both. The trees are the classifier's (its structure does not depend on the estimator);
    each sampler preset samples them with the seed a fit with ``random_state=seed`` uses, the
    reference with another."""
    rows = []
    for label in structures:
        clf = BayesNetClassifier(estimation="m", random_state=seed, **STRUCTURES[label])
        trees = clf.fit(X, y).trees_
        ref_opt = HDPOptions.preset("paper", n_iter=reference_iterations,
                                    n_chains=reference_chains)
        refs = estimate_trees(trees, ref_opt, seed=seed + 1_000_003, n_threads=n_jobs)
        for sampler in samplers:
            results = estimate_trees(trees, HDPOptions.preset(sampler), seed=seed,
                                     n_threads=n_jobs)
            for i, (res, ref) in enumerate(zip(results, refs, strict=True)):
                reported = res.rows_mcse
                realised = realised_rows_error(res.tree, res.probabilities, ref.probabilities)
                rows.append({
                    "dataset": dataset, "structure": label, "sampler": sampler, "tree": i,
                    "n_leaf_cells": int(res.tree.counts[int(res.tree.level_offsets[-2]):].size),
                    "iterations": res.n_iterations, "stop_reason": res.stop_reason,
                    "tolerance": res.options.mcse_tolerance,
                    "reported_mcse": reported, "realised_error": realised,
                    "ratio": realised / reported if reported > 0 else math.nan,
                    "reference_mcse": ref.rows_mcse,
                    "seconds": res.seconds, "reference_seconds": ref.seconds,
                })
    return pd.DataFrame(rows)


def summarise_check(frame: pd.DataFrame) -> str:
    """The verdict and the distribution of realised / reported, per sampler, as Markdown."""
    return "\n\n".join(f"sampler {s!r}: " + _summarise_one(g)
                        for s, g in frame.groupby("sampler", sort=False))


def _summarise_one(frame: pd.DataFrame) -> str:
    tol = float(frame["tolerance"].iloc[0])
    ok = frame["realised_error"] <= 2 * tol
    q = frame["ratio"].quantile([0.5, 0.9, 0.95, 0.99]).to_numpy()
    lines = [
        f"{len(frame)} trees ({frame['dataset'].nunique()} datasets x "
        f"{frame['structure'].nunique()} structures); tolerance {tol}",
        f"- realised error <= 2 x tolerance: {int(ok.sum())} of {len(frame)} trees "
        f"({ok.mean():.1%}); accepted (>= 95 %): {'yes' if ok.mean() >= 0.95 else 'NO'}",
        f"- realised error <= tolerance: {(frame['realised_error'] <= tol).mean():.1%}",
        f"- realised / reported MCSE: median {q[0]:.2f}, 90th percentile {q[1]:.2f}, "
        f"95th {q[2]:.2f}, 99th {q[3]:.2f}, max {frame['ratio'].max():.2f}",
        f"- largest realised error {frame['realised_error'].max():.4f}; largest reference MCSE "
        f"{frame['reference_mcse'].max():.4f}",
        f"- iterations per tree: median {frame['iterations'].median():.0f}, max "
        f"{frame['iterations'].max()}; at max_iter: {(frame['stop_reason'] == 'max_iter').sum()}",
        "",
        "| structure | trees | realised <= 2 tol | mean realised | median ratio | 95th pct "
        "ratio | max realised | sampling s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, g in frame.groupby("structure", sort=False):
        lines.append(f"| {label} | {len(g)} | {(g['realised_error'] <= 2 * tol).mean():.1%} | "
                     f"{g['realised_error'].mean():.4f} | {g['ratio'].median():.2f} | "
                     f"{g['ratio'].quantile(0.95):.2f} | {g['realised_error'].max():.4f} | "
                     f"{g['seconds'].sum():.1f} |")
    return "\n".join(lines)


def main(paths: Sequence[str], out: str | None, *, structures: Sequence[str],
         samplers: Sequence[str], reference_iterations: int, reference_chains: int, seed: int,
         typing: str) -> int:
    frames = []
    done: set[tuple[str, str]] = set()
    if out is not None and Path(out).exists():  # resume: keep what an earlier run measured
        old = pd.read_csv(out)
        old = old[old["sampler"].isin(samplers)]
        frames.append(old)
        # a (dataset, structure) is done when every sampler asked for was measured on it
        have = old.groupby(["dataset", "structure"])["sampler"].agg(set)
        done = {key for key, got in have.items() if set(samplers) <= got}
    for ref in discover_datasets(paths):
        todo = [s for s in structures if (ref.name, s) not in done]
        if not todo:
            continue
        X, y = load_dataset(ref, typing)
        t0 = time.perf_counter()
        frame = check_dataset(X, y, ref.name, structures=todo, samplers=samplers,
                              reference_iterations=reference_iterations,
                              reference_chains=reference_chains, seed=seed)
        frames.append(frame)
        print(f"{ref.name}: {len(frame)} trees, worst ratio {frame['ratio'].max():.2f}, "
              f"worst realised {frame['realised_error'].max():.4f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        if out is not None:
            write_csv(pd.concat(frames, ignore_index=True), out, index=False)
    if not frames:
        print("no dataset given")
        return 2
    print(summarise_check(pd.concat(frames, ignore_index=True)))
    return 0
