"""Command line: ``python -m hdpbn_ppl estimate DATA`` and ``python -m hdpbn_ppl suite``.

``estimate`` reads a child-first table (the convention of ``hdpbn estimate``: first column the
child, then the conditioning variables in branching order), runs NUTS on the hierarchical
Dirichlet model of its context tree and writes one CSV row per node: ``depth``, one column per
conditioning variable, ``n``, ``p_<value>`` and ``mcse_<value>``. The diagnostics go to stderr
(or, with ``--json``, to stdout as a JSON object: divergences, max_rhat, min_ess_bulk,
min_ess_tail, min_bfmi, seconds, trustworthy). The exit status is 0 for a trustworthy run and 3
for a run that failed a convergence check (its estimates are still written).

``suite`` runs NUTS on the acceptance trees of :data:`hdpbn_ppl.testing.SUITE` and prints one
line (or, with ``--json``, one JSON object) per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from fastpath.counts.context_tree import TYING_STRATEGIES

EXIT_UNTRUSTWORTHY = 3


def _set_host_devices(chains: int) -> None:
    """Give XLA one CPU device per chain (up to the core count) before JAX starts, so that
    chains run in parallel on a CPU; an accelerator is used unchanged when present."""
    if "jax" in sys.modules:
        return
    n = max(1, min(chains, os.cpu_count() or 1))
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags and n > 1:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


def _sampler_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chains", type=int, default=4, help="NUTS chains (default 4)")
    p.add_argument("--warmup", type=int, default=1000, help="warmup steps per chain")
    p.add_argument("--samples", type=int, default=1000, help="kept draws per chain")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tying", choices=TYING_STRATEGIES, default="level",
                   help="which nodes share a concentration (default: level)")
    p.add_argument("--alpha0", type=float, default=2.0, help="root concentration (fixed)")
    p.add_argument("--target-accept", type=float, default=0.95)
    p.add_argument("--chain-method", choices=("auto", "sequential", "vectorized", "parallel"),
                   default="auto")
    p.add_argument("--no-retry", action="store_true",
                   help="do not rerun a divergent run with target acceptance 0.99, twice the "
                        "warm-up and max tree depth 12")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hdpbn_ppl",
        description="NUTS ground truth for the hierarchical Dirichlet model of a context tree.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    est = sub.add_parser("estimate", help="posterior means of every node of one table")
    est.add_argument("data", help="CSV, CSV.gz, TSV or Parquet: child column first, then the "
                                  "conditioning variables in branching order")
    est.add_argument("--columns", type=int, default=None,
                     help="use only the first COLUMNS columns of the table")
    est.add_argument("--out", default=None, help="write the node table here (default stdout)")
    est.add_argument("--json", action="store_true",
                     help="print the diagnostics as JSON on stdout (the table needs --out)")
    _sampler_args(est)

    suite = sub.add_parser("suite", help="run the acceptance suite of model-drawn trees")
    suite.add_argument("names", nargs="*", help="suite entries to run (default: all)")
    suite.add_argument("--json", action="store_true", help="one JSON object per tree")
    _sampler_args(suite)
    return parser


def _fit_kwargs(args) -> dict:
    from .infer import RETRIES

    return dict(
        retries=() if args.no_retry else RETRIES,
        tying=args.tying, chains=args.chains, warmup=args.warmup, samples=args.samples,
        seed=args.seed, alpha0=args.alpha0, target_accept=args.target_accept,
        chain_method=args.chain_method, warn=False,
    )


def _estimate(args) -> int:
    from fastpath.estimate.table_io import node_frame, read_estimate_table, tree_from_frame

    from .infer import fit

    frame = read_estimate_table(args.data)
    if args.columns is not None:
        frame = frame.iloc[:, : args.columns]
    coded = tree_from_frame(frame)
    result = fit(coded.tree, **_fit_kwargs(args))
    table = node_frame(coded, result.probabilities, result.mcse)
    if args.out:
        table.to_csv(args.out, index=False)
    elif not args.json:
        table.to_csv(sys.stdout, index=False)
    diag = result.diagnostics
    report = {
        "divergences": diag.divergences,
        "max_rhat": diag.max_rhat,
        "min_ess_bulk": diag.min_ess_bulk,
        "min_ess_tail": diag.min_ess_tail,
        "min_bfmi": diag.min_bfmi,
        "seconds": round(diag.seconds, 3),
        "trustworthy": diag.trustworthy,
        "problems": list(diag.problems),
        "notes": list(diag.notes),
        "attempts": list(diag.attempts),
        "n_nodes": coded.tree.n_nodes,
        "concentrations": [float(a) for a in result.concentration_mean],
    }
    if args.json:
        print(json.dumps(report))
    print(f"hdpbn_ppl: {coded.tree!r}", file=sys.stderr)
    print(f"hdpbn_ppl: {diag.summary()}", file=sys.stderr)
    if not diag.trustworthy:
        print("hdpbn_ppl: WARNING: this run is NOT TRUSTWORTHY; do not use it as ground truth",
              file=sys.stderr)
        return EXIT_UNTRUSTWORTHY
    return 0


def _suite(args) -> int:
    from .infer import fit
    from .testing import SUITE

    names = set(args.names)
    unknown = names - {e.name for e in SUITE}
    if unknown:
        print(f"unknown suite entries: {sorted(unknown)}", file=sys.stderr)
        return 2
    status = 0
    for entry in SUITE:
        if names and entry.name not in names:
            continue
        tree = entry.sample().tree
        diag = fit(tree, **_fit_kwargs(args)).diagnostics
        if not diag.trustworthy:
            status = EXIT_UNTRUSTWORTHY
        if args.json:
            print(json.dumps({"name": entry.name, "n_nodes": tree.n_nodes, "depth": tree.depth,
                              "K": tree.n_values, "rows": tree.n_rows, **diag.as_dict()}),
                  flush=True)
        else:
            print(f"{entry.name:14s} nodes={tree.n_nodes:4d} {diag.summary()}", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _set_host_devices(args.chains)
    if args.command == "estimate":
        return _estimate(args)
    return _suite(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
