"""fastpath.pipeline: the checked fit configuration, the stages every driver shares, the members
they build (``Member``, by keywords; ``Member.counted``) and the in-memory driver.

* ``FitConfig.from_params`` refuses bad values with a ``ValueError`` naming the parameter.
* ``plan_m``: a fixed m, ``m = 1`` when too few rows to hold any out, none for HDP, and the
  holdout key as the first draw of the fit's generator (which is not touched otherwise).
* ``choose_m`` picks the lowest holdout RMSE, ties to the smaller m; one candidate's RMSE is
  recomputed by hand (m-estimates from the counts, posterior by enumeration), with the path and
  with the value back-off.
* ``tree_specs`` branch on the class, then on the structure's parents by decreasing CMI.
* ``fit_in_memory`` is what ``BayesNetClassifier.fit`` assigns; the in-memory, streaming and
  ``partial_fit`` drivers give identical counts and tables on nominal data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, HDPOptions
from fastpath.counts import CountAccumulator, TreeSpec
from fastpath.estimate import M_GRID
from fastpath.io import load_dataset
from fastpath.pipeline import FitConfig, FittedModel, fit_in_memory
from fastpath.pipeline import _stages as stages
from fastpath.pipeline._fitted import Member
from fastpath.pipeline._holdout import holdout_rows
from fastpath.pipeline._stages import choose_m, plan_m
from fastpath.scale import declare_schema, fit_stream, start_partial_fit
from fastpath.structure import _graphs as graphs
from fastpath.structure import tree_specs
from fastpath.utils._validation import check_labels


def _params(**changes):
    return {**BayesNetClassifier(estimation="m").get_params(), **changes}


# ====================================================================== FitConfig
@pytest.mark.parametrize(
    "changes,name",
    [
        ({"structure": "bn"}, "structure"),
        ({"estimation": "mle"}, "estimation"),
        ({"k": -1}, "k"),
        ({"k": 1.5}, "k"),
        ({"k": True}, "k"),
        ({"m": -0.5}, "m"),
        ({"m": float("nan")}, "m"),
        ({"m": float("inf")}, "m"),
        ({"m": "large"}, "m"),
        ({"m": True}, "m"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": 1.5}, "n_jobs"),
        ({"random_state": -3}, "random_state"),
        ({"random_state": "seed"}, "random_state"),
        ({"estimation": "hdp", "sampler": "slow"}, "sampler"),
        ({"estimation": "hdp", "sampler": {"n_iter": 50}}, "sampler"),
        ({"m_backoff": "literal"}, "m_backoff"),
        ({"m_backoff": None}, "m_backoff"),
    ],
)
def test_from_params_refuses_bad_values_naming_the_parameter(changes, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        FitConfig.from_params(_params(**changes))


def test_from_params_accepts_good_values_and_keeps_them():
    rng = np.random.default_rng(0)
    config = FitConfig.from_params(_params(structure="tan", k=np.int64(2), m=np.float64(0.0),
                                           n_jobs=-1, random_state=rng))
    assert (config.structure, config.k, config.m) == ("tan", 2, 0.0)
    assert type(config.k) is int
    assert config.random_state is rng and config.hdp is None and config.m_rule is None
    hdp = FitConfig.from_params(_params(estimation="hdp",
                                        sampler=HDPOptions.preset("adaptive", n_iter=50)))
    assert hdp.hdp.n_iter == 50 and hdp.m_rule is None
    assert FitConfig.from_params(_params()).m_rule == "loo"
    assert FitConfig.from_params(_params(m="holdout")).m_rule == "holdout"
    assert FitConfig.from_params(_params()).m_backoff == "path"
    assert FitConfig.from_params(_params(m_backoff="value")).m_backoff == "value"
    without = _params()
    del without["m_backoff"]  # parameters from before m_backoff existed
    assert FitConfig.from_params(without).m_backoff == "path"


# ====================================================================== plan_m
def test_plan_fixed_m_does_not_touch_the_generator():
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    plan = plan_m(FitConfig.from_params(_params(m=5)), 1000, rng)
    assert plan.m == 5.0 and type(plan.m) is float and not plan.needs_holdout
    assert rng.bit_generator.state == before


def test_plan_for_hdp_has_no_m_and_no_holdout():
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    plan = plan_m(FitConfig.from_params(_params(estimation="hdp")), 1000, rng)
    assert plan.m is None and not plan.needs_holdout
    assert rng.bit_generator.state == before


@pytest.mark.parametrize("n_rows", [0, 1, 9])
def test_plan_holdout_with_too_few_rows_is_m_1(n_rows):
    plan = plan_m(FitConfig.from_params(_params(m="holdout")), n_rows, np.random.default_rng(0))
    assert plan.m == 1.0 and not plan.needs_holdout


@pytest.mark.parametrize("n_rows", [0, 1, 2, 9])
def test_plan_auto_is_leave_one_out_from_2_rows_and_draws_nothing(n_rows):
    config = FitConfig.from_params(_params())
    assert config.m_rule == "loo"
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    plan = plan_m(config, n_rows, rng)
    assert not plan.needs_holdout and plan.needs_loo == (n_rows >= 2)
    assert plan.m == (None if n_rows >= 2 else 1.0)
    assert rng.bit_generator.state == before


@pytest.mark.parametrize("n_rows,n_hold", [(10, 1), (99, 9), (12_345, 1234), (10**6, 5000)])
def test_plan_holdout_holds_out_min_n_over_10_and_5000_rows(n_rows, n_hold):
    plan = plan_m(FitConfig.from_params(_params(m="holdout")), n_rows, np.random.default_rng(0))
    assert plan.m is None and plan.needs_holdout and plan.n_hold == n_hold


@pytest.mark.parametrize("seed", [0, 7, 2**40])
def test_plan_holdout_key_is_the_first_draw_of_the_generator(seed):
    rng = np.random.default_rng(seed)
    plan = plan_m(FitConfig.from_params(_params(m="holdout")), 500, rng)
    ref = np.random.default_rng(seed)
    assert plan.key == int(ref.integers(0, 2**63 - 1, dtype=np.int64))
    assert rng.random() == ref.random()  # exactly one draw was taken


# ====================================================================== choose_m
def _node_index(tree):
    paths, depth = tree.paths(), tree.node_depth
    return {tuple(int(v) for v in paths[i, : depth[i]]): i for i in range(tree.n_nodes)}


def _m_table_by_hand(tree, m, backoff="path"):
    """(count + m/K) / (total + m) at every node; 1/K where a value is never counted; with
    ``backoff="value"`` a zero count takes the deepest ancestor's with a non-zero count."""
    counts = tree.counts.astype(float)
    k = tree.n_values
    out = np.empty_like(counts)
    for i in range(tree.n_nodes):
        total = counts[i].sum()
        for v in range(k):
            if counts[0, v] == 0 and tree.depth:
                out[i, v] = 1 / k
            elif total + m == 0:
                out[i, v] = 1 / k
            else:
                out[i, v] = (counts[i, v] + m / k) / (total + m)
    if backoff == "value":
        own = out.copy()
        for i in range(tree.n_nodes):
            for v in range(k):
                a = i
                while counts[a, v] == 0 and a > 0:
                    a = int(tree.parent[a])
                out[i, v] = own[a, v]
    return out


