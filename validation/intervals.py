"""Coverage of the credible intervals of ``P(y | x)`` by simulation from the model's own prior.

Each replication (a *network*)

1. draws a Bayesian network classifier: two classes, ``n_attributes`` nominal attributes of 2
   to 4 values, and a structure of one of two kinds, naive Bayes (``"nb"``: the class is every
   attribute's only parent) or kDB-1 (``"kdb1"``: attribute ``j > 0`` has the class and one
   earlier attribute, drawn uniformly, as parents); then every table from the HDP prior the
   classifier's sampler assumes (the SBC study's, :mod:`validation.sbc`): per tree a
   concentration per depth ``alpha_d ~ Gamma(2, 1)`` (tying by level), the root
   ``phi_0 ~ Dir(alpha_0 / K)`` (``alpha_0 = 2``), every node ``phi_j ~ Dir(alpha_d
   phi_parent)`` down to the leaves, and the class prior ``~ Dir(alpha_0 / 2)``;
2. draws ``n_train`` training rows and ``n_test`` test rows from it, and computes every test
   row's true ``P(y = 1 | x)`` exactly from the drawn tables;
3. fits :class:`~fastpath.BayesNetClassifier` with HDP estimates keeping ``n_draws`` posterior
   draws (``record_draws=True``, one every ``thin`` iterations after burn-in), either with the
   generating structure given (``structure="given"``: naive Bayes, or the drawn kDB-1 by a
   registered structure learner), learnt (``structure="learnt"``: kDB-1 learnt from the
   rows, for both kinds), or as an ensemble (``structure="ensemble"``: ESKDB of ``members``
   selective kDB-1 members, whose interval is that of the mean of the members' posteriors
   under the draws of all their tables, given the members' structures);
4. counts the test rows whose true ``P(y = 1 | x)`` lies in the interval between the
   ``k``-th and the ``(S + 1 - k)``-th of the ``S`` draws of ``P(y = 1 | x)``
   (:meth:`~fastpath.BayesNetClassifier.predict_proba_draws`): when the true value and the
   draws are exchangeable -- the posterior is exact and the model is the generating one --
   that interval covers it with probability exactly ``(S + 1 - 2k) / (S + 1)``: 0.9 for
   ``S = 199``, ``k = 10``.

Averaged over the prior's networks, the coverage with the structure given must be nominal up
to Monte-Carlo error, for small and large training sets alike (the calibration of a Bayesian
posterior averaged over its prior). The error is estimated across networks (rows of one
network share its tables, so their coverages are not independent): the standard error is the
networks' coverages' standard deviation over ``sqrt(networks)``. With a learnt structure the
interval still covers only the tables' posterior given that structure; what it leaves out,
the structure's own uncertainty, shows as the gap to nominal.

``python -m validation intervals --full --out validation/results/intervals`` writes the table
of docs/validation.md ("Credible intervals of predictions"); ``--quick`` is the suite's check
(``tests/test_validation_intervals.py``).
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.pipeline import StructureLearner, register_structure, unregister_structure
from fastpath.structure import Structure

__all__ = ["FULL", "QUICK", "IntervalStudy", "Network", "draw_network", "report_markdown",
           "run_network", "run_study", "sample_rows", "true_posterior"]

#: the prior the sampler assumes (HDPOptions' defaults): Gamma(2, 1) concentrations, alpha_0 2
SHAPE, RATE, ALPHA0 = 2.0, 1.0, 2.0


@dataclass(frozen=True)
class Network:
    """A drawn classifier: ``parents[j]`` (at most one earlier attribute), ``cards``, the
    class prior (2,) and each attribute's table indexed ``[y, parent value, x]`` (a parent
    axis of size 1 when it has none)."""

    kind: str
    parents: tuple[tuple[int, ...], ...]
    cards: tuple[int, ...]
    class_prior: np.ndarray
    tables: tuple[np.ndarray, ...]

    def structure(self) -> Structure:
        if self.kind == "nb":
            return Structure(kind="nb", parents=tuple(() for _ in self.cards),
                             order=tuple(range(len(self.cards))), k=0)
        return Structure(kind="kdb", parents=self.parents,
                         order=tuple(range(len(self.cards))), k=1)


def _hdp_tree(rng: np.random.Generator, branch_cards: Sequence[int], n_values: int
              ) -> np.ndarray:
    """Leaves of one context tree drawn from the HDP prior (tying by level), shape
    (*branch_cards, n_values)."""
    phi = rng.dirichlet(np.full(n_values, ALPHA0 / n_values))[None, :]
    for card in branch_cards:
        alpha = rng.gamma(SHAPE, 1.0 / RATE)
        parent = np.repeat(phi, card, axis=0)
        # Dir(alpha * phi_parent); a component of a tiny parameter can underflow to 0
        phi = np.stack([_dirichlet(rng, alpha * p) for p in parent])
    return phi.reshape(*branch_cards, n_values)


def _dirichlet(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    g = rng.gamma(np.maximum(a, 1e-300))
    total = g.sum()
    if total <= 0:  # every Gamma underflowed: the largest parameter takes the mass
        g = np.zeros_like(a)
        g[np.argmax(a)] = 1.0
        total = 1.0
    return g / total


def draw_network(kind: str, n_attributes: int, rng: np.random.Generator) -> Network:
    """A network of ``kind`` (``"nb"`` or ``"kdb1"``) with tables from the HDP prior."""
    if kind not in ("nb", "kdb1"):
        raise ValueError(f"kind must be 'nb' or 'kdb1', got {kind!r}")
    cards = tuple(int(c) for c in rng.integers(2, 5, size=n_attributes))
    parents = tuple(() if kind == "nb" or j == 0 else (int(rng.integers(j)),)
                    for j in range(n_attributes))
    class_prior = rng.dirichlet(np.full(2, ALPHA0 / 2))
    tables = []
    for j, card in enumerate(cards):
        branches = [2] + [cards[p] for p in parents[j]]
        leaves = _hdp_tree(rng, branches, card)
        tables.append(leaves if parents[j] else leaves[:, None, :])
    return Network(kind, parents, cards, class_prior, tuple(tables))


def sample_rows(net: Network, n: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows (codes, classes) drawn from the network, attributes in order (every parent
    comes earlier)."""
    y = (rng.random(n) < net.class_prior[1]).astype(np.int64)
    codes = np.zeros((n, len(net.cards)), np.int64)
    for j, table in enumerate(net.tables):
        pa = codes[:, net.parents[j][0]] if net.parents[j] else np.zeros(n, np.int64)
        p = table[y, pa]  # (n, card)
        u = rng.random(n)[:, None]
        codes[:, j] = np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), net.cards[j] - 1)
    return codes, y


