"""Extending fastpath through its registration points (docs/architecture.md, "Adding an
estimator", "Adding a structure learner", "Changing the sampler"): each test adds a toy part
through the one point of its kind, fits and predicts with it, and removes it."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier, pipeline
from fastpath.cli import main
from fastpath.estimate import HDPOptions, estimate_trees, summarise_fit
from fastpath.io import load_dataset
from fastpath.pipeline import EstimatedTables, StructureLearner, TableEstimator
from fastpath.structure import Structure


@pytest.fixture(scope="module")
def car():
    return load_dataset("car")


# ---------------------------------------------------------------------- an estimator
def _laplace(config, trees, m, tree_names, log):
    """Laplace's rule: (count + 1) / (row total + number of values), every parent row."""
    tables = []
    for tree in trees:
        counts = np.asarray(tree.counts, dtype=np.float64)
        tables.append((counts + 1.0) / (counts.sum(axis=-1, keepdims=True) + counts.shape[-1]))
    return EstimatedTables(tables)


def _registered(record):
    """Register ``record`` (an estimator or a structure learner) for one test, then remove it."""
    estimator = isinstance(record, TableEstimator)
    (pipeline.register_estimator if estimator else pipeline.register_structure)(record)
    yield
    (pipeline.unregister_estimator if estimator else pipeline.unregister_structure)(record.name)


@pytest.fixture
def laplace():
    yield from _registered(TableEstimator("laplace", _laplace))


@pytest.fixture
def chain():
    """The chain-shaped structure learner below, registered for a test."""
    yield from _registered(StructureLearner("chain", _chain, ordered=True))


@pytest.fixture
def short_sampler():
    """The short sampler below, registered for a test."""
    yield from _registered(TableEstimator("hdp-short", _short_sampler, sampler=True))


def test_an_estimator_is_added_at_one_point(car, laplace, tmp_path, capsys):
    X, y = car
    clf = BayesNetClassifier("kdb", k=1, estimator="laplace", random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.8
    # the same tables as m-estimates would not give: the toy's own rule ran
    m1 = BayesNetClassifier("kdb", k=1, estimator="m", m=1.0, random_state=0).fit(X, y)
    assert not np.array_equal(proba, m1.predict_proba(X))
    ESKDBClassifier(n_estimators=2, estimator="laplace", random_state=0).fit(X, y).predict(X)
    # the command line accepts it too
    assert main(["evaluate", "car", "--estimator", "laplace", "--structure", "nb",
                 "--folds", "2", "--repeats", "1"]) == 0
    capsys.readouterr()


def test_registration_refuses_built_in_and_taken_names():
    with pytest.raises(ValueError, match="built-in"):
        pipeline.register_estimator(TableEstimator("hdp", _laplace))
    pipeline.register_estimator(TableEstimator("toy", _laplace))
    try:
        with pytest.raises(ValueError, match="already registered"):
            pipeline.register_estimator(TableEstimator("toy", _laplace))
        pipeline.register_estimator(TableEstimator("toy", _laplace), replace=True)
    finally:
        pipeline.unregister_estimator("toy")
    with pytest.raises(ValueError, match="built-in"):
        pipeline.unregister_structure("kdb")
    assert "toy" not in pipeline.ESTIMATORS
    with pytest.raises(ValueError, match="estimator must be one of"):
        BayesNetClassifier(estimator="toy").fit([[0], [1]], [0, 1])


# ---------------------------------------------------------------------- a structure learner
def _chain(codes, y_codes, cardinalities, n_classes, k, order, scores):
    """Every attribute's parent is the one before it in ``order`` (column order when none is
    given): a kDB-1."""
    order = tuple(range(len(cardinalities))) if order is None else tuple(order)
    parents = [()] * len(order)
    for before, j in itertools.pairwise(order):
        parents[j] = (before,)
    return Structure(kind="kdb", parents=tuple(parents), order=order, k=1)


def test_a_structure_learner_is_added_at_one_point(car, chain):
    X, y = car
    clf = BayesNetClassifier("chain", estimator="m", random_state=0).fit(X, y)
    assert clf.structure_.parents == ((), *tuple((j - 1,) for j in range(1, X.shape[1])))
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.7
    # out of core it needs from_scores: said plainly
    with pytest.raises(ValueError, match="in memory only"):
        BayesNetClassifier("chain", estimator="m").fit(
            iter([X.assign(**{"class": y})]), "class")
    assert "chain" in pipeline.STRUCTURES


class _ChainEnsemble(ESKDBClassifier):
    """An ensemble of chain members (what ESKDBClassifier does with selective kDB)."""

    def _fit_params(self):
        return {**super()._fit_params(), "structure": "chain"}


def test_an_ordered_structure_learner_follows_each_members_drawn_order(car, chain):
    X, y = car
    ens = _ChainEnsemble(4, estimator="m", random_state=0).fit(X, y)
    orders = [member.structure.order for member in ens.members_]
    assert orders[0] == tuple(range(X.shape[1]))  # member 0: no order drawn
    assert len(set(orders[1:])) > 1  # the others: the orders drawn from I(X; Y)
    for member, order in zip(ens.members_, orders, strict=True):
        assert all(member.structure.parents[j] == (i,) for i, j in itertools.pairwise(order))


# ---------------------------------------------------------------------- the sampler
def _short_sampler(config, trees, m, tree_names, log):
    """The HDP sampler with options of its own (one chain, a fixed 200 iterations), its
    output and diagnostics kept as HDP's are."""
    options = dataclasses.replace(config.hdp, n_chains=1, n_iter=200, burn_in=100)
    results = estimate_trees(trees, options, seed=0, n_threads=1)
    names = tree_names or [f"tree{i}" for i in range(len(trees))]
    tables = [np.array(r.probabilities, dtype=np.float64) for r in results]
    return EstimatedTables(tables, results, summarise_fit(results, names, deferred=True))


def test_a_changed_sampler_is_an_estimator_with_the_sampler(car, short_sampler):
    X, y = car
    clf = BayesNetClassifier("nb", estimator="hdp-short", random_state=0).fit(X, y)
    assert isinstance(clf.hdp_options(), HDPOptions)
    assert all((r.options.n_iter, r.options.n_chains) == (200, 1) for r in clf.hdp_results_)
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.7
