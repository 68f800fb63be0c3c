"""The HDP sampler's presets side by side: fit seconds, sampling seconds and RMSE per fold.

    python benchmarks/sampler_presets.py DATASETS --splits 2 --structures tan,kdb3,skdb5
    python benchmarks/sampler_presets.py DATASETS --splits 1 --structures eskdb
    python benchmarks/sampler_presets.py DATASETS/credit-a.csv.gz --variants paper,strict

For every dataset (class column last; ``--typing manifest`` as in the experiments), the first
``--splits`` training/test splits of the experiments' protocol (2-fold x 5, seed 0), every
structure and every variant, a ``BayesNetClassifier(estimation="hdp")`` is fitted on the training
rows and scored on the test rows, single-threaded (``n_jobs=1``, one numba thread, after a
warm-up that compiles the kernels); structure ``eskdb`` is ``ESKDBClassifier()`` (20 selective
kDB-5 members), whose ``paper`` variant is the authors' 1,000 iterations. The variants of one
fold run back to back, in turn, so a noisy machine affects them alike. Variants: ``paper``
(``sampler="paper"``: 5,000 plain Gibbs iterations), ``adaptive`` (``sampler="adaptive"``, the
default: overrelaxed moves with the concentrations every iteration, each tree until the root
mean square over the training rows of the MCSE of what each row reads is <= 0.01),
``adaptive-plain`` (the same rule, the paper's plain moves), ``strict`` (``sampler="strict"``,
formerly ``"fast"``: overrelaxed, each tree until the MCSE of every probability is <= 0.01 and
its chain passes R-hat <= 1.01 and bulk ESS >= 100) and ``strict-mcse`` (the same with
``convergence_checks=False``: the MCSE alone decides).

Prints one JSON line per (dataset, structure, variant) with the sums over its folds (and how
many tree fits ran each number of iterations), then per structure and variant: total fit
seconds, total sampling seconds (the chains' own time, summed over trees), their ratios to
``paper``, the RMSE W-D-L against ``paper`` over the datasets (mean RMSE of the folds; the same
metric function for every variant), the share of tree fits that stopped at ``max_iter``, and
the distribution of iterations per tree fit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.evaluation import align_proba, rmse
from validation.experiments.classifiers import parse_classifier
from validation.experiments.reporting import sign_test
from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset

#: each variant's preset and the options that override it
VARIANTS: dict[str, tuple[str, dict]] = {
    "paper": ("paper", {}),
    "adaptive": ("adaptive", {}),
    "adaptive-plain": ("adaptive-plain", {}),
    "strict": ("strict", {}),
    "strict-mcse": ("strict", {"convergence_checks": False}),
}
#: the ensemble's paper variant: the authors' length
ESKDB_PAPER_ITERATIONS = 1000


def _sampler(variant: str, **overrides) -> str | HDPOptions:
    """The ``sampler`` of ``variant``, ``overrides`` applied to its options."""
    preset, options = VARIANTS[variant]
    options = {**options, **overrides}
    return HDPOptions.preset(preset, **options) if options else preset


def _model(structure: str, variant: str, seed: int, **overrides):
    if structure == "eskdb":
        if variant == "paper":
            overrides = {"n_iter": ESKDB_PAPER_ITERATIONS, **overrides}
        return ESKDBClassifier(random_state=seed, n_jobs=1,
                               sampler=_sampler(variant, **overrides))
    spec = parse_classifier(f"{structure}-hdp")
    return BayesNetClassifier(structure=spec.structure, k=spec.k, estimation="hdp",
                              random_state=seed, n_jobs=1, sampler=_sampler(variant, **overrides))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--structures", default="tan,kdb3,skdb5")
    ap.add_argument("--variants", default="paper,adaptive")
    ap.add_argument("--splits", type=int, default=10, help="first N of the 10 splits")
    ap.add_argument("--limit", type=int, default=0, help="only the first N datasets (by size)")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)
    structures = [s.strip() for s in args.structures.split(",") if s.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or "paper" not in variants:
        ap.error(f"--variants: known {tuple(VARIANTS)}, 'paper' included; got {variants}")
    numba.set_num_threads(1)
    from fastpath.io import load_dataset as load_bundled

    Xw, yw = load_bundled("credit-a")  # warm-up: compile or load every kernel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in variants:
            _model("tan", v, 0, n_iter=300).fit(Xw.iloc[:200], yw.iloc[:200])
        _model("eskdb", "paper", 0).set_params(n_estimators=2).fit(Xw.iloc[:200], yw.iloc[:200])
    refs = discover_datasets(args.data)
    if args.limit:
        refs = refs[: args.limit]
    # (structure, variant) -> per dataset: [fit s, sampling s, mean RMSE, tree fits, at max_iter]
    table: dict[tuple[str, str], dict[str, list[float]]] = {}
    # (structure, variant) -> how many tree fits ran each number of iterations
    table_lengths: dict[tuple[str, str], Counter] = {}
    for ref in refs:
        X, labels = load_dataset(ref, args.typing)
        classes, y_codes = np.unique(labels, return_inverse=True)
        splits = list(CrossValidation().splits(y_codes))[: args.splits]
        for structure in structures:
            sums = {v: [0.0, 0.0, 0.0, 0, 0] for v in variants}
            lengths = {v: Counter() for v in variants}
            for _, where, train, test in splits:
                seed = 1000 * where["repeat"] + where["fold"]
                for v in variants:
                    model = _model(structure, v, seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0 = time.perf_counter()
                        model.fit(X.iloc[train], labels[train])
                        fit_s = time.perf_counter() - t0
                    proba = align_proba(model.predict_proba(X.iloc[test]), model.classes_,
                                        classes)
                    res = model.hdp_results_
                    s = sums[v]
                    s[0] += fit_s
                    s[1] += sum(r.seconds for r in res)
                    s[2] += rmse(y_codes[test], proba) / len(splits)
                    s[3] += len(res)
                    s[4] += sum(r.stop_reason == "max_iter" for r in res)
                    lengths[v].update(r.n_iterations for r in res)
                    table_lengths.setdefault((structure, v), Counter()).update(
                        r.n_iterations for r in res)
            for v in variants:
                table.setdefault((structure, v), {})[ref.name] = sums[v]
                print(json.dumps({"dataset": ref.name, "structure": structure, "variant": v,
                                  "fit_seconds": round(sums[v][0], 3),
                                  "sampling_seconds": round(sums[v][1], 3),
                                  "rmse": round(sums[v][2], 5), "tree_fits": sums[v][3],
                                  "at_max_iter": sums[v][4],
                                  "iterations": {str(k): n for k, n in
                                                 sorted(lengths[v].items())}}), flush=True)
    print()
    print("| structure | variant | datasets | fit s | paper / variant | sampling s | "
          "paper / variant | RMSE W-D-L vs paper (p) | tree fits at max_iter |")
    print("|---|---|---|---|---|---|---|---|---|")
    for structure in structures:
        base = table[(structure, "paper")]
        for v in variants:
            rows = table[(structure, v)]
            fit = sum(r[0] for r in rows.values())
            samp = sum(r[1] for r in rows.values())
            w = sum(rows[d][2] < base[d][2] for d in rows)
            lo = sum(rows[d][2] > base[d][2] for d in rows)
            dr = len(rows) - w - lo
            fits = sum(r[3] for r in rows.values())
            at_max = sum(r[4] for r in rows.values())
            bfit = sum(r[0] for r in base.values())
            bsamp = sum(r[1] for r in base.values())
            wdl = "-" if v == "paper" else f"{w}-{dr}-{lo} ({sign_test(w, lo):.2f})"
            print(f"| {structure} | {v} | {len(rows)} | {fit:.1f} | {bfit / fit:.2f} | "
                  f"{samp:.1f} | {bsamp / samp:.2f} | {wdl} | {at_max} of {fits} |")
    print()
    print("iterations per tree fit (share of the variant's tree fits):")
    for (structure, v), counts in table_lengths.items():
        total = sum(counts.values())
        shares = ", ".join(f"{k}: {n / total:.1%}" for k, n in sorted(counts.items()))
        print(f"  {structure} {v}: {shares}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