def _rmse_by_hand(specs, trees, m, codes, y, backoff="path"):
    tables = [_m_table_by_hand(t, m, backoff) for t in trees]
    index = [_node_index(t) for t in trees]
    n_classes = specs[0].n_values
    sq = []
    for row, label in zip(codes, y, strict=True):
        joint = np.empty(n_classes)
        for c in range(n_classes):
            p = tables[0][0, c]
            for a in range(1, len(specs)):
                values = [c if col < 0 else int(row[col]) for col in specs[a].conditioning]
                node = 0
                for d in range(1, len(values) + 1):
                    if tuple(values[:d]) not in index[a]:
                        break
                    node = index[a][tuple(values[:d])]
                p *= tables[a][node, row[specs[a].child]]
            joint[c] = p
        sq.append((1 - joint[label] / joint.sum()) ** 2)
    return float(np.sqrt(np.mean(sq)))


@pytest.fixture(scope="module")
def tictactoe():
    X, y = load_dataset("tic-tac-toe")
    classes, y_codes = check_labels(y, len(y))
    return X, classes, y_codes


@pytest.mark.parametrize("structure", ["nb", "kdb"])
def test_choose_m_takes_the_lowest_holdout_rmse(tictactoe, structure):
    X, classes, y = tictactoe
    config = FitConfig.from_params(_params(structure=structure, k=1))
    enc_codes = np.column_stack([pd.factorize(X[c], sort=True)[0] for c in X.columns])
    cards = tuple(int(v) for v in enc_codes.max(axis=0) + 1)
    learned = stages.learn_structure(config, enc_codes, y, cards, classes.size)
    specs = tree_specs(learned.structure, cards, classes.size, learned.attributes)
    hold = holdout_rows(len(y), 95, key=12345)
    train = np.setdiff1d(np.arange(len(y)), hold)
    counts = CountAccumulator(specs).update(enc_codes[train], y[train])
    m, scores = choose_m(specs, counts, enc_codes[hold], y[hold])
    assert list(scores) == list(M_GRID)
    assert m == min(M_GRID, key=lambda c: (scores[c], c))
    trees = [counts.tree(i) for i in range(len(specs))]
    for candidate in (0.2, 5.0):
        by_hand = _rmse_by_hand(specs, trees, candidate, enc_codes[hold], y[hold])
        assert scores[candidate] == pytest.approx(by_hand, rel=1e-9)


