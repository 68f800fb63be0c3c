"""The HDP classifiers' cells of an experiments cache: iterations per tree, warnings, seconds.

    python benchmarks/sampler_cells.py results/exp-default/cache \
        --classifiers tan-hdpa,kdb3-hdpa,skdb5-hdpa,eskdb-hdpa,tan-hdp

For every classifier named, over its cached cells (one per dataset and fold, as the experiment
runner wrote them): how many cells there are, the distribution of the iterations its trees ran
(each cell records the smallest, median and largest iterations per tree and how many trees
stopped at ``max_iter``), the share of cells (folds) whose fit raised an
``UnconvergedWarning``, and the summed fit and HDP sampling seconds. Accuracy is compared with
``python -m validation.experiments compare``; sampling time side by side with
``benchmarks/sampler_presets.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

#: how the runner's record names a fit's UnconvergedWarning (its message's start)
WARNING_START = "the HDP estimates of"


def cells(cache: Path, classifiers: set[str]) -> dict[str, list[dict]]:
    """The cached records of ``classifiers``, by classifier."""
    out: dict[str, list[dict]] = defaultdict(list)
    for path in cache.rglob("*.json"):
        record = json.loads(path.read_text())
        if record.get("classifier") in classifiers:
            out[record["classifier"]].append(record)
    return out


def summary_line(name: str, records: list[dict]) -> str:
    its = [r["details"]["hdp_iterations"] for r in records
           if "hdp_iterations" in r.get("details", {})]
    warned = sum(any(str(w).startswith(WARNING_START) or "not certified" in str(w)
                     for w in (r.get("warnings") or [])) for r in records)
    fit = sum(r["fit_seconds"] for r in records)
    hdp = sum(r.get("details", {}).get("hdp_seconds", 0.0) for r in records)
    datasets = len({r["dataset"] for r in records})
    if not its:
        return f"| {name} | {datasets} | {len(records)} | - | - | - | - | {warned} | {fit:.0f} |"
    mins = np.array([i["min"] for i in its])
    maxs = np.array([i["max"] for i in its])
    at_max = sum(i["at_max_iter"] for i in its)
    first = int(mins.min())
    every_first = float(np.mean(maxs == first))
    return (f"| {name} | {datasets} | {len(records)} | {first} | {every_first:.1%} | "
            f"{int(np.median(maxs))} / {int(maxs.max())} | {at_max} | "
            f"{warned} ({warned / len(records):.1%}) | {fit:.0f} / {hdp:.0f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", help="an experiments cache folder (or one protocol's folder)")
    ap.add_argument("--classifiers", required=True, help="comma-separated classifier names")
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.classifiers.split(",") if c.strip()]
    found = cells(Path(args.cache), set(names))
    print("| classifier | datasets | cells | fewest iterations | cells whose every tree "
          "stopped there | median / largest of the cells' longest tree | tree fits at "
          "max_iter | cells with an UnconvergedWarning | fit s / HDP s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        if name not in found:
            print(f"| {name} | no cells | | | | | | | |")
            continue
        print(summary_line(name, found[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
