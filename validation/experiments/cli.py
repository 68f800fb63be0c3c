"""``python -m validation.experiments`` (also ``hdpbn experiments``): the paper's experiments.

Subcommands
-----------
``run`` (the default)   classifiers x datasets x folds, cached per cell; writes the fold CSV,
                        Tables 2-3 and the figures. ``--quick``: bundled data, a few
                        classifiers, one repeat, plus sanity assertions (exit status 1 when one
                        fails) — the CI check.
``report``              tables and figures again from a results CSV.
``compare``             W/D/L and sign tests of pairs of classifiers (``--column-types``:
                        only the datasets with, or without, numeric attributes).
``summary``             mean metrics and seconds per fit (estimation stage, fit, predict)
                        of classifiers over the datasets where all have every fold.
``collect``             every cached cell as one CSV.
``rescore``             every score of the cached cells recomputed from their stored
                        test probabilities (a new metric without a refit).
``learning-curves``     RMSE against training-set size (paper, Figure 6).

Examples::

    python -m validation.experiments --quick
    python -m validation.experiments run DATASETS --typing manifest --iterations 5000
    python -m validation.experiments learning-curves data/adult.csv.gz data/connect-4.csv.gz
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fastpath.estimate.hdp import PAPER_ITERATIONS
from fastpath.utils import write_csv, write_text

from . import plots
from .classifiers import DEFAULT_CLASSIFIERS, QUICK_CLASSIFIERS, RAW_BOOSTERS, parse_classifier
from .reporting import (
    PAPER_TABLE2,
    dataset_means,
    means_markdown,
    normalise_results,
    summary_markdown,
    table2_markdown,
    table3_markdown,
    win_draw_loss,
)
from .runner import (
    CrossValidation,
    LearningCurve,
    RunSettings,
    bundled_datasets,
    collect_cache,
    discover_datasets,
    load_dataset,
    rescore_cache,
    run_cells,
    settings_dict,
)
from .weka import weka_available

__all__ = ["main", "quick_checks", "write_report"]

SUBCOMMANDS = ("run", "report", "compare", "summary", "collect", "rescore", "learning-curves")
QUICK_ITERATIONS = 1000
#: --quick: kDB-3 with HDP may lose to m-estimates by at most this much mean RMSE
QUICK_RMSE_SLACK = 0.005


def _classifier_list(text: str | None, default: Sequence[str]) -> list[str]:
    names = list(default) if not text else [c for c in text.split(",") if c.strip()]
    for n in names:
        parse_classifier(n)  # clear error for a bad name, before any work
    return [parse_classifier(n).name for n in names]


def _available(names: list[str]) -> list[str]:
    """Drop baselines whose library or program is not installed (with a note on stderr).

    XGBoost, the boosters on raw columns (``pip install hdpbn[boost]``) and Weka (``rf-weka``:
    Java and Debian's ``weka``) are optional; scikit-learn (the other random forests) is a core
    dependency.
    """
    out = []
    for n in names:
        if n == "rf-weka":
            reason = weka_available()
            if reason is not None:
                print(f"note: rf-weka skipped ({reason})", file=sys.stderr)
                continue
        module = {"xgboost": "xgboost", **RAW_BOOSTERS}.get(n)
        if module is not None:
            try:
                __import__(module)
            except ImportError:
                print(f"note: {n} skipped ({module} is not installed)", file=sys.stderr)
                continue
        out.append(n)
    return out


def _filter(refs, include: str | None, exclude: str | None):
    if include:
        wanted = {s.strip() for s in include.split(",") if s.strip()}
        unknown = wanted - {r.name for r in refs}
        if unknown:
            raise ValueError(f"--datasets names unknown datasets: {sorted(unknown)}")
        refs = [r for r in refs if r.name in wanted]
    if exclude:
        dropped = {s.strip() for s in exclude.split(",")}
        refs = [r for r in refs if r.name not in dropped]
    return refs


# ---------------------------------------------------------------------- report
def _structures(classifiers: Sequence[str]) -> list[str]:
    """Structures with both estimation methods, in the paper's order (then any others)."""
    have = set(classifiers)
    found = {c[: -len("-hdp")] for c in classifiers
             if c.endswith("-hdp") and f"{c[: -len('-hdp')]}-m" in have}
    return [s for s in PAPER_TABLE2 if s in found] + sorted(found - set(PAPER_TABLE2))


def write_report(results: pd.DataFrame, out: Path, *, header: str = "") -> Path:
    """means.csv, tables.md and the figures under ``out``; returns the tables' path."""
    out.mkdir(parents=True, exist_ok=True)
    means = dataset_means(results)
    write_csv(means, out / "means.csv", index=False)
    classifiers = list(dict.fromkeys(results["classifier"]))
    structures = _structures(classifiers)
    parts = [header] if header else []
    parts.append(f"Datasets: {means['dataset'].nunique()}; classifiers: {', '.join(classifiers)}."
                 " W-D-L counts datasets (mean over folds, lower loss wins); bold: p <= 0.05,"
                 " two-tailed sign test with draws excluded.\n")
    if structures:
        parts += ["## HDP vs m-estimates (paper, Table 2)\n", table2_markdown(means)]
    t3 = table3_markdown(means)
    if t3.count("\n") > 2:
        parts += ["## BNCs vs random forest and XGBoost (paper, Table 3)\n", t3]
    parts += ["## Mean RMSE per dataset\n", means_markdown(means, "rmse")]
    parts += ["## Mean 0-1 loss per dataset\n", means_markdown(means, "zero_one_loss")]
    timing = means.groupby("classifier")[["fit_seconds", "predict_seconds"]].mean()
    parts += ["## Mean seconds per fold (over datasets)\n",
              "| classifier | fit s | predict s |\n|---|---|---|\n"
              + "".join(f"| {c} | {r.fit_seconds:.3f} | {r.predict_seconds:.3f} |\n"
                        for c, r in timing.iterrows())]
    tables = out / "tables.md"
    write_text(tables, "\n".join(parts))
    img = out / "img"
    for s in structures:
        if s in ("kdb5", "skdb5") or len(structures) == 1:
            plots.scatter_plot(means, f"{s}-m", f"{s}-hdp", img / f"scatter_rmse_{s}.png")
    if structures:
        plots.win_loss_bars(means, structures, img / "winloss_rmse.png", "rmse")
        plots.win_loss_bars(means, structures, img / "winloss_01.png", "zero_one_loss")
    for a in ("tan-hdp", "skdb5-hdp"):
        if a in classifiers and "rf" in classifiers:
            plots.scatter_plot(means, "rf", a, img / f"scatter_01_{a}_rf.png", "zero_one_loss")
    return tables


# ---------------------------------------------------------------------- quick checks
def quick_checks(results: pd.DataFrame, labels_by_dataset: dict[str, np.ndarray]) -> list[str]:
    """Sanity assertions of ``--quick``; returns the failed ones (empty: all passed).

    1. every metric finite and in range; 2. every classifier beats the majority class on 0-1
    loss on every dataset; 3. kDB-3 with HDP is not worse than with m-estimates on mean RMSE
    over the datasets (by more than QUICK_RMSE_SLACK; HDP must then also win at least as many
    datasets as it loses) — or, without hdp, kDB-3-m beats naive Bayes-m on mean RMSE.
    """
    failed = []
    results = normalise_results(results)
    for col, top in (("zero_one_loss", 1), ("rmse", 1), ("rmse_true_class", 1), ("brier", 2)):
        bad = results[~results[col].between(0, top)]
        if len(bad):
            failed.append(f"{col} outside [0, {top}] in {len(bad)} cells")
    if not np.isfinite(results["log_loss"]).all():
        failed.append("non-finite log loss")
    means = dataset_means(results)
    for name, labels in labels_by_dataset.items():
        _, counts = np.unique(labels, return_counts=True)
        majority = 1.0 - counts.max() / counts.sum()
        sub = means[means["dataset"] == name]
        for _, row in sub.iterrows():
            if row["zero_one_loss"] >= majority:
                failed.append(
                    f"{row['classifier']} on {name}: 0-1 loss {row['zero_one_loss']:.3f} is not "
                    f"below the majority class's {majority:.3f}"
                )
    have = set(means["classifier"])
    if {"kdb3-hdp", "kdb3-m"} <= have:
        wide = means.pivot(index="dataset", columns="classifier", values="rmse")
        hdp, m = wide["kdb3-hdp"].mean(), wide["kdb3-m"].mean()
        wdl = win_draw_loss(means, "kdb3-hdp", "kdb3-m", "rmse")
        if hdp > m + QUICK_RMSE_SLACK or wdl.wins < wdl.losses:
            failed.append(
                f"kdb3-hdp mean RMSE {hdp:.4f} vs kdb3-m {m:.4f} (W-D-L {wdl}): HDP worse"
            )
    elif {"kdb3-m", "nb-m"} <= have:
        wide = means.pivot(index="dataset", columns="classifier", values="rmse")
        if wide["kdb3-m"].mean() >= wide["nb-m"].mean():
            failed.append("kdb3-m does not beat nb-m on mean RMSE")
    return failed


# ---------------------------------------------------------------------- subcommands
def _cmd_run(args: argparse.Namespace) -> int:
    quick = args.quick
    if quick:
        refs = bundled_datasets()
        classifiers = _classifier_list(args.classifiers, QUICK_CLASSIFIERS)
        repeats = 1 if args.repeats is None else args.repeats
        iterations = QUICK_ITERATIONS if args.iterations is None else args.iterations
    else:
        if not args.data:
            raise ValueError("give data folders or files (or --quick for the bundled datasets)")
        refs = discover_datasets(args.data)
        classifiers = _classifier_list(args.classifiers, DEFAULT_CLASSIFIERS)
        repeats = 5 if args.repeats is None else args.repeats
        iterations = PAPER_ITERATIONS if args.iterations is None else args.iterations
    refs = _filter(refs, args.datasets, args.exclude)
    classifiers = _available(classifiers)
    tmp = None
    if args.out is None:
        if quick:
            tmp = tempfile.mkdtemp(prefix="hdpbn-quick-")
            out = Path(tmp)
        else:
            out = Path("results/experiments")
    else:
        out = Path(args.out)
    cache = Path(args.cache) if args.cache else out / "cache"
    # --quick without --out or --keep writes to a temporary folder, removed at the end
    removed = tmp is not None and not args.keep
    protocol = CrossValidation(folds=args.folds, repeats=repeats, seed=args.seed)
    settings = RunSettings(iterations=iterations, typing=args.typing)
    print(f"{len(refs)} datasets x {len(classifiers)} classifiers x {protocol.tag}, "
          f"HDP iterations {iterations}, {args.jobs} processes; cache "
          + ("in a temporary folder" if removed and not args.cache else str(cache)),
          file=sys.stderr)
    wall = time.perf_counter()
    report = run_cells(refs, classifiers, protocol, settings, cache, jobs=args.jobs,
                       progress=None if not args.quiet else False)
    wall = time.perf_counter() - wall
    results = report.results
    out.mkdir(parents=True, exist_ok=True)
    write_csv(results, out / "results.csv", index=False)
    meta = {
        **settings_dict(protocol, settings),
        "datasets": [r.name for r in refs],
        "classifiers": classifiers,
        "cells_computed": report.computed,
        "cells_cached": report.cached,
        "failures": report.failures,
        "wall_seconds": wall,
        "command": args.command_line,
    }
    write_text(out / "run.json", json.dumps(meta, indent=1))
    status = 0
    if not results.empty:
        header = (f"Protocol {protocol.tag}; HDP iterations {iterations}; {report.computed} "
                  f"cells computed, {report.cached} from cache, wall {wall:.0f} s.\n")
        tables = write_report(results, out, header=header)
        if not args.quiet:
            print(tables.read_text())
    for f in report.failures:
        print(f"FAILED {f['dataset']} {f['classifier']} {f['split']}: {f['error']}",
              file=sys.stderr)
    if report.failures:
        status = 1
    where = ("the results were in a temporary folder, removed now (--out DIR or --keep keeps "
             "them)" if removed else f"results in {out}")
    print(f"{report.computed} cells computed, {report.cached} cached, {len(report.failures)} "
          f"failed, {wall:.1f} s; {where}", file=sys.stderr)
    if quick:
        labels = {r.name: load_dataset(r, args.typing)[1] for r in refs}
        failed = quick_checks(results, labels) if not results.empty else ["no results"]
        for f in failed:
            print(f"quick check FAILED: {f}", file=sys.stderr)
        if failed:
            status = 1
        else:
            print("quick checks passed", file=sys.stderr)
        if removed:
            shutil.rmtree(tmp, ignore_errors=True)
    return status


def read_results(paths: Sequence[str], *, name_iterations: bool = True) -> pd.DataFrame:
    """Results tables merged: each with every score (:func:`normalise_results`), a cell in
    several of them counted once -- the last one that knows the paper's RMSE, else the last.
    ``name_iterations``: HDP classifiers named with their iterations (``tan-hdp@1000``)."""
    results = pd.concat([normalise_results(pd.read_csv(p)) for p in paths], ignore_index=True)
    # HDP cells of several runs differ by their iterations: name them tan-hdp@50000 etc.
    if "iterations" in results.columns and name_iterations:
        its = results["iterations"]
        results = results.assign(classifier=[
            c if pd.isna(i) else f"{c}@{int(i)}" for c, i in zip(results["classifier"], its,
                                                                 strict=True)
        ])
    known = results["rmse"].notna().to_numpy()
    order = np.argsort(known, kind="stable")  # rows without the paper's RMSE first
    results = results.iloc[order]
    results = results.drop_duplicates(subset=["dataset", "classifier", "split"], keep="last")
    return results.sort_index()


def _cmd_report(args: argparse.Namespace) -> int:
    results = read_results([args.results], name_iterations=False)
    out = Path(args.out) if args.out else Path(args.results).parent
    tables = write_report(results, out)
    print(tables.read_text())
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    results = read_results(args.results)
    have = set(results["classifier"])
    pairs = []
    for item in args.pairs.split(","):
        a, sep, b = item.strip().partition(":")
        if not sep or not a or not b:
            raise ValueError(f"--pairs: expected A:B items (e.g. tan-mloo:tan-m), got {item!r}")
        pairs.append((_resolve(a, have), _resolve(b, have)))
    means = dataset_means(results)
    if args.datasets:
        means = means[means["dataset"].isin([d.strip() for d in args.datasets.split(",")])]
    if args.column_types != "all":
        numeric = _numeric_attributes(args.manifest)
        unknown = sorted(set(means["dataset"]) - set(numeric))
        if unknown:
            raise ValueError(f"--manifest {args.manifest} lists no numeric_attributes for "
                             f"{unknown}")
        want = {name for name, count in numeric.items()
                if (count > 0) == (args.column_types == "numeric")}
        means = means[means["dataset"].isin(want)]
        print(f"{args.column_types} datasets ({means['dataset'].nunique()}): "
              + ", ".join(sorted(means["dataset"].unique())) + "\n")
    have = set(means["classifier"])
    unknown = sorted({c for pair in pairs for c in pair} - have)
    if unknown:
        raise ValueError(f"no results for {unknown} in {', '.join(args.results)}")
    print(table3_markdown(means, pairs, paper=False), end="")
    return 0


def _numeric_attributes(manifest: str | None) -> dict[str, int]:
    """``slug -> numeric_attributes`` of a MANIFEST.csv (the datasets folder's)."""
    if manifest is None:
        raise ValueError("--column-types needs --manifest (the datasets' MANIFEST.csv, with "
                         "the columns slug and numeric_attributes)")
    table = pd.read_csv(manifest)
    missing = [c for c in ("slug", "numeric_attributes") if c not in table.columns]
    if missing:
        raise ValueError(f"--manifest {manifest}: no column {missing}")
    return dict(zip(table["slug"].astype(str), table["numeric_attributes"].astype(int),
                    strict=True))


def _cmd_summary(args: argparse.Namespace) -> int:
    results = read_results(args.results, name_iterations=False)
    if args.datasets:
        results = results[results["dataset"].isin([d.strip()
                                                   for d in args.datasets.split(",")])]
    names = [c.strip() for c in args.classifiers.split(",") if c.strip()]
    print(summary_markdown(results, names), end="")
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    frame = collect_cache(args.cache)
    write_csv(frame, args.out, index=False)
    print(f"{len(frame)} cells ({frame['dataset'].nunique()} datasets, "
          f"{frame['classifier'].nunique()} classifiers) -> {args.out}")
    return 0


def _cmd_rescore(args: argparse.Namespace) -> int:
    rescored, missing = rescore_cache(args.cache)
    print(f"{rescored} cells rescored"
          + (f"; {missing} without stored probabilities left as they are" if missing else ""))
    return 0


def _resolve(name: str, have: set[str]) -> str:
    """``name`` as it is in the results: ``tan-hdp`` is ``tan-hdp@<iterations>`` when only one
    run of it is there; with several, the iterations must be named."""
    if name in have or "@" in name:
        return name
    runs = sorted(c for c in have if c.startswith(name + "@"))
    if len(runs) > 1:
        raise ValueError(f"{name!r} is ambiguous: name one of {runs}")
    return runs[0] if runs else name


def _cmd_learning_curves(args: argparse.Namespace) -> int:
    refs = discover_datasets(args.data)
    classifiers = _available(
        _classifier_list(args.classifiers, ("tan-m", "tan-hdp", "skdb5-m", "skdb5-hdp"))
    )
    sizes = tuple(int(s) for s in args.sizes.split(","))
    protocol = LearningCurve(sizes=sizes, runs=args.runs, test_fraction=args.test_fraction,
                             seed=args.seed)
    settings = RunSettings(iterations=args.iterations, typing=args.typing)
    out = Path(args.out)
    cache = Path(args.cache) if args.cache else out / "cache"
    wall = time.perf_counter()
    report = run_cells(refs, classifiers, protocol, settings, cache, jobs=args.jobs,
                       progress=None if not args.quiet else False)
    wall = time.perf_counter() - wall
    out.mkdir(parents=True, exist_ok=True)
    write_csv(report.results, out / "learning_curves.csv", index=False)
    summary = (report.results.groupby(["dataset", "classifier", "size"])["rmse"]
               .agg(["mean", "std", "count"]).reset_index())
    write_csv(summary, out / "learning_curves_summary.csv", index=False)
    img = Path(args.img) if args.img else out / "img" / "learning_curves.png"
    plots.learning_curve_plot(report.results, img)
    meta = {**settings_dict(protocol, settings), "wall_seconds": wall,
            "cells_computed": report.computed, "cells_cached": report.cached,
            "failures": report.failures, "command": args.command_line}
    write_text(out / "learning_curves.json", json.dumps(meta, indent=1))
    if not args.quiet:
        print(summary.to_string(index=False))
    print(f"{report.computed} cells computed, {report.cached} cached, {wall:.1f} s; "
          f"figure {img}", file=sys.stderr)
    return 1 if report.failures else 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--classifiers", default=None,
                   help="comma-separated names: nb-m, tan-hdp, kdb3-m, skdb5-hdp, rf, xgboost")
    p.add_argument("--iterations", type=int, default=None,
                   help=f"HDP sampler iterations (default: {PAPER_ITERATIONS}; "
                   f"--quick: {QUICK_ITERATIONS})")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the folds and models")
    p.add_argument("--cache", default=None, help="cell cache folder (default: OUT/cache)")
    p.add_argument("--typing", default="file",
                   help="which columns are nominal: 'file' (as read; default), 'manifest' "
                        "(integer columns re-typed nominal, fewest values first, until the "
                        "folder's MANIFEST.csv numeric count is met) or 'int<=N'")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no tables on stdout")