def true_posterior(net: Network, codes: np.ndarray) -> np.ndarray:
    """The exact ``P(y = 1 | x)`` of every row."""
    with np.errstate(divide="ignore"):
        log = np.tile(np.log(net.class_prior), (codes.shape[0], 1))
        for j, table in enumerate(net.tables):
            pa = codes[:, net.parents[j][0]] if net.parents[j] else np.zeros(len(codes), int)
            log += np.log(table[:, pa, codes[:, j]]).T
    log -= log.max(axis=1, keepdims=True)
    p = np.exp(log)
    return p[:, 1] / p.sum(axis=1)


def _frame(net: Network, codes: np.ndarray) -> pd.DataFrame:
    """Nominal columns whose categories are every value of the network (a value no training
    row holds is still one of the model's)."""
    return pd.DataFrame({f"x{j}": pd.Categorical(codes[:, j], categories=range(card))
                         for j, card in enumerate(net.cards)})


@dataclass(frozen=True)
class IntervalStudy:
    """The study's grid: network kinds, training sizes, structure modes, networks per cell
    and the sampler's draws (``n_draws`` kept ``thin`` iterations apart after ``burn_in``)."""

    kinds: tuple[str, ...] = ("nb", "kdb1")
    sizes: tuple[int, ...] = (30, 300, 3000)
    modes: tuple[str, ...] = ("given", "learnt", "ensemble")
    networks: int = 100
    members: int = 5
    n_attributes: int = 4
    n_test: int = 200
    n_draws: int = 199
    k: int = 10
    thin: int = 10
    burn_in: int = 200
    seed: int = 2026
    #: more HDPOptions for the fit only: a negative control's wrong prior
    fit_options: tuple[tuple[str, object], ...] = ()

    @property
    def nominal(self) -> float:
        return (self.n_draws + 1 - 2 * self.k) / (self.n_draws + 1)


QUICK = IntervalStudy(kinds=("nb",), sizes=(40,), modes=("given",), networks=6, n_test=100,
                      n_draws=99, k=5, thin=5, burn_in=100)
