"""Speed and quality of the HDP sampler on a child-first table (e.g. synth_N25000.csv).

    python benchmarks/sampler.py --data BENCH/synth_N25000.csv
    python benchmarks/sampler.py --data BENCH/synth_N250000.csv --threads 2 --chains 2

Prints, for the table's context tree: rows, nodes per depth, K, iterations, sampling seconds (best
of ``--repeat`` runs, wall clock, and the process CPU seconds of that run), ns per (node x value x
iteration) from both, the first call's time (numba compilation or cache load, measured on a warm-up
call of 10 iterations) and, when a ``*_truth.csv`` file sits next to the data (or ``--truth`` names
one), KL(truth || estimate) over the observed leaves weighted by their frequency in the data.
``--threads T`` (T > 1) also times the same work on one thread and prints the speed-up. ``--json``
prints one JSON object instead.

The reference implementation's figures on the same files (REFERENCE-FACTS.md): 183-199 ns per
(node x value x iteration), 5.5-6.0 s at 25,000 rows; 217-226 ns, 8.9-9.3 s at 250,000 rows; KL
0.0138 and 0.0023.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

T_START = time.perf_counter()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath.estimate.hdp import HDPOptions, estimate_trees  # noqa: E402
from fastpath.estimate.hdp.stirling import LogStirlingTable  # noqa: E402
from fastpath.estimate.table_io import CodedTree, tree_from_frame  # noqa: E402


def kl_to_truth(coded: CodedTree, probabilities: np.ndarray, truth: pd.DataFrame) -> float:
    """sum over observed leaves of (n_leaf / N) KL(theta_true || p_leaf)."""
    tree = coded.tree
    names = list(coded.conditioning_names)
    theta_cols = [c for c in truth.columns if c.startswith("theta")]
    child_values = [int(c[len("theta"):]) for c in theta_cols]
    truth_idx = {tuple(int(v) for v in row): i for i, row in enumerate(truth[names].to_numpy())}
    theta = truth[theta_cols].to_numpy(dtype=float)
    leaves = range(tree.leaves.start, tree.leaves.stop)
    paths = tree.paths()
    total = tree.n_rows
    kl = 0.0
    for j in leaves:
        labels = tuple(int(coded.conditioning_labels[d][v]) for d, v in enumerate(paths[j]))
        true = theta[truth_idx[labels]]
        # estimate re-ordered to the truth's value order
        est = np.array([probabilities[j, coded.child_labels.index(v)]
                        if v in coded.child_labels else 0.0 for v in child_values])
        mask = true > 0
        kl += tree.counts[j].sum() / total * float(np.sum(true[mask] * np.log(true[mask]
                                                                              / est[mask])))
    return kl


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--truth", default=None)
    ap.add_argument("--iterations", type=int, default=5000)
    ap.add_argument("--tying", default="level")
    ap.add_argument("--update", default="exact")
    ap.add_argument("--root", default="exact")
    ap.add_argument("--concentration-every", type=int, default=5)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--overrelax", action="store_true")
    ap.add_argument("--chains", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    frame = pd.read_csv(args.data)
    coded = tree_from_frame(frame)
    tree = coded.tree
    table = LogStirlingTable()
    opt = HDPOptions(n_iter=args.iterations, tying=args.tying, update=args.update,
                     root=args.root, n_chains=args.chains, window=args.window,
                     concentration_every=args.concentration_every, overrelax=args.overrelax)

    t0 = time.perf_counter()
    estimate_trees([tree], opt.replace(n_iter=10, burn_in=0), seed=args.seed, n_threads=1,
                   stirling=table)
    first_call = time.perf_counter() - t0

    def timed(n_threads):
        best, cpu, res = math.inf, math.inf, None
        for _ in range(args.repeat):
            t = time.perf_counter()
            c = time.process_time()
            res = estimate_trees([tree], opt, seed=args.seed, n_threads=n_threads,
                                 stirling=table)[0]
            wall = time.perf_counter() - t
            if wall < best:
                best, cpu = wall, time.process_time() - c
        return best, cpu, res

    seconds, cpu, res = timed(args.threads)
    units = tree.n_nodes * tree.n_values * args.iterations * args.chains
    out = {
        "data": args.data,
        "rows": tree.n_rows,
        "nodes": tree.n_nodes,
        "nodes_per_depth": list(tree.nodes_per_level),
        "K": tree.n_values,
        "iterations": args.iterations,
        "chains": args.chains,
        "threads": args.threads,
        "options": {"tying": args.tying, "update": args.update, "root": args.root,
                    "concentration_every": args.concentration_every, "window": args.window,
                    "overrelax": args.overrelax},
        "seconds": round(seconds, 4),
        "ns_per_node_value_iteration": round(seconds / units * 1e9, 2),
        "cpu_seconds": round(cpu, 4),
        "cpu_ns_per_node_value_iteration": round(cpu / units * 1e9, 2),
        "first_call_seconds": round(first_call, 3),
        "process_start_to_first_result_seconds": round(t0 + first_call - T_START, 3),
        "concentration_mean": [round(float(a), 3) for a in res.concentration_mean],
    }
    if args.threads > 1:
        one, _, _ = timed(1)
        out["seconds_one_thread"] = round(one, 4)
        out["speedup"] = round(one / seconds, 2)
    truth_path = args.truth or args.data.replace(".csv", "_truth.csv")
    if os.path.exists(truth_path):
        out["kl_truth_estimate"] = round(kl_to_truth(coded, res.probabilities,
                                                     pd.read_csv(truth_path)), 5)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>40}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
