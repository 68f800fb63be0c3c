"""``hdpbn estimate``: HDP estimates of one conditional probability table.

DATA is a table whose first column is the child variable and whose other columns are the
conditioning variables in branching order (the reference implementation's convention, e.g.
``BENCH/synth_N25000.csv``); every column is nominal. Output: one CSV row per node of the
context tree (:func:`fastpath.estimate.node_frame`): ``depth``, one column per conditioning
variable, ``n``, ``p_<value>`` (posterior means) and, with ``--chains C`` (C >= 2),
``mcse_<value>`` (batch-means Monte-Carlo standard errors pooled over chains).

DATA is read and counted in chunks of ``--chunksize`` rows
(:func:`fastpath.estimate._table_io.count_estimate_table`), so memory does not grow with the
number of rows; the codes, nodes and estimates are those of reading the whole table.

The parser is added to the ``hdpbn`` command line by :func:`add_estimate_parser`;
:func:`run_estimate` runs it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from ..estimate._diagnostics import summarise_fit, tree_label
from ..estimate._table_io import DEFAULT_CHUNKSIZE, count_estimate_table, node_frame
from ..estimate.hdp import HDPOptions, estimate_tree
from ..estimate.hdp._options import (
    BURN_IN_CAP,
    ESTIMATE_SAMPLER,
    PAPER_ITERATIONS,
    SAMPLER_PRESETS,
)
from ..io._tables import decompression_error
from ..utils._files import refuse_overwriting_inputs, write_csv
from ..utils._progress import Progress

# the flags left out mean the sampler options left out: their defaults are HDPOptions' own
_DEFAULT = HDPOptions()
#: ``hdpbn estimate``'s ``--seed`` (a command is reproducible when run again)
ESTIMATE_SEED = 0


def add_estimate_parser(subparsers) -> None:
    """Add the ``estimate`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "estimate",
        help="HDP estimates of one conditional table (child-first convention)",
        description="HDP estimates of P(first column | other columns) with the collapsed Gibbs "
        "sampler (paper, section 4). DATA: CSV, CSV.gz or Parquet; the first column is the "
        "child, the others are conditioning variables in branching order (class first). "
        "Writes one CSV row per node of the context tree: depth, the path values, n, "
        "p_<value> (posterior mean) and, with --chains >= 2, mcse_<value>.",
    )
    p.add_argument("data", metavar="DATA", help="child-first table")
    p.add_argument("--sampler", default=None, choices=[*SAMPLER_PRESETS],
                   help=f"paper: the paper's sampler, {PAPER_ITERATIONS} plain Gibbs iterations; "
                   "adaptive: exact overrelaxed moves until the Monte-Carlo error of what the "
                   f"table's rows read is <= {_DEFAULT.mcse_tolerance} ({_DEFAULT.min_iter} to "
                   f"{_DEFAULT.max_iter} iterations); adaptive-plain: the same with the paper's "
                   "plain moves; strict: overrelaxed, every probability within "
                   f"{_DEFAULT.mcse_tolerance} and the concentrations past R-hat and ESS checks. "
                   f"The flags below override it (default: {ESTIMATE_SAMPLER}, the reference's "
                   "sampler)")
    p.add_argument("--iterations", type=parse_iterations, default=None,
                   help="Gibbs iterations per chain, or 'auto' (default: the sampler's)")
    add_adaptive_length_options(p)
    add_burn_in_option(p)
    p.add_argument("--tying", default=_DEFAULT.tying,
                   choices=["level", "same-parent", "single", "none"],
                   help=f"concentration tying (default: {_DEFAULT.tying})")
    p.add_argument("--update", default=_DEFAULT.update, choices=["exact", "window"],
                   help="table-count update: exact Gibbs step, or the reference's "
                   f"+-{_DEFAULT.window} window (default: {_DEFAULT.update})")
    p.add_argument("--root", default=_DEFAULT.root, choices=["exact", "reference"],
                   help="root treatment: Dirichlet-integrated, or the reference's shortcut "
                   f"(default: {_DEFAULT.root})")
    p.add_argument("--chains", type=int, default=_DEFAULT.n_chains,
                   help=f"independent chains (default: {_DEFAULT.n_chains})")
    p.add_argument("--overrelax", action="store_const", const=True, default=None,
                   help="overrelaxed table-count and concentration updates (exact update only; "
                   "faster mixing; not the reference's sampler)")
    p.add_argument("--seed", type=int, default=ESTIMATE_SEED,
                   help=f"random seed (default: {ESTIMATE_SEED})")
    p.add_argument("--threads", type=int, default=None,
                   help="worker threads for the chains (default: all cores)")
    p.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE,
                   help="read and count DATA in chunks of this many rows; memory does not grow "
                   f"with the number of rows (default: {DEFAULT_CHUNKSIZE})")
    p.add_argument("--out", default=None,
                   help="output CSV (default: standard output; with --json the table is only "
                   "written when --out is given)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON summary (nodes per depth, iterations, seconds, R-hat of "
                   "the concentrations) on standard output")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=run_estimate)


_FLAGS = {"n_iter": "--iterations", "burn_in": "--burn-in", "n_chains": "--chains",
          "min_iter": "--min-iter", "max_iter": "--max-iter", "mcse_tolerance": "--mcse-tolerance"}


def add_adaptive_length_options(group) -> None:
    """``--min-iter``, ``--max-iter``, ``--mcse-tolerance``: the adaptive length's rule, for
    every command that samples (an ``argparse`` parser or argument group)."""
    group.add_argument("--min-iter", type=int, default=None, metavar="N",
                   help="adaptive length: the fewest iterations per chain "
                   f"(default: {_DEFAULT.min_iter})")
    group.add_argument("--max-iter", type=int, default=None, metavar="N",
                   help="adaptive length: the most iterations per chain "
                   f"(default: {_DEFAULT.max_iter})")
    group.add_argument("--mcse-tolerance", type=float, default=None, metavar="TOL",
                   help="the largest Monte-Carlo standard error of what the rows read (an "
                   "ensemble: of its members' average, each member sampled to TOL x "
                   f"sqrt(members)) (default: {_DEFAULT.mcse_tolerance})")


def add_burn_in_option(group) -> None:
    """``--burn-in``, for every command that samples (a parser or argument group)."""
    group.add_argument("--burn-in", type=int, default=None,
                       help=f"iterations discarded (default: min({BURN_IN_CAP}, iterations/10); "
                       "with 'auto' iterations, half of --min-iter)")


def parse_iterations(text: str) -> int | str:
    """``--iterations``: a count, or ``auto`` (the adaptive length)."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None


#: How :func:`fastpath.estimate._diagnostics.remedy` writes an option on the command line
#: (``hdpbn fit/evaluate/estimate``): the command line's flags live with the command line
CLI_NAMES: dict[str, str] = {
    "max_iter": "--max-iter {}", "mcse_tolerance": "--mcse-tolerance {}",
    "n_iter": "--iterations {}", "sampler": "--sampler {}", "n_chains": "--chains {}",
    "auto_length": "--iterations auto", "inspect": "see hdpbn diagnose MODEL",
}


# the warning's advice in this command's flags (it writes no model to diagnose)
_ESTIMATE_NAMES = {**CLI_NAMES, "inspect": "--chains 2 or more writes each node's MCSE"}


def _finite_or_none(x: float):
    return None if x is None or not math.isfinite(x) else round(float(x), 4)


def run_estimate(args: argparse.Namespace) -> int:
    """Run ``hdpbn estimate``; returns the exit status."""
    try:
        sampler = ESTIMATE_SAMPLER if args.sampler is None else args.sampler
        given = {"n_iter": args.iterations, "burn_in": args.burn_in,
                 "overrelax": args.overrelax, "min_iter": args.min_iter,
                 "max_iter": args.max_iter, "mcse_tolerance": args.mcse_tolerance}
        options = HDPOptions.preset(
            sampler, tying=args.tying, update=args.update, root=args.root,
            n_chains=args.chains, **{k: v for k, v in given.items() if v is not None},
        )
    except ValueError as exc:  # name the command-line flag, not the Python option
        msg = str(exc)
        for field, flag in _FLAGS.items():
            if msg.startswith(field + " "):
                msg = flag + msg[len(field):]
                break
        msg = msg.replace("< n_iter", "< --iterations")
        raise ValueError(msg) from None
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    refuse_overwriting_inputs(args.out, [args.data])
    chunksize = getattr(args, "chunksize", DEFAULT_CHUNKSIZE)
    if chunksize < 1:
        raise ValueError(f"--chunksize must be a positive number of rows, got {chunksize}")
    try:
        coded = count_estimate_table(args.data, chunksize=chunksize)
    except Exception as exc:  # a damaged or mislabelled compressed file: name it
        err = decompression_error(args.data, exc)
        if err is None:
            raise
        raise err from exc
    tree = coded.tree
    progress = Progress("sampling", enabled=None if not args.quiet else False)
    t0 = time.perf_counter()
    result = estimate_tree(tree, options, seed=args.seed, n_threads=args.threads,
                           progress=progress)
    wall = time.perf_counter() - t0
    # one line on stderr (hdpbn estimate: warning: ...) when the chain(s) look unconverged
    summarise_fit([result], [tree_label(tree)]).warn_if_unconverged(_ESTIMATE_NAMES)
    mcse = result.mcse if options.n_chains >= 2 else None
    table = node_frame(coded, result.probabilities, mcse)

    if args.out is not None:
        write_csv(table, args.out, index=False)  # whole or not at all
    elif not args.json:
        table.to_csv(sys.stdout, index=False)

    if args.json:
        diag = result.diagnostics()
        conc = {name: {"mean": _finite_or_none(row["mean"]),
                       "rhat": _finite_or_none(row["rhat"]),
                       "ess_bulk": _finite_or_none(row["ess_bulk"])}
                for name, row in diag.iterrows() if name.startswith("alpha[")}
        lj = diag.loc["log_joint"]
        summary = {
            "data": str(args.data),
            "rows": tree.n_rows,
            "child": coded.child_name,
            "conditioning": list(coded.conditioning_names),
            "values": [None if v is None else str(v) for v in coded.child_labels],
            "nodes": tree.n_nodes,
            "nodes_per_depth": list(tree.nodes_per_level),
            "sampler": sampler,
            "iterations": result.n_iterations,
            "stop_reason": result.stop_reason,
            "burn_in": options.burn_in_iterations,
            "chains": options.n_chains,
            "tying": options.tying,
            "update": options.update,
            "root": options.root,
            "seed": args.seed,
            "seconds_sampling": round(result.seconds, 4),
            "seconds_wall": round(wall, 4),
            "rhat_concentrations": {k: v["rhat"] for k, v in conc.items()},
            "concentrations": conc,
            "log_joint": {"rhat": _finite_or_none(lj["rhat"]),
                          "ess_bulk": _finite_or_none(lj["ess_bulk"])},
            "max_mcse": _finite_or_none(float(result.mcse.max())),
            "out": args.out,
        }
        print(json.dumps(summary))
    return 0