def test_choose_m_scores_with_the_value_backoff(tictactoe):
    X, classes, y = tictactoe
    config = FitConfig.from_params(_params(structure="kdb", k=2, m_backoff="value"))
    enc_codes = np.column_stack([pd.factorize(X[c], sort=True)[0] for c in X.columns])
    cards = tuple(int(v) for v in enc_codes.max(axis=0) + 1)
    learned = stages.learn_structure(config, enc_codes, y, cards, classes.size)
    specs = tree_specs(learned.structure, cards, classes.size, learned.attributes)
    hold = holdout_rows(len(y), 95, key=12345)
    train = np.setdiff1d(np.arange(len(y)), hold)
    counts = CountAccumulator(specs).update(enc_codes[train], y[train])
    m, scores = choose_m(specs, counts, enc_codes[hold], y[hold], backoff=config.m_backoff)
    _, path_scores = choose_m(specs, counts, enc_codes[hold], y[hold])
    assert m == min(M_GRID, key=lambda c: (scores[c], c))
    assert scores != path_scores
    trees = [counts.tree(i) for i in range(len(specs))]
    for candidate in (0.0, 1.0):
        by_hand = _rmse_by_hand(specs, trees, candidate, enc_codes[hold], y[hold], "value")
        assert scores[candidate] == pytest.approx(by_hand, rel=1e-9)
    tables = stages.estimate_tables(config, trees, 1.0).tables
    for tree, table in zip(trees, tables, strict=True):
        np.testing.assert_allclose(table, _m_table_by_hand(tree, 1.0, "value"), rtol=1e-12)


@pytest.mark.parametrize("n_chains", [1, 2])
def test_hdp_tables_are_the_results_estimates_and_leave_the_trees_alone(n_chains):
    # a table is the sampler's read-only estimate itself (no second copy kept), and nothing
    # the estimation reads (the trees' counts and structure) is written
    X, y = load_dataset("car")
    clf = BayesNetClassifier(structure="kdb", k=1, estimation="m", random_state=0).fit(X, y)
    trees = clf.trees_
    before = [(t.counts.copy(), t.parent.copy(), t.level_offsets.copy()) for t in trees]
    config = BayesNetClassifier(
        structure="kdb", k=1, random_state=0,
        sampler=HDPOptions.preset("adaptive", n_chains=n_chains, min_iter=60, max_iter=60,
                                  burn_in=10)).fit_config()
    estimated = stages.estimate_tables(config, trees, None)
    for table, result in zip(estimated.tables, estimated.hdp_results, strict=True):
        assert table is result.probabilities
        assert table.dtype == np.float64 and not table.flags.writeable
    for tree, (counts, parent, offsets) in zip(trees, before, strict=True):
        np.testing.assert_array_equal(tree.counts, counts)
        np.testing.assert_array_equal(tree.parent, parent)
        np.testing.assert_array_equal(tree.level_offsets, offsets)


