"""The ensemble's prediction kernel against an older commit's, side by side in one run.

    python benchmarks/members_kernel.py DATASETS [--before 29c61c1] [--repeat 5]
    python benchmarks/members_kernel.py DATASETS/kddcup.csv.gz --max-train 20000

Until ``692588f`` the kernel that computes every member's ``log P(y, x)``
(``members_joint_log_likelihood`` then, :func:`fastpath.predict._inference.
packed_joint_log_likelihood` now) descended a tree too large to
resolve in advance once per class and read the rows one at a time; now a descended tree's class
branches are merged into one tree over its parents' values (one descent per row) and the rows are
read in blocks, tree by tree.

For every dataset (class column last, ``--typing manifest`` as in the experiments; the first
split of the experiments' protocol, the training half cut to ``--max-train`` rows when given)
``ESKDBClassifier()`` is fitted on the training half and its members' codes of the test half are
computed once; then the older commit's module (``git show REV:fastpath/predict/_inference.py``,
compiled in a temporary folder) and this checkout's pack the same members and compute the joint
log-likelihoods, ``--repeat`` times each, interleaved, on one thread, timed in CPU seconds of
the process (``time.process_time``: the kernel is single-threaded and CPU-bound, so other jobs
on the machine affect it less than the wall clock); the minimum is kept. The two results must
be identical (the script stops otherwise). Prints one JSON line per dataset (trees read from a
table of every parent combination, merged, descended; seconds; packed megabytes) and the median
and range of old / new seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the last commit whose kernel descended every large tree once per class
BEFORE = "29c61c1"


def module_at(commit: str, folder: Path):
    """``fastpath/predict/_inference.py`` at ``commit``, compiled as a module of its own."""
    source = subprocess.run(["git", "show", f"{commit}:fastpath/predict/_inference.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    source = source.replace("from ..", "from fastpath.")
    path = folder / f"inference_{commit}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _packed_bytes(packed) -> int:
    return sum(a.nbytes for a in packed if isinstance(a, np.ndarray))


def _count(models, name: str) -> int:
    return int(sum((getattr(m, name) >= 0).sum() for m in models
                   if getattr(m, name, None) is not None))


def measure(ref, typing: str, old, repeat: int, max_train: int) -> dict:
    from fastpath import ESKDBClassifier
    from fastpath.encode._encoder import code_members
    from fastpath.predict import _inference as new
    from fastpath.utils._threads import limit_threads
    from validation.experiments.runner import CrossValidation, load_dataset

    X, labels = load_dataset(ref, typing)
    y = np.unique(labels, return_inverse=True)[1]
    _, _, train, test = next(iter(CrossValidation().splits(y)))
    if max_train:
        train = train[:max_train]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ESKDBClassifier(n_jobs=1, random_state=0).fit(X.iloc[train], labels[train])
    members = model.members_
    codes, columns = code_members([m.encoder for m in members], X.iloc[test])

    def packed(module):
        if hasattr(module, "members_joint_log_likelihood"):  # older: a model per member, joined
            models = [module.pack_model(m.probability_tables[0][0], m.tree_specs[1:],
                                        m.trees[1:], m.probability_tables[1:]) for m in members]
            pm = module.pack_members(models)
            return pm, lambda: module.members_joint_log_likelihood(models, codes, columns, pm)
        # one layout, every member's trees packed by one call
        pm = module.pack_members([m.probability_tables[0][0] for m in members],
                                 [m.tree_specs[1:] for m in members],
                                 [m.trees[1:] for m in members],
                                 [m.probability_tables[1:] for m in members])
        return pm, lambda: module.packed_joint_log_likelihood(pm, codes, columns)

    (new_packed, new_joint), (old_packed, old_joint) = packed(new), packed(old)
    seconds = {"old": [], "new": []}
    with limit_threads(1):
        if not np.array_equal(new_joint(), old_joint()):
            raise SystemExit(f"{ref.name}: the kernels' results differ")
        for _ in range(repeat):
            for name, joint in (("old", old_joint), ("new", new_joint)):
                start = time.process_time()
                joint()
                seconds[name].append(time.process_time() - start)
    n_trees = new_packed.child_col.size
    dense, merged = _count([new_packed], "dense_offset"), _count([new_packed],
                                                                  "merged_node_offset")
    old_s, new_s = min(seconds["old"]), min(seconds["new"])
    return {"dataset": ref.name, "test_rows": int(test.size),
            "classes": int(model.classes_.size), "trees": n_trees, "resolved": dense,
            "merged": merged, "descended": n_trees - dense - merged,
            "old_s": round(old_s, 5), "new_s": round(new_s, 5),
            "speedup": round(old_s / new_s, 3),
            "old_mb": round(_packed_bytes(old_packed) / 1e6, 1),
            "new_mb": round(_packed_bytes(new_packed) / 1e6, 1)}


def main(argv=None) -> int:
    from validation.experiments.runner import discover_datasets

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="data files or folders (as the experiment runner)")
    ap.add_argument("--before", default=BEFORE, help=f"the older commit (default {BEFORE})")
    ap.add_argument("--repeat", type=int, default=5, help="timings per kernel (minimum kept)")
    ap.add_argument("--exclude", default="", help="dataset names to skip (comma-separated)")
    ap.add_argument("--max-train", type=int, default=0, help="cut the training half to N rows")
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args(argv)
    excluded = {n for n in args.exclude.split(",") if n}
    refs = [r for r in discover_datasets(args.data) if r.name not in excluded]
    speedups = []
    with tempfile.TemporaryDirectory() as folder:
        old = module_at(args.before, Path(folder))
        for ref in refs:
            record = measure(ref, args.typing, old, args.repeat, args.max_train)
            speedups.append(record["speedup"])
            print(json.dumps(record), flush=True)
    if speedups:
        print(json.dumps({"datasets": len(speedups),
                          "median_speedup": round(float(np.median(speedups)), 3),
                          "min_speedup": min(speedups), "max_speedup": max(speedups)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
