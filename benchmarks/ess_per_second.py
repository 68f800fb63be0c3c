"""ESS per second of fastpath's collapsed Gibbs sampler against NUTS, tree by tree, side by side.

For each suite tree this script runs NUTS on the NumPyro model (``hdpbn_ppl``, the agreement
run's full configuration: 4 chains x 1,000 warm-up + 1,000 draws, retried at higher target
acceptance on divergences; seconds of the kept run, JIT compilation included) and then fastpath
alone, tracing **every** iteration (4 chains x 10,000 iterations after 1,000 burn-in, one
thread, the JIT warmed up first) in four settings -- plain Gibbs (the paper's sampler) and
overrelaxed (``HDPOptions(overrelax=True)``), each with the reference's schedule (concentrations
re-sampled every 5th iteration) and with re-sampling every iteration -- in the same process, one
after the other, so both sides are timed on the same machine in the same state. fastpath's ESS
comes from the run traced every iteration, its seconds from the same chains run again as a user
runs them (default thinning: traces and log joint every 10th iteration; the chains are
bit-identical, which the script checks): the dense trace is the measuring instrument, and its
log joint alone costs a fifth to a third of the time. The medians with the traced run's seconds
are printed as well::

    python benchmarks/ess_per_second.py --nuts-out results/ess_nuts      # ~50 min, 26 trees

``--agreement DIR`` takes the NUTS figures from stored agreement results instead of running NUTS
(quicker, but not side by side: those runs may have shared the machine with other jobs).
(``python -m validation agreement --full`` also reports ESS per second, but fastpath there
traces every node only every 25th iteration, which caps its ESS at the number of trace points:
a lower bound.)

Concentrations: the smallest bulk ESS over tying groups; leaves: the median bulk ESS over the
probabilities of up to 120 leaves (evenly spaced; all when fewer) for fastpath, over all leaf
probabilities for NUTS, as in the agreement report. Prints a markdown table and the medians
over trees.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from fastpath.estimate.hdp import HDPOptions, estimate_tree
from hdpbn_ppl import suite
from validation import agreement as ag

#: (label, concentration_every, overrelax)
SETTINGS = (("Gibbs, every 5", 5, False), ("Gibbs, every 1", 1, False),
            ("overrelaxed, every 5", 5, True), ("overrelaxed, every 1", 1, True))


def fast_ess_per_second(tree, tying: str, seed: int, every: int, n_iter: int,
                        overrelax: bool = False) -> dict:
    leaves = np.flatnonzero(tree.leaves)
    traced = leaves[np.unique(np.linspace(0, leaves.size - 1, min(120, leaves.size)).astype(int))]

    def opts(n, burn):
        return HDPOptions.preset("paper", n_iter=n, burn_in=burn, tying=tying, n_chains=4, thin=1,
                          concentration_every=every, overrelax=overrelax,
                          trace_nodes=tuple(int(i) for i in traced))

    estimate_tree(tree, opts(20, 10), seed=seed, n_threads=1)  # compile / load the cache
    t0 = time.perf_counter()
    res = estimate_tree(tree, opts(n_iter + 1000, 1000), seed=seed, n_threads=1)
    traced_seconds = time.perf_counter() - t0
    # the same chains as a user runs them (default thinning: traces and the log joint every
    # 10th iteration): the every-iteration trace above is the measuring instrument, and its log
    # joint alone is a fifth to a third of the time on these trees
    plain = HDPOptions.preset("paper", n_iter=n_iter + 1000, burn_in=1000, tying=tying, n_chains=4,
                       concentration_every=every, overrelax=overrelax)
    t0 = time.perf_counter()
    again = estimate_tree(tree, plain, seed=seed, n_threads=1)
    seconds = time.perf_counter() - t0
    if not np.array_equal(again.probabilities, res.probabilities):
        raise RuntimeError("tracing changed the chain")  # it draws no random numbers
    tr = res.trace
    conc = tr.concentrations[:, tr.kept]
    nodes = tr.node_probabilities[:, tr.kept]
    ess_conc = float(np.nanmin(ag.bulk_ess(conc))) if conc.shape[2] else float("nan")
    ess_leaf = float(np.nanmedian(ag.bulk_ess(nodes)))
    return {"seconds": seconds, "traced_seconds": traced_seconds,
            "conc": ess_conc / seconds, "leaf": ess_leaf / seconds,
            "conc_traced": ess_conc / traced_seconds, "leaf_traced": ess_leaf / traced_seconds}


def nuts_figures(name: str, args) -> dict:
    """NUTS's ESS per second on suite tree ``name``: run now, or read from ``--agreement``."""
    if args.agreement:
        rec = json.loads((Path(args.agreement) / f"{name}.json").read_text())["nuts"]
    else:
        entry = suite.get(name)
        rec = ag.run_nuts(entry.build(), entry.tying, ag.FULL, entry.seed).to_json()
        if args.nuts_out:
            out = Path(args.nuts_out)
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.json").write_text(json.dumps({"name": name, "nuts": rec}))
    return {"conc": rec["min_ess_conc"] / rec["seconds"],
            "leaf": rec["median_ess_leaf"] / rec["seconds"], "seconds": rec["seconds"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agreement", help="take NUTS's figures from this folder of agreement "
                    "results (JSON) instead of running NUTS")
    ap.add_argument("--nuts-out", help="save each NUTS run's summary here (JSON)")
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--trees", nargs="*", help="suite trees (default: all; with --agreement: "
                    "all with results there)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.trees:
        for n in args.trees:
            suite.get(n)  # unknown names fail before any work
        names = args.trees
    elif args.agreement:
        names = [n for n in suite.names() if (Path(args.agreement) / f"{n}.json").exists()]
    else:
        names = suite.names()
    source = (f"stored in {args.agreement}" if args.agreement
              else "run side by side in this process")
    print(f"NUTS: {source}.\n")
    print("ESS per second ratio fastpath / NUTS, concentrations / leaves (fastpath: ESS of "
          "the chains traced every iteration, seconds of the same chains run with the default "
          "thinning):\n")
    print("| tree | nodes | NUTS s | NUTS conc. ESS/s | NUTS leaf ESS/s | "
          + " | ".join(label for label, _, _ in SETTINGS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(SETTINGS))
    ratios = {label: ([], []) for label, _, _ in SETTINGS}
    traced = {label: ([], []) for label, _, _ in SETTINGS}
    for name in names:
        nuts = nuts_figures(name, args)
        n_conc, n_leaf = nuts["conc"], nuts["leaf"]
        entry = suite.get(name)
        tree = entry.build()
        cells = []
        for label, every, overrelax in SETTINGS:
            f = fast_ess_per_second(tree, entry.tying, entry.seed, every, args.iterations,
                                    overrelax)
            rc, rl = f["conc"] / n_conc, f["leaf"] / n_leaf
            ratios[label][0].append(rc)
            ratios[label][1].append(rl)
            traced[label][0].append(f["conc_traced"] / n_conc)
            traced[label][1].append(f["leaf_traced"] / n_leaf)
            cells.append(f"{rc:,.0f}x / {rl:,.0f}x")
        print(f"| {name} | {tree.n_nodes} | {nuts['seconds']:,.1f} | {n_conc:,.1f} | "
              f"{n_leaf:,.1f} | " + " | ".join(cells) + " |", flush=True)
    print()
    for label, (rc, rl) in ratios.items():
        print(f"median ratio over {len(rc)} trees, {label}: concentrations {np.median(rc):,.0f}x "
              f"({sum(r >= 100 for r in rc)} trees >= 100x), leaves {np.median(rl):,.0f}x")
    print("\nthe same, fastpath's seconds those of the run traced every iteration (log joint "
          "included):")
    for label, (rc, rl) in traced.items():
        print(f"median ratio over {len(rc)} trees, {label}: concentrations {np.median(rc):,.0f}x "
              f"({sum(r >= 100 for r in rc)} trees >= 100x), leaves {np.median(rl):,.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
