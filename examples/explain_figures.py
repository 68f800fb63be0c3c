"""The figures of docs/usage.md, "Explanations and credible intervals", and the numbers quoted
there.

    python examples/explain_figures.py [--out docs/img]

credit-a (690 rows, two classes) is split in halves (seed 0); TAN with HDP estimates whose
sampler keeps its posterior draws is fitted on one half and explains and predicts the other:

* ``explain_waterfall.png``: one test row's log-odds, from the class prior through each
  attribute's exact contribution (largest first) to the model's log-odds;
* ``explain_structure.png``: the learnt structure, drawn with matplotlib alone (no Graphviz):
  the class above, the attributes on a circle, an arrow from each attribute's parent;
* ``explain_reliability.png``: the reliability diagram of ``predict_proba`` (test rows binned
  by predicted probability, observed frequency with its 90 % binomial interval), beside every
  test row's 90 % credible interval of ``P(y | x)`` of the second class (``'-'``) sorted by
  its mean.

The teaching notebook (examples/teaching.py, section 9) draws the same three figures with the
functions below.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from fastpath import BayesNetClassifier
from fastpath.io import load_dataset
from fastpath.utils import save_figure


def waterfall(ax, explanation, row: int, top: int = 8) -> None:
    """One row's log-odds as a waterfall: the prior, the ``top`` largest contributions, the
    others together, the ensemble gap when there is one, and the total."""
    odds = explanation.log_odds()
    parts = odds.contributions[row]
    order = np.argsort(-np.abs(parts), kind="stable")
    names = ["prior"] + [explanation.feature_names[j] for j in order[:top]]
    values = [odds.base[row]] + [parts[j] for j in order[:top]]
    if len(order) > top:
        names.append(f"{len(order) - top} others")
        values.append(parts[order[top:]].sum())
    if explanation.n_members > 1:
        names.append("ensemble gap")
        values.append(odds.gap[row])
    start = np.concatenate([[0.0], np.cumsum(values)[:-1]])
    colors = ["tab:gray"] + ["tab:blue" if v > 0 else "tab:red" for v in values[1:]]
    y = np.arange(len(values))[::-1]
    ax.barh(y, values, left=start, color=colors)
    total = float(np.sum(values))
    ax.axvline(total, color="k", lw=1, ls="--")
    ax.axvline(0, color="k", lw=0.5)
    ax.set_yticks(y, names)
    c1, c0 = explanation.classes[1], explanation.classes[0]
    ax.set_xlabel(f"log-odds of {c1!r} against {c0!r}")
    ax.set_title(f"row {row}: log-odds {total:+.2f}, P({c1!r} | x) = "
                 f"{1 / (1 + np.exp(-total)):.3f}")


def draw_structure(ax, member, names) -> None:
    """A member's structure: the class on top, the attributes on a circle, arrows from each
    attribute's attribute parents (the class is every attribute's parent)."""
    structure = member.structure
    n = len(names)
    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    pos = np.stack([np.cos(angle), np.sin(angle) - 0.15], axis=1)
    for j, parents in enumerate(structure.parents):
        for p in parents:
            ax.annotate("", xy=pos[j], xytext=pos[p],
                        arrowprops=dict(arrowstyle="-|>", color="tab:blue", lw=1.5,
                                        shrinkA=12, shrinkB=12))
    for j in range(n):
        ax.annotate("", xy=pos[j], xytext=(0, 0),
                    arrowprops=dict(arrowstyle="-|>", color="0.8", lw=0.6, shrinkA=14,
                                    shrinkB=12))
    ax.scatter(pos[:, 0], pos[:, 1], s=700, color="white", edgecolor="tab:blue", zorder=3)
    for j, name in enumerate(names):
        ax.text(*pos[j], name, ha="center", va="center", fontsize=8, zorder=4)
    ax.scatter([0], [0], s=900, color="tab:orange", zorder=3)
    ax.text(0, 0, "class", ha="center", va="center", fontsize=9, zorder=4)
    ax.set_title(f"{structure.kind.upper()}: grey, the class's arrows; blue, the attributes'")
    ax.set_aspect("equal")
    ax.axis("off")


def reliability(ax, proba, y, name: str, bins: int = 10) -> list[tuple]:
    """The reliability diagram of ``proba`` (of the positive class) against ``y`` (0/1);
    returns (mean predicted, observed, rows) per bin."""
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(proba, edges) - 1, 0, bins - 1)
    out = []
    for b in range(bins):
        mask = which == b
        n = int(mask.sum())
        if n == 0:
            continue
        k = int(y[mask].sum())
        low, high = stats.beta.ppf([0.05, 0.95], k + 0.5, n - k + 0.5)  # Jeffreys
        mean = float(proba[mask].mean())
        ax.errorbar(mean, k / n, yerr=[[k / n - low], [high - k / n]], fmt="o",
                    color="tab:blue", capsize=3)
        out.append((mean, k / n, n))
    ax.plot([0, 1], [0, 1], color="k", lw=0.8, ls="--")
    ax.set_xlabel(f"predicted P({name} | x), mean of the bin")
    ax.set_ylabel(f"observed frequency of {name} (90 % interval)")
    ax.set_title("reliability of predict_proba")
    return out


def intervals(ax, proba, low, high, name: str, level: float = 0.9) -> None:
    """Every row's ``level`` credible interval ``[low, high]`` of a class's probability (a
    vertical line) and its ``predict_proba`` (a dot), rows sorted by ``proba``."""
    order = np.argsort(proba, kind="stable")
    ax.vlines(np.arange(len(order)), low[order], high[order], color="tab:blue", lw=0.8)
    ax.plot(np.arange(len(order)), proba[order], ".", color="k", ms=2)
    ax.set_xlabel(f"test rows, by predicted P({name} | x)")
    ax.set_ylabel(f"P({name} | x): predict_proba and its {100 * level:g} % credible interval")
    ax.set_title("posterior uncertainty of each prediction")


def credit_halves() -> tuple[BayesNetClassifier, pd.DataFrame, np.ndarray]:
    """TAN with HDP estimates, its posterior draws kept, fitted on a random half of credit-a
    (seed 0); the other half's rows and labels."""
    X, y = load_dataset("credit-a")
    y = np.asarray(y)
    rng = np.random.default_rng(0)
    test = rng.permutation(len(X))[: len(X) // 2]
    train = np.setdiff1d(np.arange(len(X)), test)
    clf = BayesNetClassifier(structure="tan", random_state=0)
    clf.set_params(sampler=clf.hdp_options().replace(record_draws=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X.iloc[train], y[train])
    return clf, X.iloc[test].reset_index(drop=True), y[test]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/img"))
    args = parser.parse_args()
    out = Path(args.out)
    matplotlib.use("Agg")  # files only (a notebook importing this module keeps its backend)
    clf, Xt, yt = credit_halves()
    explanation = clf.explain(Xt)
    lp = clf.predict_log_proba(Xt)
    error = np.abs(explanation.log_odds().log_odds - (lp[:, 1] - lp[:, 0])).max()
    print(f"classes {clf.classes_.tolist()}; largest |parts - log-odds| over "
          f"{len(Xt)} test rows: {error:.1e}")
    row = 0
    fig, ax = plt.subplots(figsize=(7, 4))
    waterfall(ax, explanation, row)
    fig.tight_layout()
    save_figure(fig, out / "explain_waterfall.png", dpi=110)
    print(explanation.to_frame().iloc[row].round(3).to_string())
    print("\nmean |contribution| to the log-odds (test rows):")
    print(explanation.importance().head(5).round(3).to_string())
    print("\nI(X; Y | parents), nats (training counts):")
    print(clf.structure_information().head(5).round(3).to_string())
    fig, ax = plt.subplots(figsize=(6, 6))
    draw_structure(ax, clf.members_[0], explanation.feature_names)
    fig.tight_layout()
    save_figure(fig, out / "explain_structure.png", dpi=110)
    proba = clf.predict_proba(Xt)[:, 1]
    positive = (yt == clf.classes_[1]).astype(int)
    low, high = clf.predict_interval(Xt, 0.9)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.5))
    name = repr(clf.classes_[1])
    table = reliability(a, proba, positive, name)
    intervals(b, proba, low[:, 1], high[:, 1], name)
    fig.tight_layout()
    save_figure(fig, out / "explain_reliability.png", dpi=110)
    width = high[:, 1] - low[:, 1]
    print(f"\n90 % intervals: {clf.predict_proba_draws(Xt.head(1)).shape[0]} draws, width "
          f"median {np.median(width):.3f}, 90th percentile {np.quantile(width, 0.9):.3f}")
    print("reliability (mean predicted, observed, rows):")
    for mean, observed, n in table:
        print(f"  {mean:.2f}  {observed:.2f}  {n}")


if __name__ == "__main__":
    main()