@pytest.mark.parametrize("n_chains", [1, 2])
def test_a_fit_without_traces_keeps_the_rest_and_the_same_diagnostics(tmp_path, n_chains):
    X, y = load_dataset("car")
    sampler = HDPOptions.preset("adaptive", n_chains=n_chains, trace_nodes=(0,))
    kept = BayesNetClassifier(structure="kdb", k=1, random_state=4, sampler=sampler).fit(X, y)
    dropped = BayesNetClassifier(structure="kdb", k=1, random_state=4,
                                 sampler=sampler.replace(keep_traces=False)).fit(X, y)
    np.testing.assert_array_equal(kept.predict_proba(X), dropped.predict_proba(X))
    assert kept.diagnostics_.to_dict() == dropped.diagnostics_.to_dict()
    for a, b in zip(kept.hdp_results_, dropped.hdp_results_, strict=True):
        for name in ("probabilities", "mcse", "chain_probabilities", "table_counts",
                     "node_counts", "concentration_mean"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert a.rows_mcse == b.rows_mcse or (np.isnan(a.rows_mcse) and np.isnan(b.rows_mcse))
        assert a.trace.log_joint.shape[1] > 0
        tr = b.trace
        assert tr.iterations.shape == (0,) and tr.log_joint.shape == (n_chains, 0)
        assert tr.concentrations.shape == (n_chains, 0, a.n_groups)
        assert tr.node_probabilities.shape == (n_chains, 0, 1, a.tree.n_values)
        assert tr.rows_probability.shape == (n_chains, 0)
    path = tmp_path / "m.npz"
    dropped.save(path)
    loaded = BayesNetClassifier.load(path)
    assert loaded.hdp_options() == dropped.hdp_options()
    assert not loaded.hdp_options().keep_traces
    # every field is written, the default's too
    from fastpath.classifier._model_io import read_model_meta

    kept.save(tmp_path / "kept.npz")
    assert read_model_meta(tmp_path / "kept.npz")["params"]["sampler"]["keep_traces"] is True
    assert read_model_meta(path)["params"]["sampler"]["keep_traces"] is False
    assert BayesNetClassifier.load(tmp_path / "kept.npz").hdp_options().keep_traces
    np.testing.assert_array_equal(loaded.predict_proba(X), dropped.predict_proba(X))
    with pytest.raises(ValueError, match="keep_traces must be a bool"):
        HDPOptions(keep_traces="no")


@pytest.mark.parametrize("grid", [M_GRID, tuple(reversed(M_GRID))])
def test_choose_m_ties_go_to_the_smaller_m(monkeypatch, grid):
    monkeypatch.setattr(stages, "M_GRID", grid)
    # balanced classes and constant attributes: every m gives the uniform posterior
    codes = np.zeros((40, 3), dtype=np.int64)
    y = np.repeat([0, 1], 20)
    specs = tree_specs(graphs.naive_bayes(3), (1, 1, 1), 2, range(3))
    counts = CountAccumulator(specs).update(codes[:30], np.tile([0, 1], 15))
    m, scores = choose_m(specs, counts, codes[30:], y[30:])
    assert len(set(scores.values())) == 1
    assert m == 0.0


# ====================================================================== tree_specs
@pytest.mark.parametrize("kind,k", [("nb", 0), ("kdb", 1), ("kdb", 3), ("tan", 1)])
def test_tree_specs_branch_on_the_class_then_the_parents_by_cmi(tictactoe, kind, k):
    X, classes, y = tictactoe
    codes = np.column_stack([pd.factorize(X[c], sort=True)[0] for c in X.columns])
    cards = tuple(int(v) for v in codes.max(axis=0) + 1)
    if kind == "nb":
        structure = graphs.naive_bayes(len(cards))
    elif kind == "tan":
        structure = graphs.tan(codes, y, cards, classes.size)
    else:
        structure = graphs.kdb(codes, y, cards, classes.size, k)
    specs = tree_specs(structure, cards, classes.size, range(len(cards)))
    assert specs[0] == TreeSpec(-1, (), classes.size, ())
    assert len(specs) == len(cards) + 1
    for i, spec in enumerate(specs[1:]):
        parents = structure.parents[i]
        assert spec.child == i and spec.n_values == cards[i]
        assert spec.conditioning[0] == -1
        assert sorted(spec.conditioning[1:]) == sorted(parents)
        assert spec.cardinalities == (classes.size, *(cards[p] for p in spec.conditioning[1:]))
        if kind == "nb":
            assert spec.conditioning == (-1,)
        else:
            cmi = structure.conditional_mutual_information
            ranked = [p for _, p in sorted((-cmi[i, p], p) for p in parents)]
            assert list(spec.conditioning[1:]) == ranked
    if kind != "nb":
        assert any(len(s.conditioning) > 1 for s in specs[1:])


def test_tree_specs_of_selected_attributes_only():
    structure = graphs.naive_bayes(4)
    specs = tree_specs(structure, (2, 3, 4, 5), 3, (1, 3))
    assert [s.child for s in specs] == [-1, 1, 3]
    assert specs[2] == TreeSpec(3, (-1,), 5, (3,))


# ====================================================================== drivers
def _assert_same_model(a: FittedModel, b: FittedModel, *, same_selection=True):
    assert list(a.classes_) == list(b.classes_)
    assert a.n_features_in_ == b.n_features_in_
    assert len(a.members_) == len(b.members_)
    for ma, mb in zip(a.members_, b.members_, strict=True):
        assert ma.encoder.to_dict() == mb.encoder.to_dict()
        assert ma.structure == mb.structure
        assert ma.tree_specs == mb.tree_specs
        for ta, tb in zip(ma.trees, mb.trees, strict=True):
            np.testing.assert_array_equal(ta.counts, tb.counts)
            np.testing.assert_array_equal(ta.parent, tb.parent)
            np.testing.assert_array_equal(ta.branch_value, tb.branch_value)
            assert (ta.child_name, ta.conditioning_names) == (tb.child_name,
                                                              tb.conditioning_names)
        for pa, pb in zip(ma.probability_tables, mb.probability_tables, strict=True):
            np.testing.assert_array_equal(pa, pb)
        assert ma.m == mb.m and ma.m_scores == mb.m_scores
        if same_selection:
            sa, sb = ma.selection, mb.selection
            assert (sa is None and sb is None) or sa.to_dict() == sb.to_dict()


@pytest.fixture(scope="module")
def credit():
    X, y = load_dataset("credit-a")
    return X, np.asarray(y)


@pytest.mark.parametrize(
    "params",
    [dict(structure="nb"), dict(structure="tan", m=0.2), dict(structure="kdb", k=2),
     dict(structure="skdb", k=2), dict(structure="kdb", k=1, estimation="hdp",
                                            sampler=HDPOptions.preset("adaptive", n_iter=30))],
    ids=["nb", "tan", "kdb", "skdb", "kdb-hdp"],
)
def test_fit_in_memory_is_what_fit_assigns(credit, params):
    X, y = credit
    clf = BayesNetClassifier(**params, random_state=11).fit(X, y)
    classes, y_codes = check_labels(y, len(y))
    model = fit_in_memory(FitConfig.from_params(clf.get_params()), X, True, classes, y_codes)
    assert isinstance(model, FittedModel)
    # fit assigns the driver's record, and its own record of what the fit warned about
    assert isinstance(clf.fit_warnings_, tuple) and model.fit_warnings_ is None
    assert set(model.attributes()) == {n for n in FittedModel.attribute_names()
                                       if n in vars(clf) and n != "fit_warnings_"}
    _assert_same_model(model, FittedModel(**{n: getattr(clf, n, None)
                                             for n in FittedModel.attribute_names()
                                             if n != "fit_warnings_"}))
    assert list(model.feature_names_in_) == list(X.columns)
    if params.get("estimation") == "hdp":
        assert model.members_[0].m is None and model.members_[0].m_scores is None
        assert model.diagnostics_.to_dict() == clf.diagnostics_.to_dict()
        for ra, rb in zip(model.hdp_results_, clf.hdp_results_, strict=True):
            np.testing.assert_array_equal(ra.probabilities, rb.probabilities)


@pytest.fixture(scope="module")
def car():
    X, y = load_dataset("car")
    perm = np.random.default_rng(0).permutation(len(X))  # car is sorted: mix its rows
    X, y = X.iloc[perm].reset_index(drop=True), np.asarray(y)[perm]
    schema = declare_schema({c: sorted(X[c].unique()) for c in X.columns}, missing=False)
    return X, y, schema


def _chunks(frame, size):
    return lambda: (frame.iloc[s : s + size] for s in range(0, len(frame), size))


@pytest.mark.parametrize("structure,k", [("nb", 0), ("kdb", 2)])
def test_in_memory_and_streaming_drivers_agree(car, structure, k):
    X, y, schema = car
    config = FitConfig.from_params(_params(structure=structure, k=k, random_state=3))
    classes, y_codes = check_labels(y, len(y))
    memory = fit_in_memory(config, X, True, classes, y_codes)
    assert memory.members_[0].encoder.to_dict()["codings"] == schema.to_dict()["codings"]
    assert memory.members_[0].m_scores  # m was chosen on a holdout
    stream = fit_stream(config, _chunks(X.assign(cls=y), 250), "cls")
    _assert_same_model(memory, stream)
    assert stream.n_passes_ == (2 if structure == "nb" else 3) + 1  # + the m="auto" pass


def test_partial_fit_driver_agrees_with_the_other_two(car):
    X, y, schema = car
    config = FitConfig.from_params(_params(structure="nb", m="holdout", random_state=3))
    classes, y_codes = check_labels(y, len(y))
    memory = fit_in_memory(config, X, True, classes, y_codes)
    stream = fit_stream(config, _chunks(X.assign(cls=y), 400), "cls")
    size = 333
    partial = start_partial_fit(config, X.iloc[:size], True, y[:size], classes=classes,
                                schema=schema)
    for s in range(size, len(X), size):
        partial.add(X.iloc[s : s + size], y[s : s + size])
    incremental = partial.refresh()
    _assert_same_model(memory, incremental)
    _assert_same_model(stream, incremental)
    # and the counts are those of the rows, counted directly
    codes = schema.transform(X)
    ref = CountAccumulator(memory.members_[0].tree_specs).update(codes, y_codes)
    for i, tree in enumerate(incremental.members_[0].trees):
        np.testing.assert_array_equal(tree.counts, ref.tree(i).counts)


def test_selective_members_read_their_trees_off_the_selections_counts():
    # an in-memory SkDB fit reads each member's trees off its selection's kDB-K counts (the
    # top 1 + k* levels of each attribute's kDB-K tree); counting the member's own specs on its
    # codes gives the same trees, array for array
    from fastpath import ESKDBClassifier

    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({
        "a": rng.normal(size=n), "b": rng.integers(0, 5, n).astype(str),
        "c": rng.exponential(size=n), "d": rng.integers(0, 3, n).astype(str),
    })
    labels = np.where(frame.a + (frame.b == "1") + rng.normal(size=n) > 0.5, "yes", "no")
    model = ESKDBClassifier(n_estimators=4, k=2, estimation="m", random_state=3).fit(frame,
                                                                                    labels)
    y_codes = np.searchsorted(model.classes_, labels)
    assert any(m.selection.k_selected < 2 or m.selection.n_selected < 4 for m in model.members_)
    for member in model.members_:
        fresh = CountAccumulator(member.tree_specs).update(member.encoder.transform(frame),
                                                           y_codes).trees()
        assert len(fresh) == len(member.trees)
        for got, want in zip(member.trees, fresh, strict=True):
            for field in ("level_offsets", "parent", "branch_value", "counts",
                          "child_offsets", "lookup_offsets", "child_lookup"):
                np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
            assert got.branch_cardinalities == want.branch_cardinalities


def test_member_is_built_by_keywords_and_counted_members_wait_for_their_tables():
    X, y = load_dataset("car")
    member = BayesNetClassifier("nb", m=1.0).fit(X, y).members_[0]
    parts = (member.encoder, member.structure, member.tree_specs, member.trees)
    with pytest.raises(TypeError):
        Member(*parts, member.probability_tables)  # no positional path
    counted = Member.counted(*parts, m=member.m, m_scores=member.m_scores)
    # every field but the tables as the fitted member's
    assert counted.probability_tables == []
    assert all(getattr(counted, name) is part for name, part in
               zip(("encoder", "structure", "tree_specs", "trees"), parts, strict=True))
    assert counted.m is member.m and counted.selection is None
