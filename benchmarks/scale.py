"""Out-of-core scale: streaming kDB-2 fits of 10^6 and 10^7 rows, counting throughput, Dask.

    python benchmarks/scale.py all                 # everything below, figures for docs/scale.md
    python benchmarks/scale.py generate --rows 1000000
    python benchmarks/scale.py rss                 # 10^6 vs 10^7 rows: rows/s, peak RSS
    python benchmarks/scale.py rss --structure eskdb --k 5 --n-estimators 5   # an ensemble
    python benchmarks/scale.py count               # counting pass, 15 nominal attributes, 1 core
    python benchmarks/scale.py dask                # LocalCluster (2 workers) vs one process
    python benchmarks/scale.py mdl                 # streaming vs in-memory MDL cut points
    python benchmarks/scale.py splice              # 141-attribute SkDB-5 probe -> 5 x 10^7 plan
    python benchmarks/scale.py predict             # hdpbn predict, 10^6 vs 10^7 rows: peak RSS
    python benchmarks/scale.py predict --structure eskdb   # the same, ESKDBClassifier()

Synthetic data (``generate``): a binary class (30 % positive) and 20 attributes: 15 nominal
(2 to 8 values, strings "a".."h"), each drawn from a random table P(x_j | y, x_{j-1}), and 5
numeric (class- and attribute-dependent normals rounded to 3 decimals: tens of thousands of
distinct values, so the class histograms of the numeric columns work in their approximate
regime). Rows are generated and written 10^6 at a time (Parquet with one row group per 10^6
rows, and CSV), so generating does not need the data in memory either. Files go to
``--dir`` (default ``/tmp/hdpbn-scale``) and are reused when present.

Every fit runs in a fresh subprocess (``python benchmarks/scale.py _fit ...``) that reports its
own peak resident set size (``getrusage``, and ``psutil`` for the current RSS), wall-clock and
CPU seconds. The acceptance figures of issue 7 are printed as ratios measured in the same run:
peak RSS at 10^7 rows over peak RSS at 10^6 rows, and rows per CPU-second of the counting pass.
Machines shared with other jobs make wall-clock times noisy; CPU seconds are the steadier
figure (one process, ``n_jobs=1`` and ``NUMBA_NUM_THREADS=1`` where "one core" is claimed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N_NOMINAL = 15
N_NUMERIC = 5
BLOCK = 1_000_000


# ====================================================================== data
def _model(seed: int = 0, n_nominal: int = N_NOMINAL, card=None):
    rng = np.random.default_rng(seed)
    cards = [2 + j % 7 for j in range(n_nominal)] if card is None else [card] * n_nominal
    tables = []
    for j, c in enumerate(cards):
        prev = 1 if j == 0 else cards[j - 1]
        tables.append(np.cumsum(rng.dirichlet(np.full(c, 0.6), size=(2, prev)), axis=-1))
    means = rng.normal(0, 0.7, size=(N_NUMERIC, 2))
    return cards, tables, means


def _block(rng, n, model, numeric=True, positive=0.3):
    cards, tables, means = model
    y = (rng.random(n) < positive).astype(np.int8)
    cols = {}
    prev = np.zeros(n, dtype=np.int64)
    for j, (c, cdf) in enumerate(zip(cards, tables, strict=True)):
        rows = cdf[y, prev]  # (n, c)
        x = (rng.random(n)[:, None] > rows).sum(axis=1)
        x = np.minimum(x, c - 1)
        cols[f"a{j}"] = x
        prev = x
    if numeric:
        for j in range(N_NUMERIC):
            mu = means[j, y] + 0.3 * (cols[f"a{j}"] - cols[f"a{j}"].mean())
            cols[f"n{j}"] = np.round(rng.normal(mu, 1.0), 3)
    return cols, y


def _to_arrow(cols, y, cards):
    import pyarrow as pa

    letters = list("abcdefgh")
    arrays, names = [], []
    for name, v in cols.items():
        if name.startswith("a"):
            card = cards[int(name[1:])]
            arrays.append(pa.DictionaryArray.from_arrays(
                pa.array(v.astype(np.int32)), pa.array(letters[:card])
            ))
        else:
            arrays.append(pa.array(v))
        names.append(name)
    arrays.append(pa.DictionaryArray.from_arrays(pa.array(y.astype(np.int32)),
                                                 pa.array(["neg", "pos"])))
    names.append("class")
    return pa.Table.from_arrays(arrays, names=names)


def generate(rows: int, directory: Path, *, seed: int = 0, n_nominal: int = N_NOMINAL,
             card=None, numeric: bool = True, tag: str = "", positive: float = 0.3,
             csv: bool = True) -> dict:
    """Write ``data<tag>_<rows>.parquet`` (and ``.csv``) unless they exist; return their paths."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"data{tag}_{rows}"
    paths = {"parquet": stem.with_suffix(".parquet"), "csv": stem.with_suffix(".csv")}
    if paths["parquet"].exists() and (not csv or paths["csv"].exists()):
        return paths
    model = _model(seed, n_nominal, card)
    rng = np.random.default_rng(seed + 1)
    pw = cw = None
    tmp = {k: p.with_suffix(p.suffix + ".part") for k, p in paths.items()}
    done = 0
    while done < rows:
        n = min(BLOCK, rows - done)
        cols, y = _block(rng, n, model, numeric, positive)
        table = _to_arrow(cols, y, model[0])
        if pw is None:
            pw = pq.ParquetWriter(tmp["parquet"], table.schema)
            if csv:
                cw = pcsv.CSVWriter(tmp["csv"], table.cast(_plain_schema(table.schema)).schema)
        pw.write_table(table, row_group_size=BLOCK)
        if csv:
            cw.write_table(table.cast(_plain_schema(table.schema)))
        done += n
    pw.close()
    tmp["parquet"].rename(paths["parquet"])
    if csv:
        cw.close()
        tmp["csv"].rename(paths["csv"])
    return paths


