"""The paper's worked example, end to end: MLE, m-estimate, exact HDP, NUTS, collapsed Gibbs.

Run from the repository root (needs the ``ppl`` extra; matplotlib for ``--plots``)::

    python examples/worked_example.py            # the table (about a minute on a laptop CPU)
    python examples/worked_example.py --plots    # also docs/img/ppl_*.png

Naive-Bayes tree for P(X1 | Y), both binary (paper, section "Worked example"):

    dataset 1:  n(X1 | Y=0) = [2, 0],  n(X1 | Y=1) = [20, 5]
    dataset 2:  n(X1 | Y=0) = [2, 0],  n(X1 | Y=1) = [4, 9]

Every HDP column uses the same prior: root Dir(alpha0 / 2) with alpha0 = 2, one concentration
alpha ~ Gamma(2, 1) for depth 1. The table prints P(X1 = 0 | Y = y).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hdpbn_ppl.worked_example import (  # noqa: E402
    DATASETS,
    PAPER_HDP,
    REFERENCE_CODE_HDP,
    exact_posterior,
    m_estimate,
    mle,
    table_posterior,
    worked_example_tree,
)


def gibbs(name: str, seed: int = 1):
    """fastpath's collapsed Gibbs sampler (exact root), 4 chains x 50,000 iterations."""
    try:
        from fastpath.estimate.hdp import HDPOptions, estimate_tree
    except ImportError:  # pragma: no cover - fastpath without its sampler
        return None
    opts = HDPOptions.preset("paper", n_iter=50_000, n_chains=4, concentration_every=1)
    return estimate_tree(worked_example_tree(name), opts, seed=seed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plots", action="store_true", help="write docs/img/ppl_*.png")
    ap.add_argument("--samples", type=int, default=2000, help="NUTS draws per chain")
    args = ap.parse_args(argv)

    from hdpbn_ppl.infer import fit

    rows = []
    fits = {}
    for name, counts in DATASETS.items():
        exact = exact_posterior(counts)
        tables = table_posterior(counts)
        ref = table_posterior(counts, root="reference")
        t0 = time.perf_counter()
        nuts = fit(worked_example_tree(name), n_chains=4, burn_in=1000, samples=args.samples,
                   seed=3)
        fits[name] = nuts
        g = gibbs(name)
        for y in range(2):
            rows.append({
                "dataset": name, "Y": y, "counts": counts[y].tolist(),
                "MLE": mle(counts)[y, 0], "m=1": m_estimate(counts, 1.0)[y, 0],
                "exact": exact.theta[y, 0], "tables": tables.theta[y, 0],
                "NUTS": (nuts.probabilities[1 + y, 0], nuts.mcse[1 + y, 0]),
                "Gibbs": None if g is None else (g.probabilities[1 + y, 0], g.mcse[1 + y, 0]),
                "ref. root": ref.theta[y, 0], "Java code": REFERENCE_CODE_HDP[name][y],
                "paper": PAPER_HDP[name][y],
            })
        print(f"{name}: exact alpha {exact.alpha:.4f}, phi_root {exact.phi[0]:.4f} "
              f"(quadrature error < {exact.error:.1e}); NUTS {nuts.diagnostics.summary()} "
              f"[{time.perf_counter() - t0:.1f} s]")

    def pm(v):
        return "-" if v is None else f"{v[0]:.4f} ± {v[1]:.4f}"

    head = ("| data | Y | n | MLE | m-est. (m=1) | HDP exact | NUTS ± MCSE | Gibbs ± MCSE "
            "| exact, reference root | Java code | paper |")
    print()
    print(head)
    print("|---" * 11 + "|")
    for r in rows:
        print(f"| {r['dataset']} | {r['Y']} | {r['counts']} | {r['MLE']:.2f} | {r['m=1']:.2f} | "
              f"**{r['exact']:.4f}** | {pm(r['NUTS'])} | {pm(r['Gibbs'])} | "
              f"{r['ref. root']:.4f} | {r['Java code']:.4f} | {r['paper']:.2f} |")

    if args.plots:
        _plots(fits["DS1"])
        _shrinkage_plot()
    return 0


SHRINKAGE_TABLE = ["middle-middle-square", "class", "top-left-square", "top-right-square",
                   "bottom-left-square"]


def _shrinkage_plot(nuts: bool = False) -> None:
    """Leaf estimates vs leaf size on a real tree: P(middle square | class, three corners) of
    the UCI Tic-Tac-Toe Endgame data (bundled with fastpath; CC BY 4.0, D. W. Aha)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fastpath.estimate import tree_from_frame
    from fastpath.estimate.hdp import HDPOptions, estimate_tree
    from fastpath.io import load_dataset

    x, y = load_dataset("tic-tac-toe")
    frame = x.assign(**{"class": y})[SHRINKAGE_TABLE]
    coded = tree_from_frame(frame)
    tree = coded.tree
    leaves = np.arange(tree.n_nodes)[tree.leaves]
    counts = tree.counts[leaves].astype(float)
    n = counts.sum(axis=1)
    k = tree.n_values
    p_mle = counts / n[:, None]
    p_m = (counts + 1.0 / k) / (n[:, None] + 1.0)
    hdp = estimate_tree(tree, HDPOptions.preset("paper", n_iter=20_000, n_chains=4), seed=1)
    p_hdp = hdp.probabilities[leaves]
    parent = hdp.probabilities[tree.parent[leaves]]
    value = 0  # the first child value
    label = coded.child_labels[value]

    # one panel above the other: each is as wide as the page (docs/model.md, section 3)
    fig, axes = plt.subplots(2, 1, figsize=(8, 8.4))
    ax = axes[0]
    jitter = np.exp(np.random.default_rng(0).normal(0, 0.03, size=n.size))
    ax.scatter(n * jitter, p_mle[:, value], s=14, c="0.6", label="MLE n/N")
    ax.scatter(n * jitter, p_m[:, value], s=14, marker="s", facecolors="none",
               edgecolors="tab:blue", label="m-estimate (m = 1)")
    ax.scatter(n * jitter, p_hdp[:, value], s=18, c="tab:red", label="HDP (posterior mean)")
    for xi, a, b in zip(n * jitter, p_mle[:, value], p_hdp[:, value], strict=True):
        ax.plot([xi, xi], [a, b], c="tab:red", lw=0.5, alpha=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("rows at the leaf (N)")
    ax.set_ylabel(f"P(middle = {label} | class, corners)")
    ax.set_title("leaf estimates")
    ax.legend(fontsize=8)
    ax = axes[1]
    # how far each estimate moved away from the MLE, towards its prior mean
    ax.scatter(n * jitter, np.abs(p_m - p_mle).max(axis=1), s=14, marker="s",
               facecolors="none", edgecolors="tab:blue", label="m-estimate: towards 1/K")
    ax.scatter(n * jitter, np.abs(p_hdp - p_mle).max(axis=1), s=18, c="tab:red",
               label="HDP: towards the parent node")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows at the leaf (N)")
    ax.set_ylabel("max_k |estimate - MLE|")
    ax.set_title("shrinkage falls with N; HDP's depends on the parent")
    ax.legend(fontsize=8)
    for ax in axes:
        ax.set_xticks([2, 5, 10, 20, 50])
        ax.set_xticks([], minor=True)
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    fig.suptitle("Tic-Tac-Toe (UCI): P(middle-middle-square | class, top-left, top-right, "
                 "bottom-left), 54 leaves", fontsize=10)
    fig.tight_layout()
    out = ROOT / "docs" / "img" / "ppl_shrinkage.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    dist_parent = np.abs(p_hdp - parent).max(axis=1)
    print(f"wrote {out}; median max|HDP - parent| {np.median(dist_parent):.3f}, "
          f"HDP concentrations {np.round(hdp.concentration_mean, 2)}")


def _plots(res) -> None:
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = ROOT / "docs" / "img"
    out.mkdir(parents=True, exist_ok=True)
    dt = res.datatree
    coords = {"phi_0_node": [0], "value": [0]}
    pc = az.plot_trace_dist(dt, var_names=["alpha", "phi_0"], coords=coords,
                            backend="matplotlib")
    pc.savefig(out / "ppl_trace.png")
    plt.close("all")
    pc = az.plot_rank_dist(dt, var_names=["alpha", "phi_0"], coords=coords,
                           backend="matplotlib")
    pc.savefig(out / "ppl_rank.png")
    plt.close("all")
    print(f"wrote {out / 'ppl_trace.png'} and {out / 'ppl_rank.png'}")


if __name__ == "__main__":
    sys.exit(main())
