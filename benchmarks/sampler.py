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

``--baseline REF`` compares the working tree with the git revision REF in one run: REF is checked
out into a temporary worktree (``git worktree add --detach``, removed at the end), both sides are
first run once to warm their numba caches, then ``--pairs`` P pairs of processes run the same
timing alternately, A (REF: ``PYTHONPATH`` at the worktree) then B (the working tree), each taking
the best of ``--repeat`` runs after its own warm-up call (compilation and cache loading excluded).
Prints every pair's ratio B / A of the wall and CPU seconds, their median, min-max and
interquartile range, and whether both sides' posterior means were bit-identical::

    python benchmarks/sampler.py --data BENCH/synth_N25000.csv --baseline ec09d08 --pairs 5

The reference implementation's figures on the same files (REFERENCE-FACTS.md): 183-199 ns per
(node x value x iteration), 5.5-6.0 s at 25,000 rows; 217-226 ns, 8.9-9.3 s at 250,000 rows; KL
0.0138 and 0.0023.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T_START = time.perf_counter()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Environment variable naming the checkout whose ``fastpath`` is benchmarked (``--baseline``
#: sets it in its child processes); default: the checkout holding this script.
ROOT_ENV = "HDPBN_BENCH_ROOT"
sys.path.insert(0, os.environ.get(ROOT_ENV, str(ROOT)))

import fastpath  # noqa: E402
from fastpath.estimate import CodedTree, tree_from_frame  # noqa: E402
from fastpath.estimate.hdp import HDPOptions, LogStirlingTable, estimate_trees  # noqa: E402


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
    ap.add_argument("--concentration-draws", default="gamma", choices=("gamma", "uniforms"))
    ap.add_argument("--chains", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--baseline", default=None, metavar="REF",
                    help="git revision to time side by side with the working tree")
    ap.add_argument("--pairs", type=int, default=5,
                    help="with --baseline: alternating (REF, working tree) process pairs")
    # in --baseline's child processes: no one-thread comparison (it would double their time)
    ap.add_argument("--no-one-thread", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.baseline is not None:
        return compare_with_baseline(args)

    frame = pd.read_csv(args.data)
    coded = tree_from_frame(frame)
    tree = coded.tree
    table = LogStirlingTable()
    opt = HDPOptions.preset("paper", n_iter=args.iterations, tying=args.tying, update=args.update,
                     root=args.root, n_chains=args.chains, window=args.window,
                     concentration_every=args.concentration_every, overrelax=args.overrelax,
                     concentration_draws=args.concentration_draws)

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
                    "overrelax": args.overrelax,
                    "concentration_draws": args.concentration_draws},
        "seconds": round(seconds, 4),
        "ns_per_node_value_iteration": round(seconds / units * 1e9, 2),
        "cpu_seconds": round(cpu, 4),
        "cpu_ns_per_node_value_iteration": round(cpu / units * 1e9, 2),
        "first_call_seconds": round(first_call, 3),
        "process_start_to_first_result_seconds": round(t0 + first_call - T_START, 3),
        "concentration_mean": [round(float(a), 3) for a in res.concentration_mean],
        # identifies the posterior means exactly (same seed and options: same digest)
        "probabilities_sha256": hashlib.sha256(
            np.ascontiguousarray(res.probabilities).tobytes()).hexdigest(),
        "fastpath_root": str(Path(fastpath.__file__).resolve().parents[1]),
    }
    if args.threads > 1 and not args.no_one_thread:
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


def _child_argv(args) -> list[str]:
    """This script's options for one timing process of :func:`compare_with_baseline`."""
    out = ["--data", str(Path(args.data).resolve()), "--iterations", str(args.iterations),
           "--tying", args.tying, "--update", args.update, "--root", args.root,
           "--concentration-every", str(args.concentration_every), "--window", str(args.window),
           "--concentration-draws", args.concentration_draws,
           "--chains", str(args.chains), "--threads", str(args.threads),
           "--repeat", str(args.repeat), "--seed", str(args.seed), "--json", "--no-one-thread"]
    if args.truth:
        out += ["--truth", str(Path(args.truth).resolve())]
    if args.overrelax:
        out.append("--overrelax")
    return out


