"""The leave-one-out kernels against the positional ones they replaced.

    python benchmarks/loo_kernel.py [--repeat 15] [--old-commit 74a3ccc] [--datasets NAME ...]

Until ``2b1c588`` the leave-one-out kernels of :mod:`fastpath.structure._selective` took 19 to 23
positional arguments, and the whole-model row kernel (the m choice) repeated the selection
kernel's descent of a tree ("the deliberate twin descent": as a shared, non-inlined numba
function it cost about 10 %). They now take two records (:class:`~fastpath.structure._selective.
LooModel`, :class:`~fastpath.structure._selective.LooSettings`), and since 2026-11-26 (issue 26)
the model's trees are node records (a node's count, its counts and its children's positions side
by side, 32-bit) instead of separate 64-bit arrays.

This script reads the old kernels from git (``git show <commit>:fastpath/structure/_selective.py``,
only the kernel functions, compiled in a temporary module) and gives them the trees as their
separate arrays; for every bundled dataset (``--datasets``; coded with Weka's MDL,
the kDB-5 structure of selective kDB) it times on one numba thread, interleaved, ``--repeat``
times: the selection kernel (every (n*, k*)) and the whole-model kernel, old against new (the new
one both as its ``parallel=True`` compilation on one thread, like the old, and as its serial
twin, what runs under ``limit_threads(1)``). It checks that the sums agree (to the last bits
until 2026-11-27; since then within ``SUMS_RTOL``, the kernels rescaling the class scores only
when they are small instead of renormalising them after every attribute) and prints the
ratios of the minimum times (new / old: below 1 is faster).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastpath.counts import CountAccumulator  # noqa: E402
from fastpath.encode import TableEncoder  # noqa: E402
from fastpath.estimate._m_choice import _loo_model_kernel  # noqa: E402
from fastpath.io import load_dataset  # noqa: E402
from fastpath.structure import kdb, tree_specs  # noqa: E402
from fastpath.structure._selective import (  # noqa: E402
    _loo_kernel,
    loo_chunk_starts,
    loo_model,
    loo_settings,
)

DATASETS = ("car", "credit-a", "kr-vs-kp", "tic-tac-toe")
#: the last commit whose kernels read the trees as separate 64-bit arrays
OLD_COMMIT = "74a3ccc"
OLD_KERNELS = ("loo_row_errors", "loo_row_model_error", "_loo_kernel", "_loo_model_kernel")
#: how far the new sums may be from the old ones, relative (the rounding of products of dozens
#: of probabilities, added over thousands of rows; sums of squared errors near 0 magnify it)
SUMS_RTOL = 1e-9


def old_kernels(commit: str, folder: Path):
    """The kernel functions of ``_selective.py`` at ``commit``, compiled in a module of their
    own."""
    source = subprocess.run(["git", "show", f"{commit}:fastpath/structure/_selective.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    tree = ast.parse(source)
    decorated = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in OLD_KERNELS:
            first = min(d.lineno for d in node.decorator_list)
            lines = source.splitlines()[first - 1 : node.end_lineno]
            decorated.append("\n".join(lines))
    assert len(decorated) == len(OLD_KERNELS), "kernels not found at that commit"
    path = folder / f"old_selective_{commit}.py"
    path.write_text("import math\nimport numpy as np\nfrom numba import njit, prange\n"
                    "from fastpath.utils._threads import threaded_kernel\n\n\n"
                    + "\n\n\n".join(decorated) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problem(name: str, k: int = 5):
    """Codes, classes, the flattened kDB-k trees and K of a bundled dataset."""
    X, labels = load_dataset(name)
    y = np.unique(labels.astype(str), return_inverse=True)[1].astype(np.int64)
    n_classes = int(y.max()) + 1
    encoder = TableEncoder("auto").fit(X, y, n_classes)
    codes = np.ascontiguousarray(encoder.transform(X), dtype=np.int64)
    cards = encoder.cardinalities_
    full = kdb(codes, y, cards, n_classes, k)
    specs = tree_specs(full, cards, n_classes, full.order)[1:]
    acc = CountAccumulator(specs).update(codes, y)
    trees = [acc.tree(t) for t in range(len(specs))]
    class_counts = np.bincount(y, minlength=n_classes)
    return (codes, y, loo_model(specs, trees, class_counts),
            old_arrays(specs, trees, class_counts), full.k)


class OldLooModel(NamedTuple):
    """The old kernels' ``LooModel``: separate 64-bit arrays of totals, slot offsets, slots and
    counts (fields as at ``OLD_COMMIT``)."""

    child_col: np.ndarray
    cond_ptr: np.ndarray
    cond_cols: np.ndarray
    node_offset: np.ndarray
    lookup_offsets: np.ndarray
    lookup_base: np.ndarray
    child_lookup: np.ndarray
    n_values: np.ndarray
    count_offset: np.ndarray
    counts: np.ndarray
    totals: np.ndarray
    class_counts: np.ndarray


def old_arrays(specs, trees, class_counts) -> OldLooModel:
    """The trees as the old kernels read them."""
    cond_ptr = np.zeros(len(specs) + 1, np.int64)
    cond_ptr[1:] = np.cumsum([len(s.conditioning) - 1 for s in specs])
    node_offset = np.zeros(len(trees) + 1, np.int64)
    node_offset[1:] = np.cumsum([t.n_nodes for t in trees])
    lookup_base = np.zeros(len(trees), np.int64)
    lookup_base[1:] = np.cumsum([t.child_lookup.size for t in trees])[:-1]
    count_offset = np.zeros(len(trees), np.int64)
    count_offset[1:] = np.cumsum([t.counts.size for t in trees])[:-1]
    return OldLooModel(
        np.asarray([s.child for s in specs], np.int64), cond_ptr,
        np.asarray([c for s in specs for c in s.conditioning[1:]], np.int64), node_offset,
        np.concatenate([t.lookup_offsets for t in trees]).astype(np.int64), lookup_base,
        np.concatenate([t.child_lookup for t in trees]).astype(np.int64),
        np.asarray([t.n_values for t in trees], np.int64), count_offset,
        np.concatenate([t.counts.ravel() for t in trees]).astype(np.int64),
        np.concatenate([t.counts.sum(axis=1) for t in trees]).astype(np.int64),
        np.asarray(class_counts, np.int64),
    )


def kernel_runs(old, codes, y, model, arrays, settings, max_k, cs) -> dict:
    """Each timed kernel as a function of the sums it adds to."""
    empty = np.zeros(0, np.uint8)  # every row scored
    return {
        "select old": lambda s: old._loo_kernel(codes, y, arrays, settings, cs, empty, s),
        "select new": lambda s: _loo_kernel.parallel(codes, y, model, settings, cs, empty, s),
        "select new serial": lambda s: _loo_kernel.serial(codes, y, model, settings, cs, empty,
                                                           s),
        "whole old": lambda s: old._loo_model_kernel(codes, y, arrays, settings, cs, s),
        "whole new": lambda s: _loo_model_kernel.parallel(codes, y, model, settings, cs, s),
        "whole new serial": lambda s: _loo_model_kernel.serial(codes, y, model, settings, cs,
                                                               s),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--old-commit", default=OLD_COMMIT)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = ap.parse_args(argv)
    # the old kernels are plain parallel kernels: one thread through numba itself
    numba.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        old = old_kernels(args.old_commit, Path(tmp))
        totals: dict[str, float] = {}
        for name in args.datasets:
            codes, y, model, arrays, max_k = problem(name)
            cs = loo_chunk_starts(codes.shape[0])
            shape = (cs.size - 1, model.child_col.size, max_k + 1)
            settings = loo_settings(1.0, False, max_k, codes.shape[0])
            runs = kernel_runs(old, codes, y, model, arrays, settings, max_k, cs)
            sums = {}
            for key, run in runs.items():  # compiles (or loads) every kernel first
                sums[key] = np.zeros(shape)
                run(sums[key])
            worst = 0.0
            for kind in ("select", "whole"):
                for key in (f"{kind} new", f"{kind} new serial"):
                    # the same sums up to rounding: since 2026-11-27 the scores are rescaled
                    # only when small, not renormalised after every attribute
                    old_sums = sums[f"{kind} old"]
                    gap = float(np.max(np.abs(sums[key] - old_sums) / np.maximum(
                        np.abs(old_sums), 1e-300), initial=0.0))
                    if not gap <= SUMS_RTOL:
                        raise AssertionError(f"{name}: {key} differs from the old kernel by "
                                             f"{gap:.2e} (relative)")
                    worst = max(worst, gap)
            best = dict.fromkeys(runs, np.inf)
            for _ in range(args.repeat):
                for key, run in runs.items():
                    sse = np.zeros(shape)
                    t0 = time.perf_counter()
                    run(sse)
                    best[key] = min(best[key], time.perf_counter() - t0)
            for key, t in best.items():
                totals[key] = totals.get(key, 0.0) + t
            print(f"{name}: {codes.shape[0]} rows, {model.child_col.size} trees, K = {max_k}, "
                  f"{model.class_counts.size} classes (sums within {worst:.1e} relative)")
            for kind in ("select", "whole"):
                o = best[f"{kind} old"]
                print(f"  {kind:6s} old {o * 1e3:8.2f} ms   new {best[f'{kind} new'] * 1e3:8.2f} "
                      f"ms ({best[f'{kind} new'] / o:.3f})   new serial "
                      f"{best[f'{kind} new serial'] * 1e3:8.2f} ms "
                      f"({best[f'{kind} new serial'] / o:.3f})", flush=True)
        for kind in ("select", "whole"):
            o = totals[f"{kind} old"]
            print(f"summed over datasets, {kind}: new / old {totals[f'{kind} new'] / o:.3f}, "
                  f"new serial / old {totals[f'{kind} new serial'] / o:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