def _plain_schema(schema):
    import pyarrow as pa

    return pa.schema([
        pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
        for f in schema
    ])


# ====================================================================== one fit (subprocess)
def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (MB).

    ``VmHWM`` of ``/proc/self/status``: unlike ``getrusage``'s ``ru_maxrss``, which a child
    inherits from the parent it was forked from, it starts afresh at ``exec``.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu() -> float:
    return time.process_time()


def _fit_child(args) -> int:
    from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions

    rss_import = peak_rss_mb()
    m = args.m if args.m in ("auto", "holdout") else float(args.m)
    if args.structure == "eskdb":
        clf = ESKDBClassifier(n_estimators=args.n_estimators, k=args.k, m=m,
                              estimation=args.estimation,
                              sampler=HDPOptions.preset("ensemble", n_iter=args.iterations),
                              random_state=0,
                              n_jobs=args.n_jobs)
    else:
        clf = BayesNetClassifier(args.structure, args.k, m=m, estimation=args.estimation,
                                 sampler=HDPOptions.preset("adaptive", n_iter=args.iterations),
                                 random_state=0, n_jobs=args.n_jobs)
    if args.warm:  # compile (numba cache) on a small file first, outside the timing
        clf.fit(args.warm, chunksize=args.chunksize)
    rss_before = peak_rss_mb()
    t0, c0 = time.perf_counter(), _cpu()
    if args.dask:
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=args.dask, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            ddf = dd.read_parquet(args.path, split_row_groups=True)
            t0, c0 = time.perf_counter(), _cpu()  # the cluster's start-up is not fit time
            clf.fit(ddf, "class", chunksize=args.chunksize)
            wall = time.perf_counter() - t0
    else:
        clf.fit(args.path, chunksize=args.chunksize)
        wall = time.perf_counter() - t0
    cpu = _cpu() - c0
    if args.structure == "eskdb":
        first = clf.members_[0]
        rows, m_used = int(first.trees[0].counts.sum()), [mb.m for mb in clf.members_]
        cuts = sum(len(c.cut_points) for mb in clf.members_ for c in mb.encoder.codings_)
    else:
        rows, m_used = int(clf.trees_[0].counts.sum()), clf.m_
        cuts = sum(len(c.cut_points) for c in clf.encoder_.codings_)
    out = {
        "path": str(args.path), "structure": args.structure, "k": args.k,
        "n_estimators": args.n_estimators if args.structure == "eskdb" else None,
        "estimation": args.estimation, "chunksize": args.chunksize, "rows": rows,
        "passes": clf.n_passes_, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "rows_per_s": round(rows / wall), "m": m_used,
        "peak_rss_mb": round(peak_rss_mb(), 1), "rss_after_import_mb": round(rss_import, 1),
        "rss_before_fit_mb": round(rss_before, 1), "dask_workers": args.dask,
        "cut_points": cuts,
    }
    try:
        import psutil

        out["rss_now_mb"] = round(psutil.Process().memory_info().rss / 2**20, 1)
    except ImportError:  # pragma: no cover
        pass
    print(json.dumps(out))
    return 0


