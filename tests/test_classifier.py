"""BayesNetClassifier: scikit-learn contract, independent checks, bad input."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.classifier import NotFittedError
from fastpath.io import load_dataset
from fastpath.pipeline._members import members_joint_log_proba
from fastpath.predict import posterior_from_joint

STRUCTURES = [("nb", 0), ("tan", 1), ("kdb", 2), ("skdb", 3)]


@pytest.mark.parametrize("structure,k", STRUCTURES)
def test_check_estimator(structure, k):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(BayesNetClassifier(structure=structure, k=k), on_fail=None)
    failed = [(r["check_name"], r["exception"]) for r in results if r["status"] == "failed"]
    assert not failed


def test_naive_bayes_matches_categorical_nb():
    from sklearn.naive_bayes import CategoricalNB

    rng = np.random.default_rng(0)
    n, p, k = 400, 5, 3
    y = rng.integers(0, 3, n)
    X = (rng.integers(0, k, (n, p)) + y[:, None] * (rng.random((n, p)) < 0.4)) % k
    # every attribute has K = 3 values, so m-estimates with m = 3 alpha are Lidstone(alpha)
    alpha = 0.5
    frame = pd.DataFrame({f"a{j}": X[:, j].astype(str) for j in range(p)})
    ours = BayesNetClassifier(structure="nb", m=alpha * k, estimation="m").fit(frame, y)
    class_prior = ours.probability_tables_[0][0]
    ref = CategoricalNB(alpha=alpha, class_prior=class_prior).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(frame), ref.predict_proba(X), rtol=1e-10)


def test_structure_is_inspectable_and_exportable():
    X, y = load_dataset("car")
    clf = BayesNetClassifier(structure="kdb", k=2, m=1.0).fit(X, y)
    assert len(clf.structure_.parents) == X.shape[1]
    assert all(len(p) <= 2 for p in clf.structure_.parents)
    dot = clf.structure_.to_dot(list(X.columns))
    assert dot.startswith("digraph") and "safety" in dot
    graph = clf.structure_.to_networkx(list(X.columns))
    assert graph.number_of_nodes() == X.shape[1] + 1


def test_save_load_and_pickle_give_identical_probabilities(tmp_path):
    X, y = load_dataset("credit-a")
    clf = BayesNetClassifier(structure="tan", random_state=0).fit(X, y)
    path = tmp_path / "model.npz"
    clf.save(path)
    loaded = BayesNetClassifier.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    assert loaded.get_params() == clf.get_params()
    unpickled = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(unpickled.predict_proba(X), clf.predict_proba(X))
    # the file holds no pickled object
    with np.load(path, allow_pickle=False) as data:
        assert all(data[f].dtype != object for f in data.files)


def test_same_seed_same_model():
    X, y = load_dataset("tic-tac-toe")
    a = BayesNetClassifier(random_state=3, estimation="m").fit(X, y)
    b = BayesNetClassifier(random_state=3, estimation="m").fit(X, y)
    assert a.m_ == b.m_ and a.m_scores_ == b.m_scores_
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_probabilities_sum_to_one_and_caller_data_untouched():
    X, y = load_dataset("credit-a")
    X_before, y_before = X.copy(), y.copy()
    clf = BayesNetClassifier(structure="kdb", k=2, random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    pd.testing.assert_frame_equal(X, X_before)
    pd.testing.assert_series_equal(y, y_before)
    assert not clf.probability_tables_[1].flags.writeable


def test_unknown_value_is_marginalised_out():
    """An unseen value drops its factor: NB then equals NB fitted without that column."""
    X, y = load_dataset("car")
    full = BayesNetClassifier(structure="nb", m=1.0, estimation="m").fit(X, y)
    reduced = BayesNetClassifier(structure="nb", m=1.0,
                                 estimation="m").fit(X.drop(columns="doors"), y)
    rows = X.iloc[:50].copy()
    rows["doors"] = "never-seen"
    np.testing.assert_allclose(
        full.predict_proba(rows), reduced.predict_proba(rows.drop(columns="doors"))
    )


def test_unknown_parent_value_backs_off():
    X, y = load_dataset("car")
    clf = BayesNetClassifier(structure="kdb", k=2, m=1.0).fit(X, y)
    rows = X.iloc[:20].copy()
    for col in X.columns:
        rows[col] = "never-seen"
    proba = clf.predict_proba(rows)
    # nothing known: the class prior is all that is left
    np.testing.assert_allclose(proba, np.tile(clf.probability_tables_[0][0], (20, 1)))


def test_missing_values_are_a_value_of_their_own():
    X, y = load_dataset("credit-a")
    assert X.isna().any().any()
    clf = BayesNetClassifier(structure="nb", m=1.0).fit(X, y)
    for coding, col in zip(clf.encoder_.codings_, X.columns, strict=True):
        assert (coding.missing_code is not None) == bool(X[col].isna().any())


def test_not_fitted():
    with pytest.raises(NotFittedError):
        BayesNetClassifier().predict_proba(np.zeros((2, 2)))


# ---------------------------------------------------------------------- bad input
@pytest.fixture
def small():
    X = pd.DataFrame({"a": ["x", "y", "x", "y", "z", "x"], "b": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    y = np.array([0, 1, 0, 1, 1, 0])
    return X, y


def test_empty_table():
    with pytest.raises(ValueError, match="0 sample"):
        BayesNetClassifier().fit(pd.DataFrame({"a": []}), [])


def test_single_class(small):
    X, _ = small
    with pytest.raises(ValueError, match="only 1 class"):
        BayesNetClassifier().fit(X, np.zeros(len(X)))


def test_nan_in_target(small):
    X, y = small
    y = y.astype(float)
    y[2] = np.nan
    with pytest.raises(ValueError, match=r"missing value.*row 2"):
        BayesNetClassifier().fit(X, y)


def test_infinite_numeric_value_names_column(small):
    X, y = small
    X = X.copy()
    X.loc[3, "b"] = np.inf
    with pytest.raises(ValueError, match=r"column 'b'.*inf"):
        BayesNetClassifier().fit(X, y)


def test_all_missing_column_is_kept_with_a_warning(small):
    X, y = small
    X = X.assign(c=np.nan)
    with pytest.warns(UserWarning, match="column 'c' is missing in every training row"):
        clf = BayesNetClassifier(m=1.0).fit(X, y)
    assert clf.encoder_.cardinalities_[2] == 1


@pytest.mark.parametrize("k", [-1, 1.5, "2", True])
def test_bad_k(small, k):
    X, y = small
    with pytest.raises(ValueError, match="k must be"):
        BayesNetClassifier(k=k).fit(X, y)


@pytest.mark.parametrize(
    "params,match",
    [({"structure": "forest"}, "structure must be"), ({"estimation": "mle"}, "estimation must be"),
     ({"m": -1}, "m must be"), ({"m": "best"}, "m must be")],
)
def test_unknown_names(small, params, match):
    X, y = small
    with pytest.raises(ValueError, match=match):
        BayesNetClassifier(**params).fit(X, y)


@pytest.mark.parametrize("cls", [BayesNetClassifier, ESKDBClassifier])
def test_the_estimation_method_is_named_estimation_and_nothing_else(cls):
    # ``estimator`` would read as a scikit-learn sub-estimator: the parameter has one name, and
    # the other fails as any unknown keyword does (no alias)
    from sklearn.base import clone

    clf = cls(estimation="m")
    assert clf.get_params()["estimation"] == "m" and "estimator" not in clf.get_params()
    assert clone(clf.set_params(estimation="hgs")).estimation == "hgs"
    with pytest.raises(TypeError, match="unexpected keyword argument 'estimator'"):
        cls(estimator="m")
    with pytest.raises(ValueError, match="Invalid parameter 'estimator'"):
        cls().set_params(estimator="m")


def test_predict_with_different_columns(small):
    X, y = small
    clf = BayesNetClassifier(m=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"missing columns \['b'\]"):
        clf.predict(X[["a"]])
    with pytest.raises(ValueError, match=r"unexpected columns \['c'\]"):
        clf.predict(X.assign(c=1))
    # same columns in another order are matched by name
    np.testing.assert_array_equal(clf.predict_proba(X[["b", "a"]]), clf.predict_proba(X))


def test_nominal_column_with_more_values_than_rows():
    X = pd.DataFrame({"id": pd.Categorical(list("abcdef"), categories=list("abcdefghijkl"))})
    y = [0, 1, 0, 1, 0, 1]
    clf = BayesNetClassifier(m=1.0).fit(X, y)
    assert clf.encoder_.cardinalities_ == (12,)  # declared categories count in |X|
    proba = clf.predict_proba(pd.DataFrame({"id": pd.Categorical(["k"], categories=list("kx"))}))
    np.testing.assert_allclose(proba.sum(), 1.0)
    many = pd.DataFrame({"id": [f"r{i}" for i in range(30)], "x": list("ab") * 15})
    with pytest.warns(UserWarning, match="identifier"):
        BayesNetClassifier(m=1.0, exclude_features=None).fit(many, np.arange(30) % 2)


def test_duplicated_column_names(small):
    X, y = small
    X = pd.concat([X, X[["a"]]], axis=1)
    with pytest.raises(ValueError, match=r"duplicated column names: \['a'\]"):
        BayesNetClassifier().fit(X, y)


def test_wrong_number_of_target_values(small):
    X, y = small
    with pytest.raises(ValueError, match="6 rows but y has 5"):
        BayesNetClassifier().fit(X, y[:5])


def test_selective_kdb_drops_unselected_attributes(tmp_path):
    X, y = load_dataset("car")
    X = X.assign(noise=np.random.default_rng(0).choice(list("abc"), len(X)))
    clf = BayesNetClassifier(structure="skdb", k=2, m=1.0).fit(X, y)
    sel = clf.selection_
    assert 1 <= sel.n_selected <= X.shape[1] and 0 <= sel.k_selected <= 2
    assert len(clf.trees_) == 1 + sel.n_selected
    kept = {clf.tree_specs_[i].child for i in range(1, len(clf.tree_specs_))}
    assert kept == set(sel.attributes)
    clf.save(tmp_path / "skdb.npz")
    loaded = BayesNetClassifier.load(tmp_path / "skdb.npz")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # the selection survives the round trip, read-only like the original
    back = loaded.selection_
    assert (back.n_selected, back.k_selected, back.max_k, back.attributes) == (
        sel.n_selected, sel.k_selected, sel.max_k, sel.attributes)
    assert back.m == sel.m
    np.testing.assert_array_equal(back.rmse, sel.rmse)
    assert not back.rmse.flags.writeable
    assert back.structure.to_dict() == sel.structure.to_dict()
    assert back.full_structure.to_dict() == sel.full_structure.to_dict()


def test_hdp_fit_exposes_diagnostics_and_saves_them(tmp_path):
    from fastpath.estimate import UnconvergedWarning

    X, y = load_dataset("tic-tac-toe")
    clf = BayesNetClassifier(structure="nb", estimation="hdp",
                             sampler=HDPOptions.preset("adaptive", n_iter=300, n_chains=2),
                             random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnconvergedWarning)  # 300 iterations is deliberately short
        clf.fit(X, y)
    diag = clf.diagnostics_
    assert len(diag.trees) == len(clf.trees_) and diag.n_chains == 2
    assert np.isfinite(diag.max_rhat)
    clf.save(tmp_path / "hdp.npz")
    loaded = BayesNetClassifier.load(tmp_path / "hdp.npz")
    assert loaded.diagnostics_.to_dict() == diag.to_dict()
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # same seed, same chains, same estimates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnconvergedWarning)
        again = BayesNetClassifier(**clf.get_params()).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize(
    "params,match",
    [({"n_iter": 0}, "n_iter"), ({"concentration_every": 0}, "concentration_every"),
     ({"overrelax": True, "update": "window"}, "overrelax"),
     ({"tying": "levels"}, "tying must be"), ({"alpha0": -1.0}, "alpha0")],
)
def test_bad_sampler_options_fail_before_any_work(small, params, match):
    X, y = small
    with pytest.raises(ValueError, match=match):  # the options check themselves
        HDPOptions.preset("adaptive", **params)
    for sampler in ("slow", {**params}):
        clf = BayesNetClassifier(estimation="hdp", sampler=sampler)
        with pytest.raises(ValueError, match="sampler must be one of"):
            clf.fit(X, y)
        assert not hasattr(clf, "structure_")  # rejected up front, before structure learning


def test_overrelax_reaches_the_sampler_and_model_files(small, tmp_path):
    X, y = small
    clf = BayesNetClassifier(structure="nb", estimation="hdp",
                             sampler=HDPOptions.preset("adaptive", n_iter=400, overrelax=True),
                             random_state=3).fit(X, y)
    assert all(r.options.overrelax for r in clf.hdp_results_)
    clf.save(tmp_path / "or.npz")
    loaded = BayesNetClassifier.load(tmp_path / "or.npz")
    assert loaded.get_params()["sampler"] == clf.sampler and loaded.sampler.overrelax is True
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_concentration_every_reaches_the_sampler_and_model_files(small, tmp_path):
    X, y = small
    clf = BayesNetClassifier(structure="nb", estimation="hdp",
                             sampler=HDPOptions.preset("adaptive", n_iter=400,
                                                       concentration_every=1),
                             random_state=3).fit(X, y)
    assert clf.hdp_options().concentration_every == 1
    assert all(r.options.concentration_every == 1 for r in clf.hdp_results_)
    default = BayesNetClassifier(structure="nb", estimation="hdp",
                                 sampler=HDPOptions.preset("paper", n_iter=400),
                                 random_state=3).fit(X, y)
    # another schedule, another chain: the concentration traces differ
    assert not np.array_equal(clf.hdp_results_[1].trace.concentrations,
                              default.hdp_results_[1].trace.concentrations)
    clf.save(tmp_path / "every1.npz")
    loaded = BayesNetClassifier.load(tmp_path / "every1.npz")
    assert loaded.get_params()["sampler"].concentration_every == 1
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_predict_log_proba_is_finite_where_the_posterior_underflows():
    from scipy.special import logsumexp

    # 120 attributes that each copy the class: every one favours its class by about 8 nats
    y = np.repeat(["neg", "pos"], 100)
    X = pd.DataFrame({f"a{j}": np.where(y == "pos", "hi", "lo") for j in range(120)})
    clf = BayesNetClassifier("nb", m=0.05).fit(X, y)
    rows = X.iloc[[0, 150]]
    joint = clf.predict_joint_log_proba(rows)
    assert np.all(np.ptp(joint, axis=1) > 750)  # exp(-750) underflows float64
    proba = clf.predict_proba(rows)
    assert np.any(proba == 0.0)  # the posterior of the other class underflowed
    log_proba = clf.predict_log_proba(rows)
    assert np.all(np.isfinite(log_proba))
    np.testing.assert_allclose(log_proba, joint - logsumexp(joint, axis=1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(np.exp(log_proba), proba, rtol=1e-12, atol=0)


def test_predict_joint_log_proba_reads_the_plan_and_packs_nothing(small, monkeypatch):
    import fastpath.pipeline._fitted as fitted
    import fastpath.pipeline._members as members
    import fastpath.pipeline._stages as stages
    import fastpath.predict._inference as inference

    X, y = small
    clf = BayesNetClassifier("kdb", k=2, m=1.0).fit(X, y)
    packs = []

    def counting(module, name):
        packer = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: packs.append(name) or packer(*a, **k))

    # the one packer, wherever a prediction could reach it from
    for module in (fitted, members, stages, inference):
        for name in ("pack_members", "pack_model"):
            if hasattr(module, name):
                counting(module, name)
    first, second = clf.predict_joint_log_proba(X), clf.predict_joint_log_proba(X)
    assert packs == []  # the plan, packed at fit, is read by both calls
    np.testing.assert_array_equal(first, second)
    # the same kernel and packed trees as predict_proba's: its posterior, bit for bit
    np.testing.assert_array_equal(posterior_from_joint(first), clf.predict_proba(X))


def test_predict_joint_log_proba_ignores_the_columns_the_fit_left_out():
    X, y = load_dataset("car")
    X = X.iloc[:300].assign(id=np.arange(300))
    clf = BayesNetClassifier("nb", m=1.0, exclude_features=["id"]).fit(X, y.iloc[:300])
    assert clf.excluded_features_ == ("id",)
    joint = clf.predict_joint_log_proba(X)
    np.testing.assert_array_equal(posterior_from_joint(joint), clf.predict_proba(X))


# ---------------------------------------------------------------------- issue 15: m_backoff
def _zero_count_data():
    # "b" = "a" when y = 0: the cells (y=0, a=x, b!=x) ... are zero joint counts
    rng = np.random.default_rng(5)
    a = rng.choice(["x", "y", "z"], 400)
    y = rng.integers(0, 2, 400)
    b = np.where(y == 0, a, rng.choice(["x", "y", "z"], 400))
    return pd.DataFrame({"a": a, "b": b}), y


@pytest.mark.parametrize("bad", ["literal", "", None, 1])
def test_m_backoff_is_checked_naming_it(small, bad):
    X, y = small
    with pytest.raises(ValueError, match=r"^m_backoff must be one of \('path', 'value'\)"):
        BayesNetClassifier(m_backoff=bad).fit(X, y)


def test_m_backoff_value_reaches_the_tables_and_the_m_choice():
    from fastpath.estimate import m_estimate_table

    X, y = _zero_count_data()
    path = BayesNetClassifier("tan", random_state=0, estimation="m").fit(X, y)
    value = BayesNetClassifier("tan", m_backoff="value", random_state=0, estimation="m").fit(X, y)
    assert path.get_params()["m_backoff"] == "path"
    for tree, table in zip(value.trees_, value.probability_tables_, strict=True):
        np.testing.assert_array_equal(table, m_estimate_table(tree, value.m_, "value"))
    for tree, table in zip(path.trees_, path.probability_tables_, strict=True):
        np.testing.assert_array_equal(table, m_estimate_table(tree, path.m_, "path"))
    # the holdout scored every candidate m with the value back-off
    assert value.m_scores_ != path.m_scores_
    assert not np.array_equal(value.predict_proba(X), path.predict_proba(X))
    np.testing.assert_allclose(value.predict_proba(X).sum(axis=1), 1.0)


def test_m_backoff_survives_save_and_load(tmp_path):
    X, y = _zero_count_data()
    clf = BayesNetClassifier("kdb", k=1, m_backoff="value", random_state=0).fit(X, y)
    clf.save(tmp_path / "value.npz")
    loaded = BayesNetClassifier.load(tmp_path / "value.npz")
    assert loaded.get_params() == clf.get_params()
    assert loaded.m_backoff == "value"
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_a_model_file_without_m_backoff_loads_as_path(tmp_path):
    import json

    X, y = _zero_count_data()
    clf = BayesNetClassifier("nb", random_state=0).fit(X, y)
    clf.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(bytes(arrays["meta"]).decode("utf-8"))
    del meta["params"]["m_backoff"]  # a file written before the parameter existed
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(tmp_path / "old.npz", **arrays)
    loaded = BayesNetClassifier.load(tmp_path / "old.npz")
    assert loaded.m_backoff == "path"
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_m_backoff_out_of_core(tmp_path):
    X, y = _zero_count_data()
    path = tmp_path / "zeros.csv"
    X.assign(target=y).to_csv(path, index=False)
    # a fixed m: the streamed fit estimates its tables with the value back-off
    memory = BayesNetClassifier("tan", m=0.2, m_backoff="value", estimation="m").fit(X, y)
    streamed = BayesNetClassifier("tan", m=0.2, m_backoff="value",
                                  estimation="m").fit(path, "target")
    np.testing.assert_allclose(streamed.predict_proba(X), memory.predict_proba(X), rtol=1e-12)
    # m = "auto": the out-of-core m choice scores the candidates with the same back-off
    auto = BayesNetClassifier("tan", m_backoff="value", random_state=1, estimation="m").fit(X, y)
    streamed = BayesNetClassifier("tan", m_backoff="value", random_state=1,
                                  estimation="m").fit(path, "target")
    assert streamed.m_scores_ == auto.m_scores_ and streamed.m_ == auto.m_
    np.testing.assert_allclose(streamed.predict_proba(X), auto.predict_proba(X), rtol=1e-12)
    path_rule = BayesNetClassifier("tan", random_state=1, estimation="m").fit(path, "target")
    assert path_rule.m_scores_ != streamed.m_scores_


def test_eskdb_passes_m_backoff_to_its_members(tmp_path):
    from fastpath import ESKDBClassifier
    from fastpath.estimate import m_estimate_table

    X, y = _zero_count_data()
    ens = ESKDBClassifier(n_estimators=2, k=1, estimation="m", m_backoff="value",
                          random_state=0).fit(X, y)
    for member in ens.members_:
        for tree, table in zip(member.trees, member.probability_tables, strict=True):
            np.testing.assert_array_equal(table, m_estimate_table(tree, member.m, "value"))
    ens.save(tmp_path / "ens.npz")
    assert ESKDBClassifier.load(tmp_path / "ens.npz").m_backoff == "value"
    with pytest.raises(ValueError, match=r"^m_backoff"):
        ESKDBClassifier(estimation="m", m_backoff="values").fit(X, y)


# ---------------------------------------------------------------------- the choice of m
def test_default_m_is_never_0_and_no_class_gets_probability_0():
    # iris NB, 5 stratified folds: the paper's holdout (12 rows) picks m = 0 in fold 2
    from sklearn.datasets import load_iris
    from sklearn.model_selection import StratifiedKFold

    X, y = load_iris(return_X_y=True, as_frame=True)
    folds = list(StratifiedKFold(5).split(X, y))
    paper = [BayesNetClassifier("nb", m="holdout", random_state=0,
                                estimation="m").fit(X.iloc[tr], y.iloc[tr]).m_
             for tr, _ in folds]
    assert 0.0 in paper  # what m="auto" was before: a certain estimate by accident
    for tr, te in folds:
        clf = BayesNetClassifier("nb", random_state=0, estimation="m").fit(X.iloc[tr], y.iloc[tr])
        assert clf.m_ > 0 and set(clf.m_scores_) == {0.05, 0.2, 1.0, 5.0, 20.0}
        assert clf.predict_proba(X.iloc[te]).min() > 0


def test_default_m_does_not_depend_on_the_seed():
    # wine NB: the holdout rule picks m from 0 to 20 depending on random_state
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    paper = {BayesNetClassifier("nb", m="holdout", random_state=s,
                                estimation="m").fit(X, y).m_ for s in range(6)}
    assert len(paper) > 1
    chosen = {BayesNetClassifier("nb", random_state=s,
                                 estimation="m").fit(X, y).m_ for s in (0, 1, 2, None)}
    assert len(chosen) == 1


def test_m_rejects_an_unknown_rule():
    X, y = load_dataset("car")
    with pytest.raises(ValueError, match="m must be 'auto', 'holdout' or a non-negative number"):
        BayesNetClassifier("nb", m="loo").fit(X, y)


def test_partial_fit_with_default_m_scores_the_positive_candidates():
    X, y = load_dataset("car")
    perm = np.random.default_rng(0).permutation(len(X))  # every value in the first chunk
    X, y = X.iloc[perm].reset_index(drop=True), np.asarray(y)[perm]
    clf = BayesNetClassifier("nb", random_state=0, estimation="m")
    for s in range(0, len(X), 500):
        clf.partial_fit(X.iloc[s : s + 500], y[s : s + 500], classes=np.unique(y))
    clf.predict_proba(X.iloc[:3])  # re-estimates
    assert clf.m_ > 0 and set(clf.m_scores_) == {0.05, 0.2, 1.0, 5.0, 20.0}


def test_verbose_reports_the_stages_and_the_sampler(capsys):
    X, y = load_dataset("car")
    BayesNetClassifier("tan", estimation="hdp",
                       sampler=HDPOptions.preset("adaptive", n_iter=50), random_state=0).fit(X, y)
    assert capsys.readouterr().err == ""
    clf = BayesNetClassifier("tan", estimation="hdp",
                             sampler=HDPOptions.preset("adaptive", n_iter=50),
                             random_state=0, verbose=1)
    clf.fit(X, y)
    err = capsys.readouterr().err
    for stage in ("coding 1728 rows x 6 attributes", "learning the structure (tan)",
                  "counting 7 context trees", "sampling 7 trees", "fitted"):
        assert stage in err
    with pytest.raises(ValueError, match="verbose must be >= 0"):
        BayesNetClassifier(verbose=-1).fit(X, y)


def test_verbose_streamed_fit_names_its_passes(tmp_path, capsys):
    X, y = load_dataset("car")
    path = tmp_path / "car.csv"
    X.assign(cls=y).to_csv(path, index=False)
    BayesNetClassifier("tan", verbose=True, estimation="m").fit(path, "cls", chunksize=500)
    err = capsys.readouterr().err
    for stage in ("pass 1: the schema", "pass 2: pair statistics", "pass 3: counting",
                  "pass 4: choosing m (loo)", "fitted in 4 passes"):
        assert stage in err


@pytest.mark.parametrize("make", [
    lambda: BayesNetClassifier(estimation="m"),
    lambda: ESKDBClassifier(n_estimators=2, estimation="m", random_state=0),
])
def test_zero_rows_predict_to_empty_arrays_of_the_right_shape(small, make, tmp_path):
    X, y = small
    clf = make().fit(X, y)
    empty = X.iloc[:0]
    assert clf.predict_proba(empty).shape == (0, 2)
    assert clf.predict_log_proba(empty).shape == (0, 2)
    assert clf.predict(empty).shape == (0,) and clf.predict(empty).dtype == clf.classes_.dtype
    assert [p.shape for p in clf.iter_predict_proba(empty)] == []
    header = tmp_path / "header.csv"
    header.write_text("a,b\n")
    assert clf.predict_proba(header).shape == (0, 2)
    assert clf.predict(header).shape == (0,)
    empty.to_parquet(tmp_path / "empty.parquet")
    assert clf.predict_proba(tmp_path / "empty.parquet").shape == (0, 2)
    # fitting on no rows is still an error
    with pytest.raises(ValueError, match="0 sample"):
        make().fit(empty, y[:0])


def test_a_renamed_column_is_named_as_the_likely_match(small):
    X, y = small
    clf = BayesNetClassifier(estimation="m").fit(X, y)
    with pytest.raises(ValueError, match=r"renamed\? 'a' \(X has 'A'\)"):
        clf.predict(X.rename(columns={"a": "A"}))


def test_a_one_class_target_is_named_as_the_user_wrote_it(small, tmp_path):
    X, _ = small
    y = np.array(["a"] * len(X))
    with pytest.raises(ValueError, match=r"only 1 class \('a'\); a classifier") as info:
        BayesNetClassifier().fit(X, y)
    assert "np." not in str(info.value)
    path = tmp_path / "one.csv"
    X.assign(c=y).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"only 1 class \('a'\)"):
        BayesNetClassifier(estimation="m").fit(path, "c", chunksize=4)
    with pytest.raises(ValueError, match=r"only 1 class \('a'\)"):
        BayesNetClassifier(estimation="m").partial_fit(X, y)


# ---------------------------------------------------------------- weights (issue 46, point 11)
@pytest.fixture(scope="module")
def credit():
    return load_dataset("credit-a")


@pytest.mark.filterwarnings("ignore::fastpath.estimate.UnconvergedWarning")
@pytest.mark.parametrize("make", [
    lambda **p: BayesNetClassifier(structure="kdb", k=1,
                                   sampler=HDPOptions.preset("adaptive", n_iter=30),
                                   random_state=0, **p),
    lambda **p: ESKDBClassifier(n_estimators=2, k=2, estimation="m", random_state=0, **p),
])
def test_integer_sample_weights_are_the_rows_repeated(credit, make):
    X, y = credit
    w = np.random.default_rng(0).integers(0, 4, len(X))
    rows = np.repeat(np.arange(len(X)), w)
    weighted = make().fit(X, y, sample_weight=w)
    repeated = make().fit(X.iloc[rows], y.iloc[rows])
    np.testing.assert_array_equal(weighted.predict_proba(X), repeated.predict_proba(X))
    ones = make().fit(X, y, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(ones.predict_proba(X), make().fit(X, y).predict_proba(X))
    assert w.tolist() == np.asarray(w).tolist()  # not mutated


def test_a_class_whose_rows_all_weigh_zero_is_not_a_class(small):
    X, y = small
    y = np.array(["a", "b", "a", "b", "c", "a"])
    clf = BayesNetClassifier(estimation="m").fit(X, y, sample_weight=[1, 1, 1, 1, 0, 2])
    assert clf.classes_.tolist() == ["a", "b"]


@pytest.mark.parametrize("weights,match", [
    (np.full(6, 0.5), r"whole numbers.*got 0\.5 for row 0"),
    ([1, 1, -1, 1, 1, 1], r"got -1\.0 for row 2"),
    ([1, 1, np.nan, 1, 1, 1], "for row 2"),
    ([1, 1, 1], r"sample_weight\.shape"),
    (np.zeros(6), "every sample_weight is zero"),
    (["a"] * 6, "sample_weight must be numbers"),
])
def test_weights_that_cannot_be_counted_exactly_are_refused(small, weights, match):
    X, y = small
    with pytest.raises(ValueError, match=match):
        BayesNetClassifier(estimation="m").fit(X, y, sample_weight=weights)


def test_sample_weight_with_a_stream_is_refused(small, tmp_path):
    X, y = small
    path = tmp_path / "t.csv"
    X.assign(c=y).to_csv(path, index=False)
    with pytest.raises(ValueError, match="sample_weight applies to a table in memory"):
        BayesNetClassifier(estimation="m").fit(str(path), "c", sample_weight=np.ones(6))


def test_partial_fit_counts_weighted_rows_as_repeated(credit):
    X, y = credit
    w = np.random.default_rng(1).integers(0, 3, len(X))
    rows = np.repeat(np.arange(len(X)), w)
    classes = np.unique(y)
    a = BayesNetClassifier("nb", estimation="m", m=1.0).partial_fit(
        X, y, classes=classes, sample_weight=w)
    b = BayesNetClassifier("nb", estimation="m", m=1.0).partial_fit(
        X.iloc[rows], y.iloc[rows], classes=classes)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.parametrize("make", [
    lambda **p: BayesNetClassifier(estimation="m", **p),
    lambda **p: ESKDBClassifier(n_estimators=2, k=1, estimation="m", random_state=0, **p),
])
def test_class_weight_multiplies_the_class_prior(credit, make, tmp_path):
    X, y = credit
    plain = make().fit(X, y)
    proba = plain.predict_proba(X)
    counts = np.array([np.sum(y == c) for c in plain.classes_], dtype=float)

    joint = members_joint_log_proba(plain.members_, X)  # members x rows x classes

    def reweighted(w):  # each member's posterior with its prior times w, then their mean
        shifted = np.exp(joint - joint.max(axis=2, keepdims=True)) * w
        return (shifted / shifted.sum(axis=2, keepdims=True)).mean(axis=0)

    np.testing.assert_allclose(reweighted(np.ones(2)), proba, rtol=1e-9)

    balanced = make(class_weight="balanced").fit(X, y)
    w = counts.sum() / (len(counts) * counts)
    got = balanced.predict_proba(X)
    np.testing.assert_allclose(got, reweighted(w), rtol=1e-9)
    np.testing.assert_allclose(balanced.predict_log_proba(X), np.log(got), rtol=1e-9)
    assert balanced.predict(X).tolist() == plain.classes_[got.argmax(axis=1)].tolist()
    # the tables are those of the unweighted fit: only the prior moves
    np.testing.assert_array_equal(balanced.members_[0].probability_tables[0],
                                  plain.members_[0].probability_tables[0])
    given = make(class_weight={"+": 3.0}).fit(X, y)
    np.testing.assert_allclose(given.predict_proba(X), reweighted(np.array([3.0, 1.0])),
                               rtol=1e-9)
    # streamed prediction and a saved model weigh alike
    path = tmp_path / "x.csv"
    X.to_csv(path, index=False)
    np.testing.assert_allclose(given.predict_proba(str(path)), given.predict_proba(X),
                               rtol=1e-12)
    given.save(tmp_path / "m.npz")
    loaded = type(given).load(tmp_path / "m.npz")
    assert loaded.class_weight == {"+": 3.0}
    np.testing.assert_array_equal(loaded.predict_proba(X), given.predict_proba(X))


def test_class_weight_with_integer_labels_survives_a_save(small, tmp_path):
    X, y = small
    clf = BayesNetClassifier(estimation="m", class_weight={1: 2.5}).fit(X, y)
    clf.save(tmp_path / "m.npz")
    loaded = BayesNetClassifier.load(tmp_path / "m.npz")
    assert loaded.class_weight == {1: 2.5}
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize("class_weight,match", [
    ("auto", "class_weight must be None, 'balanced' or a dict"),
    ({"+": -1}, r"class_weight\['\+'\] must be a positive number"),
    ({"+": 0}, "must be a positive number"),
    ({"+": "x"}, "must be a positive number"),
])
def test_bad_class_weights_are_refused_before_the_fit(small, class_weight, match):
    X, y = small
    with pytest.raises(ValueError, match=match):
        BayesNetClassifier(estimation="m", class_weight=class_weight).fit(X, y)


def test_a_class_weight_for_an_unknown_label_leaves_the_estimator_as_it_was(small):
    X, y = small
    clf = BayesNetClassifier(estimation="m").fit(X, y)
    before = clf.predict_proba(X)
    clf.set_params(class_weight={7: 2.0})
    with pytest.raises(ValueError, match=r"labels that are not classes: \[7\]"):
        clf.fit(X, y)
    clf.set_params(class_weight=None)
    np.testing.assert_array_equal(clf.predict_proba(X), before)


def test_balanced_class_weight_finds_more_of_a_rare_class():
    rng = np.random.default_rng(3)
    n = 4000
    y = np.where(rng.random(n) < 0.04, "yes", "no")
    X = pd.DataFrame({"a": np.where(rng.random(n) < np.where(y == "yes", 0.6, 0.3), "u", "v"),
                      "b": rng.normal(np.where(y == "yes", 0.7, 0.0), 1.0)})
    plain = BayesNetClassifier("nb", estimation="m").fit(X, y)
    balanced = BayesNetClassifier("nb", estimation="m", class_weight="balanced").fit(X, y)
    recall = [np.mean(c.predict(X)[y == "yes"] == "yes") for c in (plain, balanced)]
    assert recall[0] < 0.1 < 0.5 < recall[1]
