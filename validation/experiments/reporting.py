"""Win/draw/loss counts, the sign test, and the paper's Tables 2 and 3 as markdown.

Comparisons follow the paper ("Experimental design and setting"): for each dataset the metric
is averaged over the folds of the protocol (2-fold cross-validation repeated 5 times); a
classifier *wins* on a dataset when its mean is lower (0-1 loss, RMSE and log loss are losses),
and the win/draw/loss counts over datasets are tested with the two-tailed binomial sign test at
``p <= 0.05`` (:func:`scipy.stats.binomtest`). **Draws are excluded** from the test (the usual
convention of the Monash BNC work): ``p = P(|W - n/2| >= |w - n/2|)`` for
``W ~ Binomial(n = wins + losses, 1/2)``. A draw is a difference of at most
:data:`DRAW_TOLERANCE` between the two means (exact ties of the 0-1 loss are common on small
datasets; the tolerance only absorbs floating-point noise).

The scores are :data:`fastpath.evaluation.METRICS`; ``rmse`` is the paper's (the root of the
Brier score over the number of classes). Results tables written before the Brier score was
recorded hold the RMSE of the true class under ``rmse``: :func:`normalise_results` moves it to
``rmse_true_class`` and keeps it as the paper's RMSE only for two-class datasets, where the two
are equal (a multi-class cell's paper RMSE is then unknown, and a dataset without it for every
fold is left out of that metric's W-D-L).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from fastpath.evaluation import METRICS as EVALUATION_METRICS

__all__ = [
    "DRAW_TOLERANCE",
    "METRICS",
    "PAPER_TABLE2",
    "PAPER_TABLE3",
    "WinDrawLoss",
    "dataset_means",
    "normalise_results",
    "sign_test",
    "summary_markdown",
    "table2_markdown",
    "table3_markdown",
    "win_draw_loss",
]

#: metrics of a fold, all losses (lower is better): fastpath.evaluation.METRICS
METRICS: tuple[str, ...] = tuple(EVALUATION_METRICS)
#: the W-D-L tables' columns: the paper's two, log loss, and the RMSE of the true class (the
#: definition of this project's tables before the paper's was adopted, for continuity)
TABLE_METRICS: tuple[tuple[str, str], ...] = (
    ("zero_one_loss", "0-1 loss"), ("rmse", "RMSE"), ("log_loss", "log loss"),
    ("rmse_true_class", "RMSE, true class"))
DRAW_TOLERANCE = 1e-12
ALPHA = 0.05

#: Table 2 of the paper: HDP vs m-estimates, W-D-L over 68 datasets, (0-1 loss, RMSE)
PAPER_TABLE2: dict[str, tuple[str, str]] = {
    "nb": ("41-4-23", "40-0-28"),
    "tan": ("45-4-19", "52-1-15"),
    "kdb1": ("45-4-19", "50-1-17"),
    "kdb2": ("54-2-12", "54-0-14"),
    "kdb3": ("52-4-12", "53-2-13"),
    "kdb4": ("56-4-8", "56-0-12"),
    "kdb5": ("60-4-4", "60-2-6"),
    "skdb5": ("45-4-19", "54-0-14"),
}

#: Table 3 of the paper: BNC vs random forest, W-D-L over 68 datasets, (0-1 loss, RMSE)
PAPER_TABLE3: dict[tuple[str, str], tuple[str, str]] = {
    ("tan-m", "rf"): ("26-3-39", "25-0-43"),
    ("skdb5-m", "rf"): ("27-3-38", "29-1-38"),
    ("tan-hdp", "rf"): ("42-3-23", "42-0-26"),
    ("skdb5-hdp", "rf"): ("35-3-30", "44-0-24"),
}


def sign_test(wins: int, losses: int) -> float:
    """Two-tailed binomial sign test of ``wins`` against ``losses`` (draws already excluded).

    Parameters
    ----------
    wins, losses : int
        Non-negative counts.

    Returns
    -------
    float
        The exact two-sided p-value of :func:`scipy.stats.binomtest` with success probability
        1/2, ``min(1, 2 P(W <= min(wins, losses)))`` for ``W ~ Binomial(wins + losses, 1/2)``;
        1.0 when there is nothing to test.
    """
    for name, v in (("wins", wins), ("losses", losses)):
        # bool is an int subclass: reject it, a flag is not a count
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    n = int(wins) + int(losses)
    if n == 0:
        return 1.0
    return float(binomtest(int(wins), n, 0.5).pvalue)


@dataclass(frozen=True)
class WinDrawLoss:
    """Win/draw/loss of classifier ``a`` against ``b`` over datasets on one metric."""

    a: str
    b: str
    metric: str
    wins: int
    draws: int
    losses: int
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value <= ALPHA

    @property
    def n(self) -> int:
        return self.wins + self.draws + self.losses

    def __str__(self) -> str:
        return f"{self.wins}-{self.draws}-{self.losses}"

    def markdown(self) -> str:
        """``W-D-L`` (bold when p <= 0.05) and the p-value."""
        text = str(self)
        if self.significant:
            text = f"**{text}**"
        return f"{text} (p={_fmt_p(self.p_value)})"


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def normalise_results(results: pd.DataFrame) -> pd.DataFrame:
    """A results table with every column of :data:`METRICS`, whatever version wrote it.

    A table without a ``brier`` column was written when ``rmse`` was the RMSE of the true class:
    that column becomes ``rmse_true_class``; ``rmse`` and ``brier`` are kept (``rmse``) and
    derived (``2 rmse^2``) where the dataset has two classes, and unknown (NaN) otherwise. A
    table that has ``brier`` is returned as it is (a copy).
    """
    out = results.copy()
    if "brier" in out.columns:
        return out
    if "rmse" not in out.columns or "n_classes" not in out.columns:
        raise ValueError("results lack the columns 'rmse' and 'n_classes' needed to tell which "
                         "RMSE they hold")
    two = out["n_classes"] == 2
    out["rmse_true_class"] = out["rmse"]
    out["brier"] = np.where(two, 2.0 * out["rmse"] ** 2, np.nan)
    out["rmse"] = out["rmse"].where(two)
    return out


def dataset_means(results: pd.DataFrame, extra: Sequence[str] = ()) -> pd.DataFrame:
    """Mean of every metric per (dataset, classifier) over folds; only complete cells.

    ``results`` has one row per fold with columns ``dataset, classifier, repeat, fold`` and the
    metrics. A (dataset, classifier) pair enters only when it has as many folds as the most
    complete classifier on that dataset (so a half-finished run never compares unequal folds).
    ``extra``: more columns to average (a missing value left out of its mean). A metric missing
    in any fold (a multi-class cell of an older table: :func:`normalise_results`) makes that
    dataset's mean of the metric NaN, never a mean over fewer folds.
    """
    if "brier" not in results.columns:
        results = normalise_results(results)
    cols = ["dataset", "classifier", *METRICS, "fit_seconds", "predict_seconds", *extra]
    missing = [c for c in cols if c not in results.columns]
    if missing:
        raise ValueError(f"results lack the columns {missing}")
    grouped = results.groupby(["dataset", "classifier"], sort=True)
    means = grouped[cols[2:]].mean()
    known = grouped[list(METRICS)].count()
    means["folds"] = grouped.size()
    for m in METRICS:
        means.loc[known[m] < means["folds"], m] = np.nan
    full = means.groupby(level="dataset")["folds"].transform("max")
    return means[means["folds"] == full].reset_index()


def win_draw_loss(
    means: pd.DataFrame, a: str, b: str, metric: str = "rmse", *,
    datasets: Iterable[str] | None = None,
) -> WinDrawLoss:
    """W/D/L of ``a`` vs ``b`` over the datasets where both have results (lower metric wins)."""
    if metric not in means.columns:
        raise ValueError(f"unknown metric {metric!r}; have {list(means.columns)}")
    wide = means.pivot(index="dataset", columns="classifier", values=metric)
    for c in (a, b):
        if c not in wide.columns:
            return WinDrawLoss(a, b, metric, 0, 0, 0, 1.0)
    pair = wide[[a, b]].dropna()
    if datasets is not None:
        pair = pair[pair.index.isin(list(datasets))]
    diff = pair[a].to_numpy() - pair[b].to_numpy()
    wins = int(np.sum(diff < -DRAW_TOLERANCE))
    losses = int(np.sum(diff > DRAW_TOLERANCE))
    draws = int(diff.size - wins - losses)
    return WinDrawLoss(a, b, metric, wins, draws, losses, sign_test(wins, losses))


def _structure_label(structure: str) -> str:
    if structure == "nb":
        return "Naive Bayes"
    if structure == "tan":
        return "TAN"
    if structure.startswith("skdb"):
        return f"SkDB-{structure[4:]}"
    return f"kDB-{structure[3:]}"


def table2_markdown(
    means: pd.DataFrame, structures: Sequence[str] | None = None, *, paper: bool = True
) -> str:
    """The paper's Table 2: HDP vs m-estimate W/D/L for each structure (0-1 loss, RMSE)."""
    have = set(means["classifier"])
    if structures is None:
        structures = [s for s in PAPER_TABLE2 if f"{s}-m" in have and f"{s}-hdp" in have]
        extra = sorted(
            {c[: -len("-hdp")] for c in have if c.endswith("-hdp")} - set(PAPER_TABLE2)
        )
        structures = [*structures, *(s for s in extra if f"{s}-m" in have)]
    rows = [(_structure_label(s), f"{s}-hdp", f"{s}-m", PAPER_TABLE2.get(s, ("", "")))
            for s in structures]
    return _wdl_table(means, "Classifier", rows, paper)