def _run_child(root: Path, argv: list[str]) -> dict:
    """Run this script in a fresh process importing ``fastpath`` from ``root``; its JSON."""
    env = dict(os.environ, PYTHONPATH=str(root), **{ROOT_ENV: str(root)})
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"timing process for {root} failed:\n{proc.stderr}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if Path(out["fastpath_root"]) != root.resolve():  # guard against importing the wrong tree
        raise RuntimeError(f"timing process imported fastpath from {out['fastpath_root']}, "
                           f"expected {root}")
    return out


def _spread(x: np.ndarray) -> dict:
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return {"median": round(float(med), 4), "min": round(float(x.min()), 4),
            "max": round(float(x.max()), 4), "q1": round(float(q1), 4), "q3": round(float(q3), 4)}


def compare_with_baseline(args) -> int:
    """Time the revision ``args.baseline`` (A) and the working tree (B) in alternating processes.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options; ``baseline`` is the git revision, ``pairs`` the number of (A, B)
        process pairs.

    Returns
    -------
    int
        0 (the exit status).
    """
    if args.pairs < 1:
        raise SystemExit("--pairs must be >= 1")
    tmp = Path(tempfile.mkdtemp(prefix="hdpbn-baseline-"))
    tree_a = tmp / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree_a),
                    args.baseline], check=True, capture_output=True, text=True)
    try:
        rev = subprocess.run(["git", "-C", str(tree_a), "rev-parse", "--short", "HEAD"],
                             check=True, capture_output=True, text=True).stdout.strip()
        child = _child_argv(args)
        # warm the numba caches (the worktree's are empty: its kernels compile here) so that no
        # timed process pays for compilation; each process also excludes its own first call
        warm = list(child)
        warm[warm.index("--iterations") + 1] = "20"
        warm[warm.index("--repeat") + 1] = "1"
        for root in (tree_a, ROOT):
            _run_child(root, warm)
        rows = []
        for i in range(args.pairs):
            a = _run_child(tree_a, child)
            b = _run_child(ROOT, child)
            rows.append((a, b))
            if not args.json:
                print(f"pair {i + 1}: A {a['seconds']:.4f} s (cpu {a['cpu_seconds']:.4f})  "
                      f"B {b['seconds']:.4f} s (cpu {b['cpu_seconds']:.4f})  "
                      f"B/A wall {b['seconds'] / a['seconds']:.4f} "
                      f"cpu {b['cpu_seconds'] / a['cpu_seconds']:.4f}", flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree_a)],
                       check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    wall = np.array([b["seconds"] / a["seconds"] for a, b in rows])
    cpu = np.array([b["cpu_seconds"] / a["cpu_seconds"] for a, b in rows])
    digests = {r["probabilities_sha256"] for pair in rows for r in pair}
    out = {
        "data": args.data,
        "baseline": f"{args.baseline} ({rev})",
        "iterations": args.iterations,
        "chains": args.chains,
        "threads": args.threads,
        "options": {"tying": args.tying, "update": args.update, "root": args.root,
                    "concentration_every": args.concentration_every, "window": args.window,
                    "overrelax": args.overrelax,
                    "concentration_draws": args.concentration_draws},
        "pairs": args.pairs,
        "repeat_per_process": args.repeat,
        "seconds_a": [r[0]["seconds"] for r in rows],
        "seconds_b": [r[1]["seconds"] for r in rows],
        "cpu_seconds_a": [r[0]["cpu_seconds"] for r in rows],
        "cpu_seconds_b": [r[1]["cpu_seconds"] for r in rows],
        "ratio_wall_b_over_a": [round(float(x), 4) for x in wall],
        "ratio_cpu_b_over_a": [round(float(x), 4) for x in cpu],
        "ratio_wall": _spread(wall),
        "ratio_cpu": _spread(cpu),
        "bit_identical_probabilities": len(digests) == 1,
    }
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"A = {out['baseline']}, B = working tree; ratio B / A (< 1: B faster), "
          f"{args.pairs} pairs, best of {args.repeat} runs per process")
    for name in ("ratio_wall", "ratio_cpu"):
        sp = out[name]
        print(f"{name:>10}: median {sp['median']:.4f}  min-max {sp['min']:.4f}-{sp['max']:.4f}  "
              f"IQR {sp['q1']:.4f}-{sp['q3']:.4f}")
    print(f"posterior means bit-identical in all {2 * args.pairs} processes: "
          f"{out['bit_identical_probabilities']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
