#!/usr/bin/env python3
# Copied (but for this header and line breaks) from the benchmark package the authors' Java code was
# measured with (the project's shared bench/gen_synth.py), so that docs/sampler.md's synthetic
# files can be regenerated: `python benchmarks/gen_synth.py` writes synth_N25000.csv (md5
# 4ca1690b782bf587303caeb210b62d39), `--n 250000 --out synth_N250000.csv` the larger one
# (md5 7a9ad3374c37164144c44598d5cf9ccf).
"""Synthetic categorical data for benchmarking HDP CPT estimation.

Writes CSV (header + integer codes).  Column order = HDP tree order:
  col 0  = child (the conditioned/target variable of the CPT, K values)
  col 1  = y (class), col 2.. = parents p1..pm  (branching order root->leaf)
Generative model: y ~ Cat(pi); p_i | y ~ Cat(phi_{i,y}) with phi ~ Dir(1.5);
child | (y,p1..pm) drawn from a hierarchical Dirichlet tree over the same
branching order: theta_root ~ Dir(3), theta_node ~ Dir(a_depth * theta_parent).
Usage: python3 gen_synth.py [--n 25000] [--seed 20180801] [--k 4]
                            [--arities 3,5,4,4,3,3] [--out synth_N25000.csv]
(arities = class arity followed by parent arities)
"""
import argparse
import itertools

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=25000)
ap.add_argument("--seed", type=int, default=20180801)
ap.add_argument("--k", type=int, default=4)
ap.add_argument("--arities", default="3,5,4,4,3,3")
ap.add_argument("--out", default="synth_N25000.csv")
a = ap.parse_args()
rng = np.random.default_rng(a.seed)
ar = [int(x) for x in a.arities.split(",")]
K, N, m = a.k, a.n, len(ar)
pi = np.array([0.5, 0.3, 0.2])[:ar[0]] if ar[0] == 3 else rng.dirichlet(np.ones(ar[0]))
pi = pi / pi.sum()
phi = [rng.dirichlet(0.7 * np.ones(ar[i]), size=ar[0]) for i in range(1, m)]
conc = [20.0, 10.0, 10.0, 5.0, 5.0, 5.0, 5.0, 5.0][:m]
theta = {(): rng.dirichlet(3.0 * np.ones(K))}
for d in range(1, m + 1):  # deterministic lexicographic creation of every node
    for path in itertools.product(*[range(v) for v in ar[:d]]):
        theta[path] = rng.dirichlet(np.maximum(conc[d - 1] * theta[path[:-1]], 1e-3))
y = rng.choice(ar[0], size=N, p=pi)
cols = [y]
for i in range(1, m):
    u = rng.random(N)
    cdf = np.cumsum(phi[i - 1][y], axis=1)
    cols.append(np.minimum((u[:, None] > cdf).sum(1), ar[i] - 1))
X = np.stack(cols, 1)
u = rng.random(N)
child = np.empty(N, dtype=int)
for r in range(N):
    cdf = np.cumsum(theta[tuple(int(v) for v in X[r])])
    child[r] = min(int((u[r] > cdf).sum()), K - 1)
header = "child,y," + ",".join(f"p{i}" for i in range(1, m))
np.savetxt(a.out, np.column_stack([child, X]), fmt="%d", delimiter=",", header=header, comments="")
# ground-truth leaf CPT for evaluation: one row per leaf path
with open(a.out.replace(".csv", "_truth.csv"), "w") as f:
    f.write("y," + ",".join(f"p{i}" for i in range(1, m)) + ","
            + ",".join(f"theta{k}" for k in range(K)) + "\n")
    for path in itertools.product(*[range(v) for v in ar]):
        f.write(",".join(map(str, path)) + "," + ",".join(f"{t:.8f}" for t in theta[path]) + "\n")
print(f"wrote {a.out}: N={N} K={K} arities={ar} leaves={int(np.prod(ar))}")
