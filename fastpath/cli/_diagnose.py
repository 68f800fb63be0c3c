"""``hdpbn diagnose MODEL``: convergence of a saved HDP model's samplers, worst trees first."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import pandas as pd

from ..classifier._loading import load_classifier
from ..classifier._model_io import read_model_meta
from ..estimate._diagnostics import FitDiagnostics, summarise_fit
from ..estimate.hdp import estimate_trees
from ..pipeline._members import distinct_trees
from ..pipeline._registry import uses_sampler


def add_diagnose_parser(subparsers) -> None:
    """Add ``diagnose`` to an ``argparse`` subparsers object (``hdpbn diagnose MODEL``)."""
    p = subparsers.add_parser(
        "diagnose",
        help="convergence of a saved HDP model's samplers (worst trees first)",
        description="Print, for every tree of a model saved by 'hdpbn fit' (--estimation hdp), "
        "worst trees first: its iterations, the Monte-Carlo error of what its rows read (and "
        "with 2 or more chains their R-hat), and the R-hat and bulk ESS of its concentrations "
        "and log joint. Uses the diagnostics stored in the model file; a model saved without "
        "them is re-sampled with its saved settings and seed (identical to the fit when it "
        "had an integer seed). Exit status 1 when a tree's estimates are not certified (the "
        "rule the fit warns by).",
    )
    p.add_argument("model", metavar="MODEL", help="a model file (.npz) saved by 'hdpbn fit'")
    p.add_argument("--top", type=int, default=5, help="worst trees to list (default: 5)")
    p.add_argument("--all", action="store_true", help="list every tree and variable")
    p.add_argument("--rerun", action="store_true",
                   help="re-sample even when the model file holds diagnostics")
    p.add_argument("--chains", type=int, default=None,
                   help="with a re-run: chains to use (default: the model's n_chains)")
    p.add_argument("--json", action="store_true", help="print the diagnostics as JSON")
    p.set_defaults(func=run_diagnose)


def _rerun(path: str, chains: int | None) -> tuple[FitDiagnostics, str]:
    model = load_classifier(path)
    # the options the members' trees ran with (an ensemble's: the tolerance of one member)
    fitted = model.hdp_options().for_members(len(model.members_))
    n_chains = int(chains) if chains is not None else fitted.n_chains
    if n_chains < 1:
        raise ValueError(f"--chains must be >= 1, got {n_chains}")
    options = dataclasses.replace(fitted, n_chains=n_chains)
    seed = model.random_state
    # the fit's trees in the fit's order (an ensemble's shared trees once), so a seed gives
    # the fit's own chains
    trees, names, _ = distinct_trees(model.members_)
    results = estimate_trees(trees, options, seed=seed)
    if isinstance(seed, int) and chains is None:
        note = f"re-sampled with the model's settings and seed {seed} (the fit's own chains)"
    elif isinstance(seed, int):
        note = f"re-sampled with the model's settings, seed {seed} and {n_chains} chain(s)"
    else:
        note = ("re-sampled with the model's settings and a fresh seed (the model had no "
                "integer random_state): a new run, not the fit's own chains")
    return summarise_fit(results, names), note


def run_diagnose(args: argparse.Namespace) -> int:
    """Run ``hdpbn diagnose``; returns 0 when every tree looks converged, else 1."""
    meta = read_model_meta(args.model)  # a single classifier's or an ensemble's file
    params = meta.get("params", {})
    warned = meta.get("fit_warnings") or []
    if warned and not args.json:  # what the fit warned about, shown or silenced (--quiet)
        print("the fit warned:")
        for message in warned:
            print(f"  - {message}")
        sys.stdout.flush()
    if not uses_sampler(params.get("estimation")):
        raise ValueError(f"{args.model!r} was fitted with "
                         f"estimation={params.get('estimation')!r}: only HDP fits have "
                         "samplers to diagnose")
    if args.top < 1:
        raise ValueError(f"--top must be >= 1, got {args.top}")
    stored = meta.get("diagnostics")
    if stored is not None and not args.rerun and args.chains is None:
        diag = FitDiagnostics.from_dict(stored)  # the verdict needs no options
        note = "stored in the model file at fit time"
    else:
        diag, note = _rerun(args.model, args.chains)
    if args.json:
        print(json.dumps({"source": note, "converged": diag.converged, "fit_warnings": warned,
                          **diag.to_dict()}))
    else:
        print(f"diagnostics {note}")
        print(diag.summary(n=len(diag.trees) if args.all else args.top))
        if args.all:
            with pd.option_context("display.max_rows", None, "display.width", 120):
                print(diag.to_frame().to_string(index=False))
    sys.stdout.flush()
    return 0 if diag.converged else 1
