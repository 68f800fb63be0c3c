"""Extending fastpath through its registration points (docs/architecture.md, "Adding an
estimator", "Adding a structure learner", "Changing the sampler"): each test adds a toy part
through the one point of its kind, fits and predicts with it, and removes it."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools

import numpy as np
import pytest
from sklearn.base import clone

from fastpath import BayesNetClassifier, ESKDBClassifier, pipeline
from fastpath.cli import main
from fastpath.estimate import HDPOptions, estimate_trees, summarise_fit
from fastpath.io import load_dataset
from fastpath.pipeline import EstimatedTables, EstimationContext, StructureLearner, TableEstimator
from fastpath.structure import Structure


@pytest.fixture(scope="module")
def car():
    return load_dataset("car")


# ---------------------------------------------------------------------- an estimator
@dataclasses.dataclass(frozen=True)
class LaplaceOptions:
    """Options of the toy estimator below, given as ``estimation=LaplaceOptions(prior=...)``."""

    prior: float = 1.0


def _laplace(trees, context):
    """Laplace's rule: (count + prior) / (row total + prior x number of values), every node
    (``prior`` from the estimator's options: 1 for the bare name)."""
    prior = 1.0 if context.options is None else context.options.prior
    tables = []
    for tree in trees:
        counts = np.asarray(tree.counts, dtype=np.float64)
        tables.append((counts + prior)
                      / (counts.sum(axis=-1, keepdims=True) + prior * counts.shape[-1]))
    return EstimatedTables(tables)


@contextlib.contextmanager
def _registered(record):
    """Register ``record`` (an estimator or a structure learner) for a block, then remove it,
    whatever the block raised."""
    estimator = isinstance(record, TableEstimator)
    (pipeline.register_estimator if estimator else pipeline.register_structure)(record)
    try:
        yield
    finally:
        (pipeline.unregister_estimator if estimator
         else pipeline.unregister_structure)(record.name)


@pytest.fixture
def laplace():
    with _registered(TableEstimator("laplace", _laplace)):
        yield


@pytest.fixture
def chain():
    """The chain-shaped structure learner below, registered for a test."""
    with _registered(StructureLearner("chain", _chain, _chain_from_scores, ordered=True)):
        yield


@pytest.fixture
def short_sampler():
    """The short sampler below, registered for a test."""
    with _registered(TableEstimator("hdp-short", _short_sampler, sampler=True)):
        yield


def test_an_estimator_is_added_at_one_point(car, laplace, tmp_path, capsys):
    X, y = car
    clf = BayesNetClassifier("kdb", k=1, estimation="laplace", random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.8
    # the same tables as m-estimates would not give: the toy's own rule ran
    m1 = BayesNetClassifier("kdb", k=1, estimation="m", m=1.0, random_state=0).fit(X, y)
    assert not np.array_equal(proba, m1.predict_proba(X))
    ESKDBClassifier(n_estimators=2, estimation="laplace", random_state=0).fit(X, y).predict(X)
    # the command line accepts it too
    assert main(["evaluate", "car", "--estimation", "laplace", "--structure", "nb",
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
    # each kind reserves its own names: "eskdb" is the command line's ensemble structure, and
    # a structure may be called as an estimator is
    with pytest.raises(ValueError, match="'eskdb' is a built-in name"):
        pipeline.register_structure(StructureLearner("eskdb", _chain))
    with _registered(StructureLearner("hdp", _chain)):
        assert "hdp" in pipeline.STRUCTURES
    with pytest.raises(ValueError, match="selective=True is the built-in 'skdb'"):
        pipeline.register_structure(StructureLearner("mine", _chain, selective=True))
    with pytest.raises(TypeError, match="expected a StructureLearner"):
        pipeline.register_structure(TableEstimator("mine", _laplace))
    assert "toy" not in pipeline.ESTIMATORS and "mine" not in pipeline.STRUCTURES
    with pytest.raises(ValueError, match="estimation must be one of"):
        BayesNetClassifier(estimation="toy").fit([[0], [1]], [0, 1])


# ---------------------------------------------------------------------- a structure learner
def _chain(codes, y_codes, cardinalities, n_classes, k, order, scores):
    """Every attribute's parent is the one before it in ``order`` (column order when none is
    given): a kDB-1."""
    order = tuple(range(len(cardinalities))) if order is None else tuple(order)
    parents = [()] * len(order)
    for before, j in itertools.pairwise(order):
        parents[j] = (before,)
    return Structure(kind="kdb", parents=tuple(parents), order=order, k=1)


def _chain_from_scores(mi, cmi, n_attributes, k, order):
    """The same chain from the scores an out-of-core fit gathers (it reads none of them)."""
    return _chain(None, None, (0,) * n_attributes, 0, k, order, None)


def test_a_structure_learner_is_added_at_one_point(car, chain):
    X, y = car
    clf = BayesNetClassifier("chain", estimation="m", random_state=0).fit(X, y)
    assert clf.structure_.parents == ((), *tuple((j - 1,) for j in range(1, X.shape[1])))
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.7
    assert "chain" in pipeline.STRUCTURES


def test_a_learner_without_from_scores_fits_in_memory_only(car):
    X, y = car
    with _registered(StructureLearner("chain-mem", _chain, ordered=True)):
        BayesNetClassifier("chain-mem", estimation="m").fit(X, y)
        with pytest.raises(ValueError, match="in memory only"):
            BayesNetClassifier("chain-mem", estimation="m").fit(
                iter([X.assign(**{"class": y})]), "class")


def test_an_ordered_structure_learner_follows_each_members_drawn_order(car, chain):
    X, y = car
    ens = ESKDBClassifier(4, estimation="m", structure="chain", random_state=0).fit(X, y)
    orders = [member.structure.order for member in ens.members_]
    assert orders[0] == tuple(range(X.shape[1]))  # member 0: no order drawn
    assert len(set(orders[1:])) > 1  # the others: the orders drawn from I(X; Y)
    for member, order in zip(ens.members_, orders, strict=True):
        assert all(member.structure.parents[j] == (i,) for i, j in itertools.pairwise(order))


def test_an_ensemble_takes_ordered_learners_only(car):
    X, y = car
    for name in ("nb", "tan"):
        with pytest.raises(ValueError, match=r"ordered structure learner, one of \('kdb', "
                                             r"'skdb'\), got '" + name):
            ESKDBClassifier(2, structure=name).fit(X, y)
    with pytest.raises(ValueError, match="an ordered learner reads the scores"):
        pipeline.register_structure(StructureLearner("x", _chain, ordered=True, scores=False))


# ---------------------------------------------------------------------- the sampler
def _short_sampler(trees, context):
    """The HDP sampler with options of its own (one chain, a fixed 200 iterations), its
    output and diagnostics kept as HDP's are."""
    options = context.tree_sampler.replace(n_chains=1, n_iter=200, burn_in=100)
    results = estimate_trees(trees, options, seed=context.seed, n_threads=context.n_threads)
    names = context.tree_names or [f"tree{i}" for i in range(len(trees))]
    tables = [np.array(r.probabilities, dtype=np.float64) for r in results]
    return EstimatedTables(tables, results, summarise_fit(results, names, deferred=True))


def test_a_changed_sampler_is_an_estimator_with_the_sampler(car, short_sampler):
    X, y = car
    clf = BayesNetClassifier("nb", estimation="hdp-short", random_state=0).fit(X, y)
    assert isinstance(clf.hdp_options(), HDPOptions)
    assert all((r.options.n_iter, r.options.n_chains) == (200, 1) for r in clf.hdp_results_)
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.7


# ---------------------------------------------------------------------- what the points check
def _m_rule(trees, context):
    """m-estimates with the chosen m, every tree (a toy that reads m)."""
    from fastpath.estimate import m_estimate_table

    seen_m.append(context.m)
    return EstimatedTables([m_estimate_table(t, context.m, context.m_backoff) for t in trees])


seen_m: list = []


def test_an_estimator_that_chooses_m_gets_each_members_m(car):
    X, y = car
    seen_m.clear()
    with _registered(TableEstimator("m-toy", _m_rule, chooses_m=True)):
        ens = ESKDBClassifier(n_estimators=3, estimation="m-toy", m="auto",
                              random_state=0).fit(X, y)
        ref = ESKDBClassifier(n_estimators=3, estimation="m", m="auto", random_state=0).fit(X, y)
    assert seen_m == [member.m for member in ens.members_]
    assert all(isinstance(m, float) for m in seen_m)
    assert [member.m_scores for member in ens.members_] == [
        member.m_scores for member in ref.members_]
    np.testing.assert_array_equal(ens.predict_proba(X), ref.predict_proba(X))


def _wrong_shape(trees, context):
    return EstimatedTables([np.full((1, t.counts.shape[1]), 0.5) for t in trees])


def _too_few(trees, context):
    return EstimatedTables([])


def _out_of_range(trees, context):
    return EstimatedTables([np.full(t.counts.shape, 2.0) for t in trees])


@pytest.mark.parametrize("estimate, match", [
    (_wrong_shape, r"table \d+ must be a float64 array of shape"),
    (_too_few, r"returned 0 tables for \d+ trees"),
    (_out_of_range, r"table 0 \(P\(class\)\), node 0: its row \[2\.0, .*\] holds values "
                    r"outside \[0, 1\]"),
])
# "kdb": a structure's name is free for an estimator, and its tables are checked all the same
@pytest.mark.parametrize("name", ["bad", "kdb"])
def test_an_estimators_tables_are_checked(car, estimate, match, name):
    X, y = car
    with _registered(TableEstimator(name, estimate)):
        with pytest.raises(ValueError, match=f"estimator '{name}'.*{match}"):
            BayesNetClassifier("nb", estimation=name).fit(X, y)


def _spied(estimate):
    """``estimate`` recording the context of every call, and the list it records them in."""
    seen = []

    def spy(trees, context):
        seen.append(context)
        return estimate(trees, context)

    return spy, seen


def test_the_context_is_the_fits_parameters(car):
    X, y = car
    spy, seen = _spied(_laplace)
    with _registered(TableEstimator("spy", spy, options=LaplaceOptions)):
        BayesNetClassifier("nb", estimation=LaplaceOptions(0.5), m_backoff="value", n_jobs=1,
                           random_state=7).fit(X, y)
        ESKDBClassifier(3, estimation="spy", random_state=7).fit(X, y)
    single, ensemble = seen[0], seen[-1]
    assert isinstance(single, EstimationContext)
    assert single.options == LaplaceOptions(0.5) and ensemble.options == LaplaceOptions()
    assert (single.m_backoff, single.seed, single.n_threads) == ("value", 7, 1)
    assert (single.m, single.sampler, single.n_members, ensemble.n_members) == (None, None, 1,
                                                                              3)


def test_a_sampler_estimator_samples_to_the_members_tolerance(car):
    X, y = car
    spy, seen = _spied(_short_sampler)
    with _registered(TableEstimator("hdp-spy", spy, sampler=True)):
        ESKDBClassifier(4, estimation="hdp-spy", random_state=0).fit(X, y)
    (context,) = seen
    assert context.sampler == HDPOptions.preset("ensemble")
    assert context.tree_sampler.mcse_tolerance == pytest.approx(0.01 * 2)


def _half_rows(trees, context):
    return EstimatedTables([np.full(t.counts.shape, 0.5 / t.counts.shape[1]) for t in trees])


def test_rows_that_are_not_probability_vectors_are_refused_naming_the_node(car):
    X, y = car
    with _registered(TableEstimator("half", _half_rows)):
        with pytest.raises(ValueError, match=r"estimator 'half': table 0 \(P\(class\)\), node 0:"
                                             r" its row sums to 0\.5, not 1"):
            BayesNetClassifier("nb", estimation="half").fit(X, y)


def test_a_toy_of_each_kind_saves_loads_streams_and_makes_an_ensemble(car, chain, tmp_path):
    """A registered estimator with its own options and a registered structure learner,
    through the public points only: fitted in memory and out of core to the same model, one
    member and an ensemble, saved and loaded with its options (where it is registered)."""
    X, y = car
    with _registered(TableEstimator("laplace-opts", _laplace, options=LaplaceOptions)):
        for clf in (BayesNetClassifier("chain", estimation=LaplaceOptions(0.5), random_state=0),
                    ESKDBClassifier(3, estimation=LaplaceOptions(0.5), structure="chain",
                                    discriminative=None, random_state=0)):
            clf.fit(X, y)
            streamed = clone(clf).fit(iter([X.assign(**{"class": y})]), "class")
            np.testing.assert_array_equal(streamed.predict_proba(X), clf.predict_proba(X))
            clf.save(tmp_path / "toy.npz")
            loaded = type(clf).load(tmp_path / "toy.npz")
            assert loaded.get_params() == clf.get_params()
            assert loaded.estimation == LaplaceOptions(0.5)
            np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
            # the options reached the estimator: another prior, other tables
            other = clone(clf).set_params(estimation=LaplaceOptions(2.0)).fit(X, y)
            assert not np.array_equal(other.predict_proba(X), clf.predict_proba(X))
    # unregistered, the file names what it needs
    with pytest.raises(ValueError, match="'laplace-opts' with options is not a registered"):
        ESKDBClassifier.load(tmp_path / "toy.npz")


def test_options_that_are_not_a_dataclass_are_refused_when_saved(car, tmp_path):
    X, y = car

    class Opaque:
        prior = 1.0

    with _registered(TableEstimator("opaque", _laplace, options=Opaque)):
        clf = BayesNetClassifier("nb", estimation=Opaque(), random_state=0).fit(X, y)
        with pytest.raises(ValueError, match="Opaque cannot be saved"):
            clf.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_a_registered_sampler_is_diagnosed_from_its_model_file(car, short_sampler, tmp_path,
                                                                capsys):
    X, y = car
    clf = BayesNetClassifier("nb", estimation="hdp-short", random_state=0).fit(X, y)
    clf.save(tmp_path / "m.npz")
    # exit status 1: the short chains are not certified, which is what diagnose reports
    assert main(["diagnose", str(tmp_path / "m.npz")]) == (0 if clf.diagnostics_.converged
                                                          else 1)
    assert "7 trees, 1 chain(s)" in capsys.readouterr().out


def test_a_learner_in_memory_only_is_refused_before_a_stream_is_read():
    def chunks():
        raise AssertionError("the stream was read")
        yield  # a generator

    with _registered(StructureLearner("chain-mem", _chain, ordered=True)):
        with pytest.raises(ValueError, match="in memory only"):
            BayesNetClassifier("chain-mem", estimation="m").fit(chunks(), "class")
