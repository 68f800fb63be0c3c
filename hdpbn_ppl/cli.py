"""Command line: ``python -m hdpbn_ppl estimate DATA`` and ``python -m hdpbn_ppl suite``.

``estimate`` reads a child-first table (the convention of ``hdpbn estimate``: first column the
child, then the conditioning variables in branching order), runs NUTS on the hierarchical
Dirichlet model of its context tree and writes one CSV row per node: ``depth``, one column per
conditioning variable, ``n``, ``p_<value>`` and ``mcse_<value>``. The diagnostics go to stderr
(or, with ``--json``, to stdout as a JSON object: divergences, max_rhat, min_ess_bulk,
min_ess_tail, min_bfmi, seconds, trustworthy). The exit status is 0 for a trustworthy run and 3
for a run that failed a convergence check (its estimates are still written).

``suite`` runs NUTS on the trees of the validation suite (:data:`hdpbn_ppl.suite.SUITE`), each
with its own tying strategy and seed unless ``--tying`` / ``--seed`` are given, and prints one
line (or, with ``--json``, one JSON object) per tree.

NUTS runs in double precision (:func:`hdpbn_ppl.infer.fit` switches it on for each run). The
modules that need JAX are imported only when a command runs, after :func:`main` has given XLA
its CPU devices (``XLA_FLAGS``), which XLA reads once, when JAX starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from fastpath.counts import TYING_STRATEGIES
from fastpath.estimate import node_frame, read_estimate_table, tree_from_frame
from fastpath.utils import refuse_overwriting_inputs, write_csv

from .suite import SUITE

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


def _sampler_args(p: argparse.ArgumentParser, *, per_tree: bool = False) -> None:
    """NUTS options; ``per_tree``: ``--seed`` and ``--tying`` default to each tree's own."""
    p.add_argument("--chains", type=int, default=4, help="NUTS chains (default 4)")
    p.add_argument("--burn-in", type=int, default=1000,
                   help="NUTS's warm-up steps per chain, discarded (default 1000)")
    p.add_argument("--samples", type=int, default=1000, help="kept draws per chain")
    p.add_argument("--seed", type=int, default=None if per_tree else 0,
                   help="default: each tree's own" if per_tree else "default 0")
    p.add_argument("--tying", choices=TYING_STRATEGIES, default=None if per_tree else "level",
                   help="which nodes share a concentration (default: "
                        + ("each tree's own)" if per_tree else "level)"))
    p.add_argument("--alpha0", type=float, default=2.0, help="root concentration (fixed)")
    p.add_argument("--target-accept", type=float, default=0.95)
    p.add_argument("--chain-method", choices=("auto", "sequential", "vectorized", "parallel"),
                   default="auto")
    p.add_argument("--no-retry", action="store_true",
                   help="do not rerun a divergent run with target acceptance 0.99, twice the "
                        "burn-in and max tree depth 12")


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

    suite = sub.add_parser("suite", help="run NUTS on the trees of the validation suite")
    suite.add_argument("names", nargs="*", help="suite trees to run (default: all)")
    suite.add_argument("--json", action="store_true", help="one JSON object per tree")
    _sampler_args(suite, per_tree=True)
    return parser


def _fit_kwargs(args) -> dict:
    from .infer import RETRIES

    return dict(
        retries=() if args.no_retry else RETRIES,
        tying=args.tying, n_chains=args.chains, burn_in=args.burn_in, samples=args.samples,
        seed=args.seed, alpha0=args.alpha0, target_accept=args.target_accept,
        chain_method=args.chain_method, warn=False,
    )


def _estimate(args) -> int:
    from .infer import fit  # starts JAX: after main() has set XLA_FLAGS

    refuse_overwriting_inputs(args.out, [args.data])
    frame = read_estimate_table(args.data)
    if args.columns is not None:
        frame = frame.iloc[:, : args.columns]
    coded = tree_from_frame(frame)
    result = fit(coded.tree, **_fit_kwargs(args))
    table = node_frame(coded, result.probabilities, result.mcse)
    if args.out:
        write_csv(table, args.out, index=False)  # whole or not at all
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
    names = set(args.names)
    unknown = names - {entry.name for entry in SUITE}
    if unknown:
        print(f"unknown suite trees: {sorted(unknown)}", file=sys.stderr)
        return 2
    from .infer import fit  # starts JAX: after main() has set XLA_FLAGS

    entries = [entry for entry in SUITE if not names or entry.name in names]
    width = max(len(entry.name) for entry in entries)
    status = 0
    for entry in entries:
        tree = entry.build()
        kwargs = _fit_kwargs(args)
        kwargs["tying"] = args.tying or entry.tying
        kwargs["seed"] = entry.seed if args.seed is None else args.seed
        diag = fit(tree, **kwargs).diagnostics
        if not diag.trustworthy:
            status = EXIT_UNTRUSTWORTHY
        if args.json:
            print(json.dumps({"name": entry.name, "tying": kwargs["tying"],
                              "n_nodes": tree.n_nodes, "depth": tree.depth, "K": tree.n_values,
                              "rows": tree.n_rows, **diag.as_dict()}),
                  flush=True)
        else:
            print(f"{entry.name:{width}s} nodes={tree.n_nodes:4d} {diag.summary()}", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _set_host_devices(args.chains)
    if args.command == "estimate":
        return _estimate(args)
    return _suite(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