def table3_markdown(
    means: pd.DataFrame, pairs: Sequence[tuple[str, str]] | None = None, *, paper: bool = True
) -> str:
    """The paper's Table 3: BNCs vs random forest (and any other pairs), W/D/L."""
    have = set(means["classifier"])
    if pairs is None:
        bncs = ("tan-m", "skdb5-m", "tan-hdp", "skdb5-hdp", "eskdb-m", "eskdb-hdp")
        pairs = [(a, b) for b in ("rf", "rf-onehot", "rf-raw", "xgboost") for a in bncs
                 if a in have and b in have]
    rows = [(f"{a} vs {b}", a, b, PAPER_TABLE3.get((a, b), ("", ""))) for a, b in pairs]
    return _wdl_table(means, "Compared classifiers", rows, paper)


def _wdl_table(means: pd.DataFrame, first: str,
               rows: Sequence[tuple[str, str, str, tuple[str, str]]], paper: bool) -> str:
    """W/D/L on every metric, one row per ``(label, a, b, paper's (0-1 loss, RMSE))``."""
    head = f"| {first} | datasets | " + " | ".join(t for _, t in TABLE_METRICS) + " |"
    sep = "|---|---|" + "---|" * len(TABLE_METRICS)
    if paper:
        head += " paper 0-1 loss | paper RMSE |"
        sep += "---|---|"
    lines = [head, sep]
    for label, a, b, (p01, prmse) in rows:
        cells = [win_draw_loss(means, a, b, m) for m, _ in TABLE_METRICS]
        # a metric known on fewer datasets (older tables' multi-class RMSE) says on how many
        texts = [c.markdown() + ("" if c.n == cells[0].n else f" [{c.n}]") for c in cells]
        row = f"| {label} | {cells[0].n} | " + " | ".join(texts) + " |"
        if paper:
            row += f" {p01} | {prmse} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def summary_markdown(results: pd.DataFrame, classifiers: Sequence[str]) -> str:
    """Each classifier's mean 0-1 loss, RMSE and log loss and its seconds per fit over the
    datasets where all of them have every fold (as many as the most complete of them).

    Metrics: the mean over those datasets of each dataset's mean over folds. Seconds: the
    median over datasets of each dataset's mean per fold, and for the estimation stage
    (``estimation_seconds``: choosing m and estimating the tables; empty for a baseline) also
    the sum over datasets of those means and its share of the summed fit seconds.
    """
    cells = results[results["classifier"].isin(list(classifiers))]
    if "estimation_seconds" not in cells.columns:
        cells = cells.assign(estimation_seconds=np.nan)
    absent = [c for c in classifiers if c not in set(cells["classifier"])]
    if absent:
        raise ValueError(f"no cells of {absent}")
    means = dataset_means(cells, extra=["estimation_seconds"])
    # the datasets where every classifier has all its folds
    present = means.groupby("dataset")["classifier"].nunique()
    complete = present[present == len(set(classifiers))].index
    per = means[means["dataset"].isin(complete)].set_index(["classifier", "dataset"])
    lines = [f"{len(complete)} datasets: mean of the metrics; seconds per fit, median over the "
             "datasets (estimation: also the sum over the datasets, and its share of the fit "
             "seconds)", "",
             "| classifier | 0-1 loss | RMSE | Brier | log loss | estimation s: median | sum | "
             "share | fit s: median | predict s: median |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in classifiers:
        t = per.loc[c]
        timed = t["estimation_seconds"].notna().all()
        est = (f"{t['estimation_seconds'].median():.4f} | {t['estimation_seconds'].sum():.2f} | "
               f"{100 * t['estimation_seconds'].sum() / t['fit_seconds'].sum():.0f} %"
               if timed else " | | ")
        # a metric unknown on one of the datasets (older tables) prints nan, not a partial mean
        lines.append(f"| {c} | {t['zero_one_loss'].mean():.4f} | "
                     f"{t['rmse'].mean(skipna=False):.4f} | {t['brier'].mean(skipna=False):.4f} | "
                     f"{t['log_loss'].mean():.4f} | {est} | {t['fit_seconds'].median():.3f} | "
                     f"{t['predict_seconds'].median():.4f} |")
    return "\n".join(lines) + "\n"


def means_markdown(means: pd.DataFrame, metric: str = "rmse", digits: int = 4) -> str:
    """Per-dataset mean of one metric, datasets x classifiers (best of each row in bold)."""
    wide = means.pivot(index="dataset", columns="classifier", values=metric)
    cols = list(wide.columns)
    lines = ["| dataset | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, row in wide.iterrows():
        best = np.nanmin(row.to_numpy(dtype=float)) if row.notna().any() else np.nan
        cells = []
        for c in cols:
            v = row[c]
            if pd.isna(v):
                cells.append("")
            else:
                text = f"{v:.{digits}f}"
                cells.append(f"**{text}**" if abs(v - best) <= DRAW_TOLERANCE else text)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
