"""Figures of the paper's experiments (matplotlib, Agg backend; PNG files).

* :func:`scatter_plot` — per-dataset RMSE of two classifiers (paper, Figure 4a: kDB-5 HDP vs m);
* :func:`win_loss_bars` — wins and losses of HDP vs m-estimates for every structure (Table 2 as
  bars);
* :func:`learning_curve_plot` — mean RMSE against training-set size (paper, Figure 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fastpath.utils import save_figure

from .reporting import PAPER_TABLE2, win_draw_loss

__all__ = ["learning_curve_plot", "scatter_plot", "win_loss_bars"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``path`` (creating its folder), close it, return the path."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def scatter_plot(
    means: pd.DataFrame, x: str, y: str, path: str | Path, metric: str = "rmse",
    *, title: str | None = None,
) -> Path | None:
    """One point per dataset: ``metric`` of classifier ``x`` (abscissa) vs ``y`` (ordinate).

    Points below the diagonal are datasets where ``y`` has the lower loss. Returns the path, or
    None when the two classifiers share no dataset.
    """
    wide = means.pivot(index="dataset", columns="classifier", values=metric)
    if x not in wide.columns or y not in wide.columns:
        return None
    pair = wide[[x, y]].dropna()
    if pair.empty:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(pair[x], pair[y], s=18, color="tab:blue")
    top = float(max(pair.max().max(), 1e-3)) * 1.05
    ax.plot([0, top], [0, top], color="gray", lw=1)
    for name, row in pair.iterrows():
        if abs(row[x] - row[y]) > 0.02:
            ax.annotate(str(name), (row[x], row[y]), fontsize=6, alpha=0.7)
    wdl = win_draw_loss(means, y, x, metric)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(f"{metric} {x}")
    ax.set_ylabel(f"{metric} {y}")
    ax.set_title(title or f"{y} vs {x}: W-D-L {wdl} (p={wdl.p_value:.2g})", fontsize=9)
    return _save(plt, fig, path)


def win_loss_bars(
    means: pd.DataFrame, structures: Sequence[str], path: str | Path, metric: str = "rmse",
    *, paper: bool = True,
) -> Path | None:
    """Wins (up) and losses (down) of ``<s>-hdp`` vs ``<s>-m`` for each structure.

    With ``paper``, the paper's Table 2 counts for RMSE / 0-1 loss are drawn as black ticks
    (they are over 68 datasets, ours over the datasets run: compare proportions, not heights).
    """
    rows = [(s, win_draw_loss(means, f"{s}-hdp", f"{s}-m", metric)) for s in structures]
    rows = [(s, w) for s, w in rows if w.n > 0]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(rows) + 1.5), 4))
    pos = np.arange(len(rows))
    wins = np.array([w.wins for _, w in rows], dtype=float)
    losses = np.array([w.losses for _, w in rows], dtype=float)
    n = np.array([w.n for _, w in rows], dtype=float)
    ax.bar(pos, wins / n, color="tab:green", label="HDP wins")
    ax.bar(pos, -losses / n, color="tab:red", label="HDP loses")
    for i, (_, w) in enumerate(rows):
        mark = "*" if w.significant else ""
        ax.text(i, wins[i] / n[i] + 0.02, f"{w}{mark}", ha="center", fontsize=7)
    if paper and metric in ("rmse", "zero_one_loss"):
        col = 1 if metric == "rmse" else 0
        for i, (s, _) in enumerate(rows):
            if s in PAPER_TABLE2:
                pw, pd_, pl = (int(v) for v in PAPER_TABLE2[s][col].split("-"))
                tot = pw + pd_ + pl
                ax.hlines([pw / tot, -pl / tot], i - 0.4, i + 0.4, colors="black", lw=1.5,
                          label="paper (68 datasets)" if i == 0 else None)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(pos, [s for s, _ in rows])
    ax.set_ylabel("fraction of datasets")
    ax.set_ylim(-1.05, 1.15)
    ax.set_title(f"HDP vs m-estimates, {metric} (* p <= 0.05, sign test)", fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    return _save(plt, fig, path)


def learning_curve_plot(results: pd.DataFrame, path: str | Path, metric: str = "rmse") -> Path:
    """Mean ``metric`` over runs against training size, one panel per dataset."""
    plt = _pyplot()
    datasets = sorted(results["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, name in zip(axes[0], datasets, strict=True):
        sub = results[results["dataset"] == name]
        curve = sub.groupby(["classifier", "size"])[metric].mean().reset_index()
        for clf, part in curve.groupby("classifier"):
            style = "-" if str(clf).endswith("hdp") else "--"
            ax.plot(part["size"], part[metric], style, marker="o", ms=3, label=clf)
        ax.set_xscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel(metric)
        runs = sub["repeat"].nunique()
        ax.set_title(f"{name} (mean of {runs} runs)", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    return _save(plt, fig, path)
