"""``python -m validation agreement|sbc ...``: the sampler validation runs.

Examples::

    python -m validation agreement --quick                  # CI: 4 small trees, assertions
    python -m validation agreement --full --out results/agreement --resume
    python -m validation agreement --report-only --out results/agreement
    python -m validation sbc --quick
    python -m validation sbc --full --out results/sbc
    python -m validation intervals --full --out validation/results/intervals
    python -m validation classifier-agreement --dataset car --structure tan

The exit status is 1 when a tree fails its checks (agreement) or a uniformity test fails for
the exact update (SBC), so the commands can gate CI. ``classifier-agreement`` reports; it gates
nothing (its exit status is 0 unless it cannot run).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fastpath.estimate.hdp import PAPER_ITERATIONS
from fastpath.io import load_dataset
from fastpath.utils import write_text
from hdpbn_ppl import suite

from . import agreement as ag
from . import classifier_agreement as ca
from . import intervals, mcse_check, sbc


def _agreement(args: argparse.Namespace) -> int:
    cfg = ag.FULL if args.full else ag.QUICK
    if args.no_variants:
        cfg = ag.AgreementConfig(**{**cfg.__dict__, "variants": False})
    if args.variants:
        cfg = ag.AgreementConfig(**{**cfg.__dict__, "variants": True})
    if args.overrelax:
        cfg = ag.AgreementConfig(**{**cfg.__dict__, "overrelax": True})
    if args.sampler != "paper":
        cfg = ag.AgreementConfig(**{**cfg.__dict__, "sampler": args.sampler})
    names = args.trees or (suite.names() if args.full else suite.quick_names())
    for n in names:
        suite.get(n)  # unknown names fail before any work
    out = Path(args.out) if args.out else None
    if args.report_only:
        if out is None:
            print("--report-only needs --out", file=sys.stderr)
            return 2
        results = ag.load_results(out, names)
    else:
        t0 = time.time()
        if args.nuts_from:  # every stored run must be there before any work
            try:
                for n in names:
                    ag.stored_nuts(args.nuts_from, n, cfg)
            except (OSError, ValueError, KeyError) as exc:
                print(f"--nuts-from: {exc}", file=sys.stderr)
                return 2
        results = ag.run_agreement(names, cfg, out, resume=args.resume, nuts_from=args.nuts_from)
        print(f"total {time.time() - t0:.0f} s")
    text = ag.report_markdown(results, cfg.name)
    setting = cfg.name + (", fastpath overrelaxed" if cfg.overrelax else "")
    if cfg.sampler != "paper":
        setting += f", fastpath sampler={cfg.sampler!r}"
    if args.nuts_from:
        setting += f", NUTS runs from {args.nuts_from}"
    header = (f"Agreement ({setting}), {time.strftime('%Y-%m-%d')}, "
              f"{ag.machine_description()}\n\n")
    if args.report:
        write_text(args.report, header + text)
    if args.plot and results:
        ag.plot_z(results, args.plot)
    if args.json:
        print(json.dumps([r.to_json() | {"z_prob": None} for r in results]))
    else:
        print(header + text)
    return 0 if all(r.passed for r in results) else 1


def _sbc(args: argparse.Namespace) -> int:
    cases = sbc.FULL_CASES if args.full else sbc.QUICK_CASES
    if args.cases:
        known = {c.name: c for c in sbc.ALL_CASES}
        unknown = [c for c in args.cases if c not in known]
        if unknown:
            print(f"unknown SBC case(s) {unknown}; known: {sorted(known)}", file=sys.stderr)
            return 2
        cases = tuple(known[c] for c in args.cases)
    if args.replications:
        cases = tuple(c.replace(replications=args.replications) for c in cases)
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    results = []
    for case in cases:
        t0 = time.time()
        res = sbc.run_sbc(case)
        print(f"{case.name} ({case.update}): {res.summary_line()} [{time.time() - t0:.1f} s]")
        results.append(res)
        if out is not None:
            write_text(out / f"{case.name}.json", json.dumps(res.to_json()))
            sbc.plot_ranks(res, out / f"{case.name}.png")
    text = sbc.report_markdown(results)
    if args.report:
        write_text(args.report, text)
    print(text)
    gate = [r for r in results if r.case.update == "exact" and not r.case.expect_fail]
    return 0 if all(r.passed for r in gate) else 1


def _intervals(args: argparse.Namespace) -> int:
    study = intervals.FULL if args.full else intervals.QUICK
    if args.networks:
        study = dataclasses.replace(study, networks=args.networks)
    t0 = time.time()
    rows = intervals.run_study(study, log=lambda line: print(line, flush=True))
    summary = intervals.summarise(rows, study.nominal)
    header = (f"Credible intervals ({'full' if args.full else 'quick'}: {study.networks} "
              f"networks per cell, {study.n_test} test rows each, {study.n_draws} draws), "
              f"{time.strftime('%Y-%m-%d')}, {time.time() - t0:.0f} s\n\n")
    text = header + intervals.report_markdown(summary, study.nominal)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "networks.csv", rows.to_csv(index=False))
        write_text(out / "report.md", text)
    print(text)
    given = summary[summary["structure"] == "given"]
    # the gate: with the generating structure given, every cell within 3 standard errors
    return 0 if (given["z"].abs() <= 3).all() else 1


def _classifier_agreement(args: argparse.Namespace) -> int:
    try:
        X, y = load_dataset(args.dataset)
    except ValueError as exc:  # unknown name: the message lists the bundled ones
        print(exc, file=sys.stderr)
        return 2
    try:
        res = ca.run_classifier_agreement(
            X, y, data_name=args.dataset, structure=args.structure, k=args.k,
            n_folds=args.folds, n_repeats=args.repeats, seed=args.seed, n_iter=args.iterations,
            tying=args.tying, chains=args.chains, warmup=args.warmup, samples=args.draws,
            progress=None if args.json else (lambda line: print(line, flush=True)),
        )
    except ValueError as exc:  # bad option values (folds, k, iterations ...), named by fastpath
        print(f"classifier-agreement: {exc}", file=sys.stderr)
        return 2
    text = ca.report_markdown(res)
    if args.report:
        write_text(args.report, text)
    if args.out:
        write_text(args.out, json.dumps(res.to_json()))
    print(json.dumps(res.to_json()) if args.json else "\n" + text)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m validation", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("agreement", help="fastpath (exact) vs NUTS on the tree suite")
    mode = a.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the small CI trees, short runs")
    mode.add_argument("--full", action="store_true", help="every suite tree, long runs")
    a.add_argument("--trees", nargs="+", metavar="NAME", help="suite trees to run")
    a.add_argument("--out", help="directory for one JSON result per tree")
    a.add_argument("--resume", action="store_true", help="skip trees already in --out")
    a.add_argument("--report-only", action="store_true", help="report the results in --out")
    a.add_argument("--report", help="write the markdown report here")
    a.add_argument("--plot", help="write the z-score plot here (PNG)")
    a.add_argument("--variants", action="store_true",
                   help="also run the window update and the reference root (default in --full)")
    a.add_argument("--no-variants", action="store_true")
    a.add_argument("--overrelax", action="store_true",
                   help="run fastpath with overrelaxed updates (HDPOptions(overrelax=True))")
    a.add_argument("--sampler", default="paper",
                   choices=["paper", "adaptive", "adaptive-plain", "strict"],
                   help="fastpath's sampler: the paper's at fixed lengths (default), or a preset "
                   "with its adaptive length (adaptive: the library's default; strict, "
                   "formerly fast, a name no longer accepted)")
    a.add_argument("--nuts-from", metavar="DIR",
                   help="take the NUTS side from the JSON results of an earlier run in DIR "
                   "(same configuration) instead of running NUTS")
    a.add_argument("--json", action="store_true", help="print the results as JSON")
    a.set_defaults(func=_agreement)

    s = sub.add_parser("sbc", help="simulation-based calibration of fastpath")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true")
    mode.add_argument("--full", action="store_true")
    s.add_argument("--cases", nargs="+", metavar="NAME")
    s.add_argument("--replications", type=int)
    s.add_argument("--out", help="directory for JSON results and rank histograms")
    s.add_argument("--report", help="write the markdown report here")
    s.set_defaults(func=_sbc)

    i = sub.add_parser("intervals", help="coverage of the credible intervals of P(y | x) "
                       "on networks drawn from the model's prior")
    mode = i.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="naive Bayes, one size (default)")
    mode.add_argument("--full", action="store_true",
                      help="nb and kDB-1 networks, 3 sizes, given/learnt/ensemble")
    i.add_argument("--networks", type=int, help="networks per cell")
    i.add_argument("--out", help="directory for networks.csv and report.md")
    i.set_defaults(func=_intervals)

    c = sub.add_parser("classifier-agreement",
                       help="cross-validated predictions with Gibbs tables vs NUTS tables")
    c.add_argument("--dataset", required=True, help="a bundled dataset (car, credit-a, ...)")
    c.add_argument("--structure", default="tan", choices=["nb", "tan", "kdb"])
    c.add_argument("--k", type=int, default=1, help="parents per attribute for kdb")
    c.add_argument("--folds", type=int, default=2)
    c.add_argument("--repeats", type=int, default=5)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--iterations", type=int, default=PAPER_ITERATIONS,
                   help=f"Gibbs iterations (default: {PAPER_ITERATIONS}, the paper's sampler's)")
    c.add_argument("--tying", default="level", choices=["level", "same-parent", "single", "none"])
    c.add_argument("--chains", type=int, default=4, help="NUTS chains")
    c.add_argument("--warmup", type=int, default=1000, help="NUTS warm-up steps per chain")
    c.add_argument("--draws", type=int, default=1000, help="NUTS draws per chain")
    c.add_argument("--report", help="write the markdown report here")
    c.add_argument("--out", help="write the results here (JSON)")
    c.add_argument("--json", action="store_true", help="print the results as JSON")
    c.set_defaults(func=_classifier_agreement)
    m = sub.add_parser("mcse-check",
                       help="the default sampler's reported MCSE against long reference runs")
    m.add_argument("data", nargs="+", metavar="DATA", help="dataset files or folders")
    m.add_argument("--structures", nargs="+", default=list(mcse_check.STRUCTURES),
                   choices=list(mcse_check.STRUCTURES))
    m.add_argument("--reference-iterations", type=int, default=20_000)
    m.add_argument("--reference-chains", type=int, default=4)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--typing", default="manifest", help="column typing, as for the runner")
    m.add_argument("--samplers", default="adaptive",
                   help="comma-separated sampler presets to check (default: adaptive)")
    m.add_argument("--out", help="CSV of one row per tree (resumed when it exists)")
    m.set_defaults(func=_mcse_check)
    return p


def _mcse_check(args: argparse.Namespace) -> int:
    return mcse_check.main(args.data, args.out, structures=args.structures,
                           samplers=[s.strip() for s in args.samplers.split(",") if s.strip()],
                           reference_iterations=args.reference_iterations,
                           reference_chains=args.reference_chains, seed=args.seed,
                           typing=args.typing)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
