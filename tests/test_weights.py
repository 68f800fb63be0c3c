"""The discriminative layer of a fit (fastpath.pipeline._weights)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from fastpath import BayesNetClassifier, ESKDBClassifier
from fastpath.pipeline._fitted import node_classes
from fastpath.pipeline._members import prediction_plan
from fastpath.pipeline._weights import (
    inferred_concentrations,
    layer_rows,
    layer_sample,
    member_loo_terms,
    member_penalty,
)
from fastpath.predict._explain import member_terms


def _xy(car, n=600):
    X, y = car
    return X.iloc[:n], np.asarray(y)[:n]


def test_the_concentration_of_a_shrinkage_is_recovered_from_its_estimates(car):
    # an m-estimate is (n + m b) / (N + m) with b = 1/K: its concentration is m, exactly
    model = BayesNetClassifier(k=2, estimation="m", m=3.0).fit(*_xy(car))
    member = model.members_[0]
    for tree, table in zip(member.trees[1:], member.probability_tables[1:], strict=True):
        base = np.full_like(table, 1.0 / tree.n_values)
        c = inferred_concentrations(tree, table, base)
        # a node whose estimate is its base (counts spread evenly) fits every c: "infinite",
        # read as a node the counts do not move
        told = np.abs(table - base).max(axis=1) > 1e-12
        np.testing.assert_allclose(c[1:][told[1:]], 3.0, rtol=1e-9)
        assert np.isinf(c[~told]).all()


@pytest.mark.parametrize("estimation", ["hgs", "hls"])
def test_estimators_without_a_concentration_are_weighed_too(car, estimation):
    X, y = _xy(car)
    model = BayesNetClassifier(k=2, estimation=estimation, discriminative="attribute_class",
                               random_state=0).fit(X, y)
    assert np.isfinite(model.members_[0].term_weights).all()
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)


def test_a_node_lies_below_the_class_of_its_first_branch(car):
    model = BayesNetClassifier(k=2, estimation="m").fit(*_xy(car))
    for tree in model.members_[0].trees[1:]:
        classes = node_classes(tree)
        assert classes[0] == -1
        for node in range(1, tree.n_nodes):
            up = node
            while tree.parent[tree.parent[up]] >= 0:
                up = tree.parent[up]
            assert classes[node] == tree.branch_value[up]


@pytest.mark.parametrize("make", [
    lambda d: BayesNetClassifier(k=2, discriminative=d, random_state=0),
    lambda d: BayesNetClassifier(k=1, estimation="m", discriminative=d, random_state=0),
    lambda d: ESKDBClassifier(n_estimators=3, discriminative=d, random_state=0),
], ids=["kdb2-hdp", "kdb1-m", "eskdb3"])
def test_the_weighted_model_is_the_weighted_sum_of_the_generative_terms(car, make):
    X, y = _xy(car)
    model = make("attribute_class").fit(X, y)
    generative = [dict(m.__dict__, term_weights=None) for m in model.members_]
    # the generative members' terms, weighed by hand, give the model's posterior
    members = [type(m)(**{k: v for k, v in g.items() if k != "packed"})
               for m, g in zip(model.members_, generative, strict=True)]
    plan = prediction_plan(members)
    from fastpath.encode._encoder import code_members
    frame = model._model_columns(model._validate_X(X))
    codes, columns = code_members(plan.encoders, frame, plan.layout)
    posteriors = []
    for e, member in enumerate(model.members_):
        terms, _, _ = member_terms(plan.packed, codes, columns, e)
        w = member.term_weights
        joint = w[0] * plan.packed.class_log_prior[e]
        for t, spec in enumerate(member.tree_specs[1:], start=1):
            joint = joint + w[t] * terms[:, spec.child]
        posteriors.append(joint - logsumexp(joint, axis=1, keepdims=True))
    expected = np.mean(np.exp(posteriors), axis=0)
    np.testing.assert_allclose(model.predict_proba(X), expected, rtol=1e-10, atol=1e-13)
    assert (model.members_[0].term_weights != 1).any()


@pytest.mark.parametrize("make", [
    lambda **kw: BayesNetClassifier(k=2, random_state=0, **kw),
    lambda **kw: BayesNetClassifier(k=2, estimation="m", random_state=0, **kw),
    lambda **kw: ESKDBClassifier(n_estimators=3, random_state=0, **kw),
], ids=["kdb2-hdp", "kdb2-m", "eskdb3"])
def test_the_ridge_at_its_limit_is_the_generative_model(car, make, monkeypatch):
    import fastpath.estimate._discriminative as discriminative
    monkeypatch.setattr(discriminative, "PENALTY_GRID", (1e12,))
    X, y = _xy(car)
    generative = make().fit(X, y).predict_proba(X)
    for granularity in ("attribute", "attribute_class"):
        layer = make(discriminative=granularity).fit(X, y)
        assert layer.discriminative_penalty_ == member_penalty(1e12, len(layer.members_))
        np.testing.assert_allclose(layer.predict_proba(X), generative, atol=1e-8)


def test_an_ensembles_ridge_is_one_members_shared_out_among_the_members(car, monkeypatch):
    import fastpath.estimate._discriminative as discriminative
    import fastpath.pipeline._weights as weights
    monkeypatch.setattr(discriminative, "PENALTY_GRID", (10.0,))
    X, y = _xy(car)
    single = BayesNetClassifier(k=2, discriminative="attribute_class", random_state=0).fit(X, y)
    assert single.discriminative_penalty_ == 10.0
    for n_members in (2, 4):
        ensemble = ESKDBClassifier(n_estimators=n_members, random_state=0).fit(X, y)
        assert ensemble.discriminative_penalty_ == pytest.approx(
            10.0 / n_members ** weights.MEMBER_PENALTY_POWER, rel=1e-15)
    assert member_penalty(10.0, 1) == 10.0
    assert member_penalty(10.0, 4) < member_penalty(10.0, 2) < 10.0


def test_the_same_seed_gives_the_same_weights_for_any_thread_count(car):
    X, y = _xy(car)
    fits = [ESKDBClassifier(n_estimators=4, discriminative="attribute_class", random_state=3,
                            n_jobs=n).fit(X, y) for n in (1, 2)]
    for a, b in zip(fits[0].members_, fits[1].members_, strict=True):
        np.testing.assert_array_equal(a.term_weights, b.term_weights)
    assert fits[0].discriminative_penalty_ == fits[1].discriminative_penalty_


def test_the_layers_rows_are_a_seeded_sample_of_positions():
    class Config:
        random_state = 5
    rows = layer_rows(2)
    assert rows == 5_000 and layer_rows(30) == 30_000
    np.testing.assert_array_equal(layer_sample(Config, 500, 2), np.arange(500))
    picked = layer_sample(Config, 3 * rows, 2)
    assert picked.size == rows and (np.diff(picked) > 0).all()
    np.testing.assert_array_equal(picked, layer_sample(Config, 3 * rows, 2))


def test_model_files_keep_the_weights(car, tmp_path):
    X, y = _xy(car)
    model = ESKDBClassifier(n_estimators=2, discriminative="attribute", random_state=0).fit(X, y)
    model.save(tmp_path / "m.npz")
    loaded = ESKDBClassifier.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert loaded.discriminative_penalty_ == model.discriminative_penalty_
    for a, b in zip(loaded.members_, model.members_, strict=True):
        np.testing.assert_array_equal(a.term_weights, b.term_weights)
    from fastpath.classifier._model_io import read_model_meta
    assert read_model_meta(tmp_path / "m.npz")["version"] == 4
    ESKDBClassifier(n_estimators=2, random_state=0, discriminative=None).fit(X, y).save(
        tmp_path / "g.npz")
    assert read_model_meta(tmp_path / "g.npz")["version"] == 4  # one format for every model


def test_explanations_of_a_weighted_model_stay_exact(car):
    X, y = _xy(car)
    model = BayesNetClassifier(k=2, discriminative="attribute_class", random_state=0).fit(X, y)
    e = model.explain(X.iloc[:40])
    total = e.prior + e.contributions.sum(axis=1) - e.log_normaliser[:, None]
    np.testing.assert_allclose(total, model.predict_log_proba(X.iloc[:40]), atol=1e-10)


def test_bad_layer_parameters_are_named(car):
    X, y = _xy(car, 100)
    with pytest.raises(ValueError, match="discriminative must be None or one of"):
        BayesNetClassifier(discriminative="parameter").fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: BayesNetClassifier(k=2, discriminative="attribute_class", random_state=0),
    lambda: ESKDBClassifier(n_estimators=2, estimation="m", discriminative="attribute",
                            random_state=0),
], ids=["kdb2-hdp", "eskdb2-m"])
def test_a_streamed_fit_has_the_in_memory_weights(fits_in_memory_and_streamed_alike, make):
    fits_in_memory_and_streamed_alike(make)


def test_a_large_fit_weighs_the_same_rows_in_memory_and_streamed(monkeypatch):
    # more rows than the layer takes: the sample is by position, chunks or not
    import fastpath.pipeline._weights as weights
    monkeypatch.setattr(weights, "layer_rows", lambda n_classes: 150)
    rng = np.random.default_rng(0)
    n = 1000
    X = pd.DataFrame({"a": rng.integers(0, 3, n).astype(str), "b": rng.normal(size=n),
                      "c": rng.integers(0, 4, n).astype(str)})
    y = np.where((X["a"] == "1") ^ (X["b"] > 0), "p", "q")
    frame = X.assign(target=y)
    make = lambda: BayesNetClassifier(k=1, discriminative="attribute_class", random_state=2)  # noqa: E731
    memory = make().fit(X, y)
    streamed = make().fit(lambda: (frame.iloc[i:i + 170] for i in range(0, n, 170)), "target")
    np.testing.assert_array_equal(memory.members_[0].term_weights,
                                  streamed.members_[0].term_weights)


def test_a_row_is_left_out_of_its_own_class_only(car):
    # naive Bayes with m-estimates, by hand: attribute t's term for class c is
    # log((n_cx - [c = y_r] + m/K) / (N_c - [c = y_r] + m)), the row counted below y_r alone
    X, y = _xy(car, 300)
    model = BayesNetClassifier(structure="nb", estimation="m", m=2.0).fit(X, y)
    member = model.members_[0]
    frame = model._model_columns(model._validate_X(X))
    from fastpath.encode._encoder import code_members
    plan = prediction_plan(model.members_)
    codes, _ = code_members(plan.encoders, frame, plan.layout)
    labels = np.searchsorted(model.classes_, y)
    concentrations = [np.full(tree.n_nodes, 2.0) for tree in member.trees[1:]]
    terms = member_loo_terms(member, codes, labels, concentrations)
    n_classes = model.classes_.size
    for t, (tree, spec) in enumerate(zip(member.trees[1:], member.tree_specs[1:], strict=True),
                                     start=1):
        k = tree.n_values
        class_node = {int(tree.branch_value[v]): v for v in range(1, tree.n_nodes)
                      if tree.parent[v] == 0}
        for r in range(0, 300, 37):
            x = codes[r, spec.child]
            for c in range(n_classes):
                own = float(c == labels[r])
                n = tree.counts[class_node[c]]
                expected = np.log((n[x] - own + 2.0 / k) / (n.sum() - own + 2.0))
                assert terms[r, t, c] == pytest.approx(expected, rel=1e-12)


def test_the_own_class_reads_its_own_tables_in_the_same_descent(car):
    # own_log_prob equal to the tables' own: the terms of a plain descent; another layout of
    # the same length changes the own class's terms only
    X, y = _xy(car)
    model = BayesNetClassifier(k=2, estimation="m", random_state=0).fit(X, y)
    plan = prediction_plan(model.members_)
    from fastpath.encode._encoder import code_members
    frame = model._model_columns(model._validate_X(X))
    codes, columns = code_members(plan.encoders, frame, plan.layout)
    labels = np.searchsorted(model.classes_, y)
    plain = member_terms(plan.packed, codes, columns, 0)[0]
    same = member_terms(plan.packed, codes, columns, 0, own_classes=labels,
                        own_log_prob=plan.packed.log_prob)[0]
    np.testing.assert_array_equal(plain, same)
    shifted = member_terms(plan.packed, codes, columns, 0, own_classes=labels,
                           own_log_prob=plan.packed.log_prob - 1.0)[0]
    own = np.broadcast_to(np.arange(model.classes_.size)[None, None, :]
                          == labels[:, None, None], plain.shape)
    read = plain != 0  # an attribute without a tree or an unknown value has no term
    np.testing.assert_array_equal(shifted[own & read], plain[own & read] - 1.0)
    np.testing.assert_array_equal(shifted[~own], plain[~own])
    with pytest.raises(ValueError, match="own_classes"):
        member_terms(plan.packed, codes, columns, 0, own_classes=labels[:-1],
                     own_log_prob=plan.packed.log_prob)
