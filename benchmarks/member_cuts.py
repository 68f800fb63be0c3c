"""How much of the numeric columns the ensemble's members keep: one-bin attributes, per member.

    python benchmarks/member_cuts.py DATASETS [--members 20] [--seed 0]

For every dataset (class column last, ``--typing manifest`` as in the experiments; the training
half of the experiments' first split) each of ``--members`` members draws its stochastic MDL cut
points of every numeric column as :class:`fastpath.ESKDBClassifier`'s members do (one seed per
numeric column, in column order, from the member's child of one ``SeedSequence``), twice from
the same seeds: without the authors' forced cut (``forced_cut=False``, the members before
2026-11-28) and with it (the default). Prints one JSON line per dataset with numeric columns:

* ``numeric``: numeric attributes with at least two distinct training values;
* ``one_bin_before`` / ``one_bin_after``: member-attributes (of ``members x numeric``) left
  as one bin;
* ``all_one_bin_before`` / ``all_one_bin_after``: attributes that *every* member leaves as one
  bin;
* ``patterns_before`` / ``patterns_after``: distinct vectors of the members' numbers of bins
  (1: every member codes the numeric columns with the same cardinalities);
* ``mean_bins_before`` / ``mean_bins_after``: the mean number of bins of a member-attribute.

Then the totals over the datasets. Counting only (no model is fitted): seconds for the 41.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def member_cuts(X, y_codes: np.ndarray, n_classes: int, n_members: int, seed: int,
                forced_cut: bool) -> list[list[int]]:
    """Every member's number of bins of each numeric column with >= 2 distinct values."""
    from fastpath.encode import TableEncoder, stochastic_mdl_cut_points

    encoder = TableEncoder().fit(X, y_codes, n_classes)
    numeric = [j for j, c in enumerate(encoder.codings_) if c.kind == "numeric"]
    columns = []  # each column's non-missing values and classes, and whether it has >= 2
    for j in numeric:
        x = np.asarray(X.iloc[:, j], dtype=float)
        ok = ~np.isnan(x)
        columns.append((x[ok], y_codes[ok], np.unique(x[ok]).size >= 2))
    bins = []
    for child in np.random.SeedSequence(seed).spawn(n_members):
        rng = np.random.default_rng(child)
        row = []
        for x, y, counted in columns:  # one draw per numeric column, as the members draw
            cuts = stochastic_mdl_cut_points(x, y, n_classes, rng, forced_cut=forced_cut)
            if counted:
                row.append(cuts.size + 1)
        bins.append(row)
    return bins


def main() -> None:
    from validation.experiments.runner import CrossValidation, discover_datasets, load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+", help="dataset folders or files")
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--typing", default="manifest")
    args = ap.parse_args()
    warnings.simplefilter("ignore", UserWarning)  # the data's own notes (empty columns, ...)
    totals = dict(datasets=0, numeric=0, one_bin_before=0, one_bin_after=0,
                  all_one_bin_before=0, all_one_bin_after=0)
    for ref in discover_datasets(args.data):
        X, labels = load_dataset(ref, args.typing)
        classes, y = np.unique(np.asarray(labels).astype(str), return_inverse=True)
        _, _, train, _ = next(iter(CrossValidation().splits(y)))
        X_train, y_train = X.iloc[train], y[train].astype(np.int64)
        line: dict = {"dataset": ref.name}
        for when, forced in (("before", False), ("after", True)):
            bins = np.array(member_cuts(X_train, y_train, len(classes), args.members,
                                        args.seed, forced), dtype=np.int64)
            if bins.size == 0:
                break
            line["numeric"] = int(bins.shape[1])
            line[f"one_bin_{when}"] = int((bins == 1).sum())
            line[f"all_one_bin_{when}"] = int((bins == 1).all(axis=0).sum())
            line[f"patterns_{when}"] = len({tuple(r) for r in bins.tolist()})
            line[f"mean_bins_{when}"] = round(float(bins.mean()), 2)
        if "numeric" not in line:
            continue
        print(json.dumps(line), flush=True)
        totals["datasets"] += 1
        for key in totals:
            if key != "datasets":
                totals[key] += line[key]
    totals["member_attributes"] = totals["numeric"] * args.members
    print(json.dumps({"total": totals}))


if __name__ == "__main__":
    main()
