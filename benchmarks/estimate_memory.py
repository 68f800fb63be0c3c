"""Peak memory of ``hdpbn estimate`` at 10^6 and 10^7 rows: chunked reading keeps it flat.

    python benchmarks/estimate_memory.py                 # 10^6 and 10^7 rows, default chunks
    python benchmarks/estimate_memory.py --one-chunk     # also: every row in a single chunk

Writes a two-column child-first CSV (child with 5 values, one parent with 3) of each size into a
temporary folder, runs ``hdpbn estimate FILE --iterations 20 --quiet --json`` on it in a fresh
process and reads that process's peak resident set size from ``/usr/bin/time -v`` (or, without
it, from ``getrusage(RUSAGE_CHILDREN)`` of a wrapper process that runs only that command).
Prints each peak in MB and the ratio of the largest table's peak to the smallest's; the target
(docs/performance.md) is a ratio within 1.10. ``--one-chunk`` adds the same runs with
``--chunksize`` equal to the number of rows, which is what reading the whole table costs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
HDPBN = [sys.executable, "-m", "fastpath.cli._main"]
WRAPPER = (
    "import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
    "print('Maximum resident set size (kbytes):', "
    "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(rc)"
)


def write_table(path: Path, rows: int, seed: int = 0, block: int = 1_000_000) -> None:
    """A child-first CSV: child in 0..4 depends on a parent in 0..2."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(5), size=3)
    with path.open("w") as fh:
        fh.write("child,parent\n")
        for start in range(0, rows, block):
            n = min(block, rows - start)
            parent = rng.integers(0, 3, n)
            u = rng.random(n)[:, None]
            child = (u > np.cumsum(theta[parent], axis=1)).sum(axis=1).clip(0, 4)
            pd.DataFrame({"child": child, "parent": parent}).to_csv(fh, header=False,
                                                                     index=False)


def peak_rss_mb(path: Path, iterations: int, chunksize: int | None) -> tuple[float, dict]:
    """Peak RSS (MB) of one ``hdpbn estimate`` process, and its JSON summary."""
    cmd = [*HDPBN, "estimate", str(path), "--iterations", str(iterations), "--quiet", "--json"]
    if chunksize is not None:
        cmd += ["--chunksize", str(chunksize)]
    time_v = shutil.which("time", path="/usr/bin")
    outer = [time_v, "-v", *cmd] if time_v else [sys.executable, "-c", WRAPPER, *cmd]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(outer, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"hdpbn estimate failed ({proc.returncode}):\n{proc.stderr}")
    match = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", proc.stderr)
    if match is None:
        raise SystemExit(f"no peak RSS in:\n{proc.stderr}")
    return int(match.group(1)) / 1024.0, json.loads(proc.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--iterations", type=int, default=20,
                    help="Gibbs iterations of each run (default: 20; memory does not depend on it)")
    ap.add_argument("--chunksize", type=int, default=None,
                    help="--chunksize of hdpbn estimate (default: its default)")
    ap.add_argument("--one-chunk", action="store_true",
                    help="also run with every row in one chunk (the whole table in memory)")
    args = ap.parse_args(argv)

    peaks: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        peak_rss_mb(_small(Path(tmp)), 5, None)  # warm the numba caches first
        for rows in args.rows:
            path = Path(tmp) / f"t{rows}.csv"
            write_table(path, rows)
            peak, summary = peak_rss_mb(path, args.iterations, args.chunksize)
            if summary["rows"] != rows:
                raise SystemExit(f"counted {summary['rows']} rows, wrote {rows}")
            peaks[rows] = peak
            size = path.stat().st_size / 1e6
            print(f"{rows:>11,d} rows ({size:6.1f} MB CSV): peak RSS {peak:7.1f} MB", flush=True)
            if args.one_chunk:
                whole, _ = peak_rss_mb(path, args.iterations, rows)
                print(f"{'':>11s}      one chunk of {rows:,d} rows: peak RSS {whole:7.1f} MB",
                      flush=True)
            path.unlink()
    lo, hi = min(peaks), max(peaks)
    ratio = peaks[hi] / peaks[lo]
    print(f"ratio peak({hi:,d}) / peak({lo:,d}) = {ratio:.3f} (target <= 1.10)")
    return 0


def _small(folder: Path) -> Path:
    path = folder / "warm.csv"
    write_table(path, 1000)
    return path


if __name__ == "__main__":
    sys.exit(main())