def run_fit(path, *, structure="kdb", k=2, chunksize=100_000, m="auto", n_jobs=None,
            warm=None, dask=0, one_core=False, n_estimators=20, estimation="m",
            iterations=1000) -> dict:
    cmd = [sys.executable, __file__, "_fit", "--path", str(path), "--structure", structure,
           "--k", str(k), "--chunksize", str(chunksize), "--m", str(m), "--dask", str(dask),
           "--n-estimators", str(n_estimators), "--estimation", estimation,
           "--iterations", str(iterations)]
    if n_jobs is not None:
        cmd += ["--n-jobs", str(n_jobs)]
    if warm is not None:
        cmd += ["--warm", str(warm)]
    env = dict(os.environ)
    if one_core:
        env["NUMBA_NUM_THREADS"] = "1"
        env["OMP_NUM_THREADS"] = "1"
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if res.returncode:
        raise RuntimeError(f"fit failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# ====================================================================== the studies
def study_rss(directory: Path, sizes=(1_000_000, 10_000_000), fmt="parquet",
              **fit) -> list[dict]:
    """Peak RSS of one streamed fit per size (``fit``: run_fit's model options, e.g.
    ``structure="eskdb", n_estimators=5, k=5``)."""
    warm = generate(20_000, directory)[fmt]
    results = []
    for rows in sizes:
        paths = generate(rows, directory)
        results.append(run_fit(paths[fmt], warm=warm, **fit))
        print(json.dumps(results[-1]), flush=True)
    if len(results) >= 2:
        ratio = results[-1]["peak_rss_mb"] / results[0]["peak_rss_mb"]
        print(f"peak RSS {results[-1]['rows']:.0e} / {results[0]['rows']:.0e} rows = {ratio:.3f}"
              f" ({results[-1]['peak_rss_mb']:.0f} MB / {results[0]['peak_rss_mb']:.0f} MB)")
    return results


def study_count(rows: int = 4_000_000, chunk: int = 100_000) -> dict:
    """Counting pass only (codes -> kDB-2 context-tree counts), one thread."""
    from fastpath.counts import CountAccumulator, TreeSpec
    from fastpath.structure import kdb

    model = _model(0)
    rng = np.random.default_rng(5)
    cols, y = _block(rng, rows, model, numeric=False)
    codes = np.stack([cols[f"a{j}"] for j in range(N_NOMINAL)], axis=1).astype(np.int64)
    y = y.astype(np.int64)
    cards = model[0]
    s = kdb(codes[:200_000], y[:200_000], cards, 2, 2)
    specs = [TreeSpec(-1, (), 2, ())]
    for i in range(N_NOMINAL):
        order = s.branching_order(i)
        specs.append(TreeSpec(i, (-1, *order), cards[i], (2, *(cards[p] for p in order))))
    CountAccumulator(specs).update(codes[:1000], y[:1000])  # compile
    acc = CountAccumulator(specs)
    t0, c0 = time.perf_counter(), _cpu()
    for r in range(0, rows, chunk):
        acc.update(codes[r : r + chunk], y[r : r + chunk])
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    out = {"attributes": N_NOMINAL, "tables": len(specs), "rows": rows, "chunk": chunk,
           "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
           "rows_per_cpu_s": round(rows / cpu), "rows_per_s": round(rows / wall)}
    print(json.dumps(out), flush=True)
    return out


def study_dask(directory: Path, rows: int = 10_000_000) -> list[dict]:
    paths = generate(rows, directory)
    warm = generate(20_000, directory)["parquet"]
    single = run_fit(paths["parquet"], warm=warm)
    print(json.dumps(single), flush=True)
    cluster = run_fit(paths["parquet"], warm=warm, dask=2)
    print(json.dumps(cluster), flush=True)
    print(f"Dask LocalCluster (2 workers) / one process, wall time: "
          f"{cluster['wall_s'] / single['wall_s']:.2f}")
    return [single, cluster]


def study_mdl(rows: int = 1_000_000, n_test: int = 200_000, max_bins_list=(256, 1024, 4096)):
    """Cut points and accuracy of streaming MDL (class histograms) vs in-memory MDL."""
    import pandas as pd

    from fastpath import BayesNetClassifier
    from fastpath.evaluation import rmse as rmse_fn
    from fastpath.pipeline import FitConfig
    from fastpath.scale import fit_stream

    model = _model(3)
    rng = np.random.default_rng(11)

    def frame(n):
        cols, y = _block(rng, n, model)
        # numeric columns only, 3 decimals and full precision
        df = pd.DataFrame({f"n{j}": cols[f"n{j}"] for j in range(N_NUMERIC)})
        for j in range(N_NUMERIC):
            df[f"r{j}"] = cols[f"n{j}"] + rng.normal(0, 0.2, n)  # ~n distinct values
        return df, np.where(y == 1, "pos", "neg")

    X, y = frame(rows)
    X_test, y_test = frame(n_test)
    t0 = time.perf_counter()
    ref = BayesNetClassifier("kdb", 2, estimation="m", random_state=0).fit(X, y)
    t_mem = time.perf_counter() - t0
    out = []
    xs = {c: np.sort(X[c].to_numpy()) for c in X.columns}

    def summary(clf, label, seconds):
        shift = []
        for a, b in zip(ref.encoder_.codings_, clf.encoder_.codings_, strict=True):
            ra = np.searchsorted(xs[a.name], a.cut_points)
            rb = np.searchsorted(xs[a.name], b.cut_points)
            if len(ra) and len(rb):
                # distance in rows from each in-memory cut to the nearest streaming cut
                shift += [int(np.min(np.abs(rb - r))) for r in ra]
        proba = clf.predict_proba(X_test)
        rec = {
            "fit": label, "seconds": round(seconds, 1),
            "cuts": [len(c.cut_points) for c in clf.encoder_.codings_],
            "median_rank_shift_rows": float(np.median(shift)) if shift else 0.0,
            "accuracy": round(float(np.mean(clf.classes_[proba.argmax(1)] == y_test)), 5),
            "rmse": round(float(rmse_fn(np.searchsorted(clf.classes_, y_test), proba)), 5),
        }
        print(json.dumps(rec), flush=True)
        out.append(rec)

    summary(ref, "in-memory", t_mem)
    df = X.assign(cls=y)
    for mb in max_bins_list:
        t0 = time.perf_counter()
        # the streaming driver itself: max_bins is an option of the out-of-core fit only
        clf = BayesNetClassifier("kdb", 2, estimation="m", random_state=0)
        clf._assign(fit_stream(
            FitConfig.from_params(clf.get_params()),
            lambda: (df.iloc[s : s + 100_000] for s in range(0, rows, 100_000)),
            "cls", max_bins=mb,
        ))
        summary(clf, f"stream max_bins={mb}", time.perf_counter() - t0)
    return out


def study_splice(directory: Path, rows: int = 200_000) -> dict:
    """SkDB-5 on 141 nominal attributes (4 values, 1 % positives), like Splice: per-pass costs.

    The fit runs in a subprocess (``_splice_fit``) so that its peak RSS is its own.
    """
    kw = dict(n_nominal=141, card=4, numeric=False, tag="_splice", positive=0.01, csv=False)
    path = generate(rows, directory, **kw)["parquet"]
    warm = generate(2_000, directory, **kw)["parquet"]
    res = subprocess.run([sys.executable, __file__, "_splice_fit", str(path), str(warm)],
                         capture_output=True, text=True, check=False)
    if res.returncode:
        raise RuntimeError(res.stderr[-3000:])
    out = json.loads(res.stdout.strip().splitlines()[-1])
    print(json.dumps(out), flush=True)
    scale = 50_000_000 / rows
    est = {k: round(v["cpu_s"] * scale / 3600, 2) for k, v in out["passes"].items()}
    print("extrapolated to 5e7 rows (CPU hours per pass):", json.dumps(est))
    return out


def _splice_fit(path: str, warm: str) -> None:
    from fastpath import BayesNetClassifier

    BayesNetClassifier("skdb", 5, estimation="m", random_state=0).fit(warm)  # compile, untimed
    import fastpath.scale._passes as S

    times = {}
    original = S.LocalRunner.run, S.LocalRunner.schema

    def timed(name, fn):
        def wrapper(self, *a, **kw):
            t0, c0 = time.perf_counter(), _cpu()
            try:
                return fn(self, *a, **kw)
            finally:
                label = name if name == "schema" else type(a[1]).__name__
                w, c = times.get(label, (0.0, 0.0))
                times[label] = (w + time.perf_counter() - t0, c + _cpu() - c0)
        return wrapper

    S.LocalRunner.run = timed("run", original[0])
    S.LocalRunner.schema = timed("schema", original[1])
    t0, c0 = time.perf_counter(), _cpu()
    clf = BayesNetClassifier("skdb", 5, estimation="m", random_state=0).fit(path)
    total, total_cpu = time.perf_counter() - t0, _cpu() - c0
    rows = int(clf.trees_[0].counts.sum())
    print(json.dumps({
        "rows": rows, "attributes": 141, "total_wall_s": round(total, 1),
        "total_cpu_s": round(total_cpu, 1),
        "passes": {k: {"wall_s": round(w, 1), "cpu_s": round(c, 1),
                       "us_per_row_cpu": round(1e6 * c / rows, 2)}
                   for k, (w, c) in times.items()},
        "selected": [clf.selection_.n_selected, clf.selection_.k_selected],
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }))


# ====================================================================== hdpbn predict
def _predict_child(args) -> int:
    """``hdpbn predict`` in this process (so that its peak RSS is this process's), or, with
    ``--whole``, what it did before it streamed: the whole table, then one ``to_csv``."""
    import pandas as pd

    t0, c0 = time.perf_counter(), _cpu()
    if args.whole:
        from fastpath import read_table
        from fastpath.classifier._loading import load_classifier

        clf = load_classifier(args.model)
        frame = read_table(args.path).frame
        proba = clf.predict_proba(frame[list(clf.feature_names_in_)])
        out = pd.DataFrame({"prediction": clf.classes_[np.argmax(proba, axis=1)]})
        for j, c in enumerate(clf.classes_):
            out[f"p_{c}"] = proba[:, j]
        out.to_csv(args.out, index=False)
        status = 0
    else:
        from fastpath.cli import main as hdpbn

        status = hdpbn(["predict", args.path, "--model", args.model, "--out", args.out,
                        *(["--chunksize", str(args.chunksize)] if args.chunksize else [])])
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    rows = sum(1 for _ in open(args.out, "rb")) - 1
    print(json.dumps({"path": args.path, "rows": rows, "whole_table": args.whole,
                      "status": status, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                      "peak_rss_mb": round(peak_rss_mb(), 1)}))
    return status


def study_predict(directory: Path, sizes=(1_000_000, 10_000_000), fmt="csv",
                  whole=(1_000_000,), structure: str = "kdb") -> list[dict]:
    """Peak RSS and seconds of ``hdpbn predict`` (streamed, chunks of 10^5 rows) per size,
    and of the whole-table prediction at the sizes ``whole``. The model, fitted on the
    20,000-row file with one thread (``n_jobs=1``, ``NUMBA_NUM_THREADS=1``): kDB-2 with
    m-estimates, or with ``structure="eskdb"`` ``ESKDBClassifier()`` with its defaults."""
    from fastpath import BayesNetClassifier, ESKDBClassifier, read_table

    warm = generate(20_000, directory)[fmt]
    model = directory / f"predict_model_{structure}.npz"
    if structure == "eskdb":
        table = read_table(warm).frame
        ESKDBClassifier(n_jobs=1, random_state=0).fit(
            table.drop(columns="class"), table["class"]).save(model)
    else:
        BayesNetClassifier("kdb", k=2, estimation="m", n_jobs=1, random_state=0).fit(
            warm, chunksize=100_000).save(model)
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = directory / "predictions.csv"
    # compile and load the kernels' cache once, outside the measured runs
    subprocess.run([sys.executable, __file__, "_predict", "--path", str(warm), "--model",
                    str(model), "--out", str(out)], env=env, check=True, capture_output=True)
    results = []
    for rows in sizes:
        path = generate(rows, directory)[fmt]
        for whole_table in ((False, True) if rows in whole else (False,)):
            cmd = [sys.executable, __file__, "_predict", "--path", str(path), "--model",
                   str(model), "--out", str(out), *(["--whole"] if whole_table else [])]
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if res.returncode:
                raise RuntimeError(f"predict failed:\n{res.stderr[-3000:]}")
            results.append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    out.unlink(missing_ok=True)
    streamed = [r for r in results if not r["whole_table"]]
    if len(streamed) >= 2:
        ratio = streamed[-1]["peak_rss_mb"] / streamed[0]["peak_rss_mb"]
        print(f"hdpbn predict peak RSS {streamed[-1]['rows']:.0e} / {streamed[0]['rows']:.0e} "
              f"rows = {ratio:.3f} ({streamed[-1]['peak_rss_mb']:.0f} MB / "
              f"{streamed[0]['peak_rss_mb']:.0f} MB)")
    return results


# ====================================================================== CLI
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--rows", type=int, default=1_000_000)
    for name in ("rss", "dask", "splice", "predict", "all"):
        p = sub.add_parser(name)
        p.add_argument("--dir", type=Path, default=Path("/tmp/hdpbn-scale"))
        if name == "rss":
            p.add_argument("--format", choices=["parquet", "csv"], default="parquet")
            p.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
            p.add_argument("--structure", default="kdb", help="kdb (default) or eskdb, ...")
            p.add_argument("--k", type=int, default=2)
            p.add_argument("--n-estimators", type=int, default=20, help="eskdb: members")
            p.add_argument("--estimation", default="m", choices=["m", "hdp"])
        if name == "splice":
            p.add_argument("--rows", type=int, default=200_000)
        if name == "predict":
            p.add_argument("--format", choices=["parquet", "csv"], default="csv")
            p.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
            p.add_argument("--whole", type=int, nargs="*", default=[1_000_000],
                           help="sizes also predicted as a whole table (as before streaming)")
            p.add_argument("--structure", choices=["kdb", "eskdb"], default="kdb",
                           help="the model: kDB-2 with m-estimates (default) or ESKDBClassifier()")
    g.add_argument("--dir", type=Path, default=Path("/tmp/hdpbn-scale"))
    c = sub.add_parser("count")
    c.add_argument("--rows", type=int, default=4_000_000)
    sub.add_parser("mdl").add_argument("--rows", type=int, default=1_000_000)
    sp = sub.add_parser("_splice_fit")
    sp.add_argument("path")
    sp.add_argument("warm")
    f = sub.add_parser("_fit")
    f.add_argument("--path", required=True)
    f.add_argument("--structure", default="kdb")
    f.add_argument("--k", type=int, default=2)
    f.add_argument("--chunksize", type=int, default=100_000)
    f.add_argument("--m", default="auto")
    f.add_argument("--n-jobs", type=int, default=None)
    f.add_argument("--warm", default=None)
    f.add_argument("--dask", type=int, default=0)
    f.add_argument("--n-estimators", type=int, default=20)
    f.add_argument("--estimation", default="m")
    f.add_argument("--iterations", type=int, default=1000)
    pr = sub.add_parser("_predict")
    pr.add_argument("--path", required=True)
    pr.add_argument("--model", required=True)
    pr.add_argument("--out", required=True)
    pr.add_argument("--chunksize", type=int, default=None)
    pr.add_argument("--whole", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "_predict":
        return _predict_child(args)
    if args.cmd == "_fit":
        return _fit_child(args)
    if args.cmd == "_splice_fit":
        _splice_fit(args.path, args.warm)
        return 0
    if args.cmd == "generate":
        print(generate(args.rows, args.dir))
    elif args.cmd == "rss":
        study_rss(args.dir, tuple(args.sizes), args.format, structure=args.structure, k=args.k,
                  n_estimators=args.n_estimators, estimation=args.estimation)
    elif args.cmd == "count":
        study_count(args.rows)
    elif args.cmd == "dask":
        study_dask(args.dir)
    elif args.cmd == "mdl":
        study_mdl(args.rows)
    elif args.cmd == "splice":
        study_splice(args.dir, args.rows)
    elif args.cmd == "predict":
        study_predict(args.dir, tuple(args.sizes), args.format, tuple(args.whole),
                      args.structure)
    else:
        study_rss(args.dir)
        study_rss(args.dir, fmt="csv")
        study_dask(args.dir)
        # separate processes: each study's peak RSS is its own
        for cmd in (["mdl"], ["splice", "--dir", str(args.dir)], ["count"]):
            subprocess.run([sys.executable, __file__, *cmd], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
