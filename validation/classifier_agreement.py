"""End-to-end agreement: a classifier's predictions with fastpath's tables and with NUTS's.

The tree-by-tree agreement (:mod:`validation.agreement`) compares posterior means; this check
asks the question a user cares about: does a Bayesian network classifier predict the same
whether its conditional tables come from the collapsed Gibbs sampler or from NUTS on the same
model? For every fold of a repeated stratified cross-validation it fits
``BayesNetClassifier(estimation="hdp")`` on the training rows (structure, context trees, Gibbs
tables), runs NUTS (:func:`hdpbn_ppl.infer.fit`, identical priors and tying) on each of the
fitted context trees, and predicts the test rows with both sets of tables -- same structure, same
trees, only the tables differ. m-estimates on the same folds give the baseline the paper compares
with. Reported per fold: RMSE, 0-1 loss and log loss of the three, the largest absolute
difference between the Gibbs and NUTS predicted probabilities, and NUTS's diagnostics::

    python -m validation classifier-agreement --dataset car --structure tan
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from fastpath.classifier import BayesNetClassifier
from fastpath.estimate import HDPOptions
from fastpath.estimate.hdp import PAPER_ITERATIONS
from fastpath.evaluation import (
    align_proba,
    label_codes,
    log_loss,
    rmse,
    stratified_folds,
    take_rows,
    zero_one_loss,
)

__all__ = [
    "ClassifierAgreement",
    "FoldAgreement",
    "nuts_tables",
    "predict_with_tables",
    "report_markdown",
    "run_classifier_agreement",
]


@dataclass(frozen=True)
class FoldAgreement:
    """One test fold: metrics of the three estimators and how far Gibbs and NUTS differ."""

    repeat: int
    fold: int
    n_test: int
    rmse: dict[str, float]
    zero_one_loss: dict[str, float]
    log_loss: dict[str, float]
    max_abs_dp: float  # max over test rows and classes of |P_gibbs(y|x) - P_nuts(y|x)|
    nuts_trees: int
    nuts_untrustworthy: int  # trees whose NUTS run failed a diagnostic check
    nuts_divergences: int
    nuts_max_rhat: float
    seconds: dict[str, float]


@dataclass(frozen=True)
class ClassifierAgreement:
    """All folds of one (data, structure) run, with its settings."""

    data: str
    structure: str
    k: int
    settings: dict[str, Any]
    folds: list[FoldAgreement] = field(default_factory=list)

    def mean(self, metric: str, estimator: str) -> float:
        """Mean over folds of ``metric`` ("rmse", "zero_one_loss", "log_loss") of an estimator
        ("m", "gibbs" or "nuts")."""
        return float(np.mean([getattr(f, metric)[estimator] for f in self.folds]))

    def to_json(self) -> dict:
        return {"data": self.data, "structure": self.structure, "k": self.k,
                "settings": self.settings, "folds": [asdict(f) for f in self.folds]}


def predict_with_tables(classifier: Any, tables: list[np.ndarray], X: Any) -> np.ndarray:
    """P(y | x) of a fitted ``BayesNetClassifier`` with its probability tables replaced
    (:meth:`fastpath.BayesNetClassifier.predict_proba_with_tables`); the classifier is not
    modified."""
    return classifier.predict_proba_with_tables(X, tables)


def nuts_tables(classifier: Any, *, chains: int = 4, warmup: int = 1000, samples: int = 1000,
                seed: int = 0) -> tuple[list[np.ndarray], list[Any]]:
    """NUTS posterior means of every context tree of a classifier fitted with
    ``estimation="hdp"`` (same tying, root concentration and concentration prior), and each run's
    :class:`hdpbn_ppl.infer.NUTSDiagnostics`. Tree ``i`` runs with seed ``(seed, i)``; a run with
    more divergent transitions than 0.1 % of its draws is repeated with smaller steps and a
    longer warm-up (``hdpbn_ppl.infer.RETRIES``, as ``python -m hdpbn_ppl`` does)."""
    # hdpbn_ppl.infer needs JAX (the ppl extra): imported on use, so that the Gibbs-only parts
    # of this module work without it
    from hdpbn_ppl.infer import RETRIES
    from hdpbn_ppl.infer import fit as nuts_fit

    options = classifier.hdp_options()
    if classifier.estimation != "hdp" or options.root != "exact":
        raise ValueError("nuts_tables needs a classifier fitted with estimation='hdp' and "
                         f"root='exact' (got estimation={classifier.estimation!r}, "
                         f"root={options.root!r}): NUTS runs the exact model")
    tables, diagnostics = [], []
    for i, tree in enumerate(classifier.trees_):
        tree_seed = int(np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(1)[0])
        res = nuts_fit(tree, tying=options.tying, n_chains=chains, burn_in=warmup,
                       samples=samples, seed=tree_seed, alpha0=options.alpha0,
                       concentration_shape=options.concentration_shape,
                       concentration_rate=options.concentration_rate, retries=RETRIES,
                       warn=False)
        tables.append(np.array(res.probabilities, dtype=np.float64))
        diagnostics.append(res.diagnostics)
    return tables, diagnostics


def run_classifier_agreement(
    X: Any,
    y: Any,
    *,
    data_name: str = "data",
    structure: str = "tan",
    k: int = 1,
    n_folds: int = 2,
    n_repeats: int = 5,
    seed: int = 0,
    n_iter: int = PAPER_ITERATIONS,
    tying: str = "level",
    chains: int = 4,
    warmup: int = 1000,
    samples: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> ClassifierAgreement:
    """Cross-validate m-estimates, Gibbs HDP tables and NUTS HDP tables on the same folds.

    The classifiers take ``random_state=seed`` (m's holdout, the Gibbs chains); the folds are
    :func:`fastpath.evaluation.stratified_folds` with ``seed``; NUTS's seeds derive from
    ``(seed, repeat, fold)``.
    """
    classes, y_codes = label_codes(y)
    common = {"structure": structure, "k": k, "random_state": seed}
    result = ClassifierAgreement(
        data=data_name, structure=structure, k=k,
        settings={"n_folds": n_folds, "n_repeats": n_repeats, "seed": seed, "n_iter": n_iter,
                  "tying": tying, "nuts_chains": chains, "nuts_warmup": warmup,
                  "nuts_samples": samples},
    )
    for r, f, train, test in stratified_folds(y_codes, n_folds, n_repeats, seed):
        X_train, y_train, X_test = take_rows(X, train), take_rows(y, train), take_rows(X, test)
        yt = y_codes[test]
        proba = {}

        t0 = time.perf_counter()
        m_clf = BayesNetClassifier(estimation="m", **common).fit(X_train, y_train)
        proba["m"] = align_proba(m_clf.predict_proba(X_test), m_clf.classes_, classes)
        t1 = time.perf_counter()
        hdp_clf = BayesNetClassifier(estimation="hdp",
                                     sampler=HDPOptions.preset("adaptive", n_iter=n_iter,
                                                               tying=tying),

                                     **common).fit(X_train, y_train)
        proba["gibbs"] = align_proba(hdp_clf.predict_proba(X_test), hdp_clf.classes_, classes)
        t2 = time.perf_counter()
        fold_seed = int(np.random.SeedSequence(seed, spawn_key=(r, f)).generate_state(1)[0])
        tables, diags = nuts_tables(hdp_clf, chains=chains, warmup=warmup, samples=samples,
                                    seed=fold_seed)
        proba["nuts"] = align_proba(predict_with_tables(hdp_clf, tables, X_test),
                                    hdp_clf.classes_, classes)
        t3 = time.perf_counter()
        secs = {"m": t1 - t0, "gibbs": t2 - t1, "nuts": t3 - t2}
        fold = FoldAgreement(
            repeat=r, fold=f, n_test=len(test),
            rmse={e: rmse(yt, p) for e, p in proba.items()},
            zero_one_loss={e: zero_one_loss(yt, p) for e, p in proba.items()},
            log_loss={e: log_loss(yt, p) for e, p in proba.items()},
            max_abs_dp=float(np.max(np.abs(proba["gibbs"] - proba["nuts"]))),
            nuts_trees=len(diags),
            nuts_untrustworthy=sum(not d.trustworthy for d in diags),
            nuts_divergences=sum(int(d.divergences) for d in diags),
            nuts_max_rhat=float(np.nanmax([d.max_rhat for d in diags])),
            seconds=secs,
        )
        result.folds.append(fold)
        if progress is not None:
            progress(f"repeat {r} fold {f}: RMSE m {fold.rmse['m']:.4f}, gibbs "
                     f"{fold.rmse['gibbs']:.4f}, nuts {fold.rmse['nuts']:.4f}; max |dp| "
                     f"{fold.max_abs_dp:.4f}; NUTS {fold.nuts_untrustworthy} of "
                     f"{fold.nuts_trees} trees untrustworthy ({secs['nuts']:.0f} s)")
    return result


def report_markdown(res: ClassifierAgreement) -> str:
    """One row per fold and a mean row."""
    name = res.structure if res.structure != "kdb" else f"kdb-{res.k}"
    lines = [
        f"{res.data}, {name}: {res.settings['n_folds']}-fold CV x {res.settings['n_repeats']} "
        f"(seed {res.settings['seed']}); Gibbs {res.settings['n_iter']} iterations, "
        f"{res.settings['tying']} tying; NUTS {res.settings['nuts_chains']} chains x "
        f"{res.settings['nuts_samples']} draws after {res.settings['nuts_warmup']} warm-up.",
        "",
        "| repeat, fold | RMSE m | RMSE Gibbs | RMSE NUTS | 0-1 m | 0-1 Gibbs | 0-1 NUTS "
        "| max abs dp Gibbs-NUTS | NUTS: untrustworthy trees, divergences, max R-hat |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in res.folds:
        lines.append(
            f"| {f.repeat}, {f.fold} | {f.rmse['m']:.4f} | {f.rmse['gibbs']:.4f} "
            f"| {f.rmse['nuts']:.4f} | {f.zero_one_loss['m']:.4f} "
            f"| {f.zero_one_loss['gibbs']:.4f} | {f.zero_one_loss['nuts']:.4f} "
            f"| {f.max_abs_dp:.4f} | {f.nuts_untrustworthy} of {f.nuts_trees}, "
            f"{f.nuts_divergences}, {f.nuts_max_rhat:.4f} |")
    if res.folds:
        lines.append(
            f"| **mean** | {res.mean('rmse', 'm'):.4f} | {res.mean('rmse', 'gibbs'):.4f} "
            f"| {res.mean('rmse', 'nuts'):.4f} | {res.mean('zero_one_loss', 'm'):.4f} "
            f"| {res.mean('zero_one_loss', 'gibbs'):.4f} "
            f"| {res.mean('zero_one_loss', 'nuts'):.4f} "
            f"| {max(f.max_abs_dp for f in res.folds):.4f} "
            f"| {sum(f.nuts_untrustworthy for f in res.folds)} of "
            f"{sum(f.nuts_trees for f in res.folds)}, "
            f"{sum(f.nuts_divergences for f in res.folds)}, "
            f"{max(f.nuts_max_rhat for f in res.folds):.4f} |")
    return "\n".join(lines) + "\n"
