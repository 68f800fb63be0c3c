"""Accuracy, memory and speed of ``fastpath.estimate.hdp._stirling`` (log unsigned Stirling
numbers).

The numbers are those of the first kind.

    .venv/bin/python benchmarks/stirling_accuracy.py            # everything, about 1-2 minutes
    .venv/bin/python benchmarks/stirling_accuracy.py --quick    # smaller grids, about 20 s

Checks, each reported as the worst absolute error of log S (and where it occurred):

1. the stored table (n <= N_EXACT) against exact Python integers, all n and all t;
2. the table-free formulas used above N_EXACT, evaluated at n <= N_EXACT, against the same integers;
3. the table-free formulas in the two exact strips (t <= 42, n - t <= 42) at n up to 5000,
   against exact integers from the recurrence restricted to those strips;
4. n = 2049 .. 10^7 against ``log_stirling_reference`` (mpmath quadrature of the Cauchy integral
   at 45 digits) at t near 1, at the strip boundaries, near the modes a log n (a = 0.1 .. 100),
   in the middle and near n;
5. sum_t a^t S(n, t) = Gamma(a + n) / Gamma(a) for a from 1e-3 to 1e12 (moves the bulk of the
   sum across all t), n up to 10^6;
6. memory and build time of a table with n_max = 10^7, and nanoseconds per call by region.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath.estimate.hdp import (
    N_EXACT,
    T_EDGE,
    LogStirlingTable,
    log_stirling,
    log_stirling_large,
    log_stirling_reference,
)


def _log_int(x: int) -> float:
    return math.log(x) if x else -math.inf


def exact_rows(n_max: int) -> list[np.ndarray]:
    row = [1]
    out = [np.array([0.0])]
    for m in range(n_max):
        row = [0, *(m * x + y for x, y in zip([*row[1:], 0], row, strict=True))]
        out.append(np.array([_log_int(x) for x in row]))
    return out


def check_exact(tab: LogStirlingTable, n_max: int) -> None:
    t0 = time.perf_counter()
    rows = exact_rows(n_max)
    print(f"exact integer rows up to n = {n_max}: {time.perf_counter() - t0:.1f} s")
    worst = (0.0, 0, 0)
    worst_rel = 0.0
    for n in range(n_max + 1):
        got = tab(n, np.arange(n + 1))
        ref = rows[n]
        assert np.array_equal(np.isneginf(got), np.isneginf(ref))
        fin = np.isfinite(ref)
        err = np.abs(got[fin] - ref[fin])
        i = int(np.argmax(err))
        if err[i] > worst[0]:
            worst = (float(err[i]), n, int(np.arange(n + 1)[fin][i]))
        worst_rel = max(worst_rel, float(np.max(err / np.maximum(np.abs(ref[fin]), 1.0))))
    print(f"1. table vs exact, all n <= {n_max}, all t: worst |err| {worst[0]:.2e} "
          f"at (n, t) = ({worst[1]}, {worst[2]}); worst |err| / max(1, |log S|) {worst_rel:.1e}")
    worst = (0.0, 0, 0)
    ns = [n for n in (64, 100, 200, 500, 1000, 1500, 2000, 2048) if n <= n_max]
    for n in ns:
        t = np.arange(1, n + 1)
        err = np.abs(log_stirling_large(np.full(n, n), t) - rows[n][1:])
        i = int(np.argmax(err))
        if err[i] > worst[0]:
            worst = (float(err[i]), n, int(t[i]))
    print(f"2. table-free formulas vs exact, n in {ns}, all t: worst |err| {worst[0]:.2e} "
          f"at (n, t) = ({worst[1]}, {worst[2]})")


def check_strips(n_top: int) -> None:
    W = T_EDGE + 12
    wanted = sorted({N_EXACT + 1, 2500, 3000, 4000, n_top} | set(range(N_EXACT + 1, n_top + 1, 97)))
    low = [1] + [0] * W
    high = [1] + [0] * W
    worst = (0.0, 0, 0)
    worst_diff = 0.0
    for n in range(n_top):
        low = [0] + [n * low[t] + low[t - 1] for t in range(1, W + 1)]
        high = [1] + [n * high[m - 1] + high[m] for m in range(1, W + 1)]
        if n + 1 in wanted:
            nn = n + 1
            for ref, t in ((np.array([_log_int(x) for x in low[1:]]), np.arange(1, W + 1)),
                           (np.array([_log_int(x) for x in high]), nn - np.arange(W + 1))):
                got = log_stirling_large(np.full(t.size, nn), t)
                err = np.abs(got - ref)
                i = int(np.argmax(err))
                if err[i] > worst[0]:
                    worst = (float(err[i]), nn, int(t[i]))
                worst_diff = max(worst_diff, float(np.max(np.abs(np.diff(got) - np.diff(ref)))))
    print(f"3. strips t <= {W}, n - t <= {W}, {len(wanted)} values of n in "
          f"[{N_EXACT + 1}, {n_top}] vs exact: worst |err| {worst[0]:.2e} at (n, t) = "
          f"({worst[1]}, {worst[2]}); worst error of a difference in t {worst_diff:.2e}")


def mp_points(n: int) -> list[int]:
    ts = {2, 3, 10, T_EDGE + 1, T_EDGE + 2, T_EDGE + 3, 50, int(math.sqrt(n)), n // 10, n // 2,
          (9 * n) // 10, n - 100, n - T_EDGE - 2, n - T_EDGE - 1, n - T_EDGE, n - 3}
    for a in (0.1, 1.0, 10.0, 100.0):
        ts.add(max(1, round(a * math.log(n))))
    return sorted(t for t in ts if 1 <= t <= n)


def check_mpmath(tab: LogStirlingTable, ns: list[int]) -> None:
    worst = (0.0, 0, 0)
    worst_ulp = (0.0, 0, 0)
    t0 = time.perf_counter()
    count = 0
    print("4. table-free region vs mpmath quadrature of the Cauchy integral (45 digits):")
    for n in ns:
        w_n = (0.0, 0)
        u_n = (0.0, 0)
        for t in mp_points(n):
            ref = log_stirling_reference(n, t, dps=45)
            err = abs(tab(n, t) - ref)
            ulps = err / float(np.spacing(abs(ref))) if ref else 0.0
            count += 1
            w_n = max(w_n, (err, t))
            u_n = max(u_n, (ulps, t))
            if err > worst[0]:
                worst = (err, n, t)
            if ulps > worst_ulp[0]:
                worst_ulp = (ulps, n, t)
        print(f"   n = {n:>8}: worst |err| {w_n[0]:.2e} (t = {w_n[1]}), "
              f"worst {u_n[0]:.0f} ulps of log S (t = {u_n[1]})")
    print(f"   {count} points ({time.perf_counter() - t0:.0f} s): worst |err| {worst[0]:.2e} at "
          f"(n, t) = ({worst[1]}, {worst[2]}); worst in ulps of log S {worst_ulp[0]:.0f} at "
          f"({worst_ulp[1]}, {worst_ulp[2]})")


def check_identity(tab: LogStirlingTable, ns: list[int]) -> None:
    worst = (0.0, 0, 0.0)
    for n in ns:
        t = np.arange(1, n + 1)
        logs = tab(n, t)
        k = np.arange(n, dtype=np.float64)
        for a in (1e-3, 0.1, 1.0, 10.0, 100.0, 1e4, 1e6, 1e9, 1e12):
            x = logs + t * math.log(a)
            mx = x.max()
            lhs = mx + math.log(math.fsum(np.exp(x - mx)))
            rhs = (n * math.log(a) + math.fsum(np.log1p(k / a))) if a >= 1 else math.fsum(
                np.log(a + k))
            rel = abs(lhs - rhs) / abs(rhs)
            if abs(lhs - rhs) > worst[0]:
                worst = (abs(lhs - rhs), n, a, rel)
    print(f"5. log sum_t a^t S(n,t) - log Gamma(a+n)/Gamma(a), n in {ns}, a in 1e-3..1e12: worst "
          f"|err| {worst[0]:.2e} (relative {worst[3]:.1e}) at n = {worst[1]}, a = {worst[2]:g}")


@njit(cache=True)
def _bench(ns, ts, kernel_args, reps):
    s = 0.0
    for r in range(reps):
        for i in range(ns.size):
            s += log_stirling(ns[i], ts[i] + (r & 1), kernel_args)
    return s


def check_cost() -> None:
    t0 = time.perf_counter()
    tab = LogStirlingTable(10**7)
    build = time.perf_counter() - t0
    print(f"6. LogStirlingTable(10**7): nbytes {tab.nbytes / 2**20:.1f} MiB, "
          f"built in {build:.3f} s (first call includes numba compilation when not cached)")
    t0 = time.perf_counter()
    LogStirlingTable(10**7)
    print(f"   second build {time.perf_counter() - t0:.3f} s")
    args = tab.kernel_args
    rng = np.random.default_rng(0)
    size = 20_000
    n_big = rng.integers(N_EXACT + 1, 10**7, size)
    cases = {
        "table, n <= 2048, random (n, t)": (n_small := rng.integers(2, N_EXACT, size),
                                            rng.integers(1, n_small)),
        "n > 2048, t - 1 <= 30": (n_big, rng.integers(1, T_EDGE, size)),
        "n > 2048, n - t <= 30": (n_big, n_big - rng.integers(1, T_EDGE, size)),
    }
    for a in (0.1, 1.0, 10.0, 100.0):
        t = np.clip((a * np.log(n_big)).astype(np.int64), T_EDGE + 2, n_big - T_EDGE - 2)
        cases[f"n > 2048, t = max(32, a log n), a = {a:g}"] = (n_big, t)
    cases["n > 2048, t uniform in the saddle region"] = (
        n_big, rng.integers(T_EDGE + 2, n_big - T_EDGE - 2))
    print("   CPU time per call (best of 5), inside a numba loop:")
    for label, (ns, ts) in cases.items():
        ns = np.ascontiguousarray(ns, dtype=np.int64)
        ts = np.ascontiguousarray(ts, dtype=np.int64)
        _bench(ns[:4], ts[:4], args, 1)
        best = math.inf
        for _ in range(5):  # CPU time of this process: robust to other load on the machine
            t0 = time.process_time()
            _bench(ns, ts, args, 4)
            best = min(best, time.process_time() - t0)
        print(f"   {label:45s} {best / (4 * size) * 1e9:7.0f} ns/call")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller grids")
    args = ap.parse_args()
    tab = LogStirlingTable(10**7)
    check_exact(tab, 1000 if args.quick else N_EXACT)
    check_strips(3000 if args.quick else 5000)
    check_mpmath(tab, [N_EXACT + 1, 10**4, 10**7] if args.quick
                 else [N_EXACT + 1, 3000, 10**4, 10**5, 10**6, 10**7])
    check_identity(tab, [N_EXACT + 1, 10**5] if args.quick else [N_EXACT + 1, 10**4, 10**5, 10**6])
    check_cost()


if __name__ == "__main__":
    main()