#: how the runner is invoked by default; ``hdpbn experiments`` passes its own name
PROG = "python -m validation.experiments"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The runner's parser; ``prog`` is the command its usage and help name."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="The paper's experiments: HDP vs m-estimates for BNCs, vs RF and XGBoost.",
    )
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="cross-validate classifiers over datasets (default)")
    run.add_argument("data", nargs="*", help="folders of *.csv.gz / *.arff files, or files")
    _common(run)
    run.add_argument("--quick", action="store_true",
                     help="bundled datasets, few classifiers, 1 repeat, with sanity checks")
    run.add_argument("--folds", type=int, default=2, help="folds (default: 2)")
    run.add_argument("--repeats", type=int, default=None, help="repeats (default: 5; quick: 1)")
    run.add_argument("--datasets", default=None, help="only these dataset names (comma-separated)")
    run.add_argument("--exclude", default=None, help="skip these dataset names (comma-separated)")
    run.add_argument("--out", default=None,
                     help="output folder (default: results/experiments; --quick: a temporary one)")
    run.add_argument("--keep", action="store_true", help="--quick: keep the temporary output")
    run.set_defaults(func=_cmd_run)

    rep = sub.add_parser("report", help="tables and figures from a results CSV")
    rep.add_argument("results", help="results.csv written by run")
    rep.add_argument("--out", default=None, help="output folder (default: the CSV's folder)")
    rep.set_defaults(func=_cmd_report)

    cmp_ = sub.add_parser("compare", help="W/D/L and sign tests of any pairs of classifiers")
    cmp_.add_argument("results", nargs="+", help="results.csv files written by run (merged)")
    cmp_.add_argument("--pairs", required=True,
                      help="comma-separated A:B pairs, e.g. tan-mloo:tan-m,skdb5-hdp:rf; HDP "
                      "cells of runs with different iterations as tan-hdp@50000")
    cmp_.add_argument("--datasets", default=None, help="only these datasets (comma-separated)")
    cmp_.add_argument("--column-types", choices=("all", "nominal", "numeric"), default="all",
                      help="only the datasets without numeric attributes (nominal) or with "
                      "some (numeric), as --manifest says")
    cmp_.add_argument("--manifest", default=None,
                      help="MANIFEST.csv of the datasets (slug, numeric_attributes)")
    cmp_.set_defaults(func=_cmd_compare)

    sec = sub.add_parser("summary", help="mean metrics and seconds per fit of classifiers")
    sec.add_argument("results", nargs="+", help="results.csv files written by run (merged)")
    sec.add_argument("--classifiers", required=True, help="comma-separated names")
    sec.add_argument("--datasets", default=None, help="only these datasets (comma-separated)")
    sec.set_defaults(func=_cmd_summary)

    col = sub.add_parser("collect", help="every cached cell of a cache folder as one CSV")
    col.add_argument("cache", help="the cache folder of run (default of run: OUT/cache)")
    col.add_argument("--out", required=True, help="CSV to write (.csv.gz compresses)")
    col.set_defaults(func=_cmd_collect)

    res = sub.add_parser("rescore", help="recompute the cached cells' scores from their "
                         "stored test probabilities")
    res.add_argument("cache", help="the cache folder of run (default of run: OUT/cache)")
    res.set_defaults(func=_cmd_rescore)

    lc = sub.add_parser("learning-curves", help="RMSE against training size (paper, Figure 6)")
    lc.add_argument("data", nargs="+", help="data files or folders")
    _common(lc)
    lc.set_defaults(iterations=5000)
    lc.add_argument("--sizes", default="100,200,500,1000,2000,5000,10000,20000",
                    help="training sizes (comma-separated)")
    lc.add_argument("--runs", type=int, default=10, help="runs per size (default: 10)")
    lc.add_argument("--test-fraction", type=float, default=1 / 3,
                    help="held-out fraction per run (default: 1/3)")
    lc.add_argument("--out", default="results/learning-curves", help="output folder")
    lc.add_argument("--img", default=None, help="figure path (default: OUT/img/...png)")
    lc.set_defaults(func=_cmd_learning_curves)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    """Entry point; returns the exit status. ``prog`` names the command in usage, help and the
    recorded command line (``hdpbn experiments`` when run through ``hdpbn``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help")):
        argv = ["run", *argv]
    args = build_parser(prog).parse_args(argv)
    args.command_line = f"{prog} " + " ".join(argv)
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
