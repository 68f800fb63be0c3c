"""ESS per second of fastpath's collapsed Gibbs sampler against NUTS, tree by tree.

``python -m validation agreement --full`` reports ESS per second of both samplers from its own
runs, but fastpath there traces every node only every 25th iteration (memory), which caps its
ESS at the number of trace points for quantities that mix fast: a lower bound. This script
re-runs fastpath alone on each suite tree tracing **every** iteration (4 chains x 10,000
iterations after 1,000 burn-in, one thread, the JIT warmed up first) in four settings -- plain
Gibbs (the paper's sampler) and overrelaxed (``HDPOptions(overrelax=True)``), each with the
reference's schedule (concentrations re-sampled every 5th iteration) and with re-sampling every
iteration -- and divides by the NUTS figures stored in the agreement results::

    python benchmarks/ess_per_second.py --agreement results/agreement

Concentrations: the smallest bulk ESS over tying groups; leaves: the median bulk ESS over the
probabilities of up to 120 leaves (evenly spaced; all when fewer), as in the agreement report.
Prints a markdown table and the medians over trees.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

#: (label, concentration_every, overrelax)
SETTINGS = (("Gibbs, every 5", 5, False), ("Gibbs, every 1", 1, False),
            ("overrelaxed, every 5", 5, True), ("overrelaxed, every 1", 1, True))


def fast_ess_per_second(tree, tying: str, seed: int, every: int, n_iter: int,
                        overrelax: bool = False) -> dict:
    from fastpath.hdp import HDPOptions, estimate_tree
    from validation.agreement import _ess

    leaves = np.flatnonzero(tree.leaves)
    traced = leaves[np.unique(np.linspace(0, leaves.size - 1, min(120, leaves.size)).astype(int))]

    def opts(n, burn):
        return HDPOptions(n_iter=n, burn_in=burn, tying=tying, n_chains=4, thin=1,
                          concentration_every=every, overrelax=overrelax,
                          trace_nodes=tuple(int(i) for i in traced))

    estimate_tree(tree, opts(20, 10), seed=seed, n_threads=1)  # compile / load the cache
    t0 = time.perf_counter()
    res = estimate_tree(tree, opts(n_iter + 1000, 1000), seed=seed, n_threads=1)
    seconds = time.perf_counter() - t0
    tr = res.trace
    conc = tr.concentrations[:, tr.kept]
    nodes = tr.node_probabilities[:, tr.kept]
    ess_conc = float(np.nanmin(_ess(conc))) if conc.shape[2] else float("nan")
    ess_leaf = float(np.nanmedian(_ess(nodes)))
    return {"seconds": seconds, "conc": ess_conc / seconds, "leaf": ess_leaf / seconds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agreement", required=True, help="folder of agreement results (JSON)")
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--trees", nargs="*", help="suite trees (default: all with results)")
    args = ap.parse_args(argv)
    from validation import suite

    warnings.simplefilter("ignore")
    names = args.trees or [n for n in suite.names()
                           if (Path(args.agreement) / f"{n}.json").exists()]
    print("ESS per second ratio fastpath / NUTS, concentrations / leaves:\n")
    print("| tree | nodes | NUTS conc. ESS/s | NUTS leaf ESS/s | "
          + " | ".join(label for label, _, _ in SETTINGS) + " |")
    print("|---|---|---|---|" + "---|" * len(SETTINGS))
    ratios = {label: ([], []) for label, _, _ in SETTINGS}
    for name in names:
        rec = json.loads((Path(args.agreement) / f"{name}.json").read_text())
        nuts = rec["nuts"]
        n_conc = nuts["min_ess_conc"] / nuts["seconds"]
        n_leaf = nuts["median_ess_leaf"] / nuts["seconds"]
        entry = suite.get(name)
        tree = entry.build()
        cells = []
        for label, every, overrelax in SETTINGS:
            f = fast_ess_per_second(tree, entry.tying, entry.seed, every, args.iterations,
                                    overrelax)
            rc, rl = f["conc"] / n_conc, f["leaf"] / n_leaf
            ratios[label][0].append(rc)
            ratios[label][1].append(rl)
            cells.append(f"{rc:,.0f}x / {rl:,.0f}x")
        print(f"| {name} | {tree.n_nodes} | {n_conc:,.1f} | {n_leaf:,.1f} | " + " | ".join(cells)
              + " |", flush=True)
    print()
    for label, (rc, rl) in ratios.items():
        print(f"median ratio over {len(rc)} trees, {label}: concentrations {np.median(rc):,.0f}x "
              f"({sum(r >= 100 for r in rc)} trees >= 100x), leaves {np.median(rl):,.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