FULL = IntervalStudy()


def run_network(study: IntervalStudy, kind: str, n_train: int, mode: str, index: int
                ) -> dict:
    """One network's coverage (module docstring), reproducible from the study's seed and the
    network's place in the grid."""
    key = (study.seed, ("nb", "kdb1").index(kind), n_train, index)
    rng = np.random.default_rng(np.random.SeedSequence(key))
    net = draw_network(kind, study.n_attributes, rng)
    codes, y = sample_rows(net, n_train, rng)
    while len(np.unique(y)) < 2:  # the classifier needs both classes: redraw the rows
        codes, y = sample_rows(net, n_train, rng)
    test_codes, _ = sample_rows(net, study.n_test, rng)
    truth = true_posterior(net, test_codes)
    sampler = HDPOptions.preset(
        "adaptive", n_iter=study.burn_in + study.n_draws * study.thin, burn_in=study.burn_in,
        thin=study.thin, record_draws=True, **dict(study.fit_options))
    name = f"interval-study-{kind}-{n_train}-{index}"
    if mode == "given":
        structure = net.structure()
        register_structure(StructureLearner(name, lambda *args: structure))
        params = dict(structure=name)
    elif mode == "learnt":
        params = dict(structure="kdb", k=1)
    elif mode != "ensemble":
        raise ValueError(f"mode must be 'given', 'learnt' or 'ensemble', got {mode!r}")
    try:
        clf = (ESKDBClassifier(n_estimators=study.members, k=1, sampler=sampler,
                               random_state=index) if mode == "ensemble" else
               BayesNetClassifier(estimation="hdp", sampler=sampler, random_state=index,
                                  **params))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(_frame(net, codes), y)
    finally:
        if mode == "given":
            unregister_structure(name)
    draws = clf.predict_proba_draws(_frame(net, test_codes), n_draws=study.n_draws,
                                    random_state=index)[:, :, 1]
    if draws.shape[0] != study.n_draws:
        raise RuntimeError(f"expected {study.n_draws} draws, got {draws.shape[0]}")
    ordered = np.sort(draws, axis=0)
    low, high = ordered[study.k - 1], ordered[study.n_draws - study.k]
    covered = (low <= truth) & (truth <= high)
    return {"kind": kind, "n_train": n_train, "structure": mode, "network": index,
            "coverage": float(covered.mean()), "width": float(np.mean(high - low)),
            "mean_abs_error": float(np.mean(np.abs(clf.predict_proba(
                _frame(net, test_codes))[:, 1] - truth)))}


def run_study(study: IntervalStudy, log=None) -> pd.DataFrame:
    """Every network of the grid, one row each."""
    rows = []
    for kind, size, mode in itertools.product(study.kinds, study.sizes, study.modes):
        start = time.perf_counter()
        for index in range(study.networks):
            rows.append(run_network(study, kind, size, mode, index))
        if log is not None:
            log(f"{kind} n={size} {mode}: {time.perf_counter() - start:.1f} s")
    return pd.DataFrame(rows)


def summarise(rows: pd.DataFrame, nominal: float) -> pd.DataFrame:
    """Per cell: the mean coverage over networks, its standard error across networks, how
    many standard errors it is from nominal, and the mean interval width."""
    cells = rows.groupby(["kind", "n_train", "structure"], sort=False)
    out = cells.agg(networks=("coverage", "size"), coverage=("coverage", "mean"),
                    sd=("coverage", "std"), width=("width", "mean"),
                    mean_abs_error=("mean_abs_error", "mean")).reset_index()
    out["se"] = out["sd"] / np.sqrt(out["networks"])
    out["z"] = (out["coverage"] - nominal) / out["se"].where(out["se"] > 0, math.nan)
    return out.drop(columns="sd")


def report_markdown(summary: pd.DataFrame, nominal: float) -> str:
    lines = [f"| network | training rows | structure | networks | coverage (nominal "
             f"{nominal:.2f}) | standard error | z | mean width | mean abs. error of "
             "predict_proba |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in summary.itertuples():
        lines.append(f"| {r.kind} | {r.n_train} | {r.structure} | {r.networks} | "
                     f"{r.coverage:.3f} | {r.se:.3f} | {r.z:+.1f} | {r.width:.3f} | "
                     f"{r.mean_abs_error:.3f} |")
    return "\n".join(lines) + "\n"
