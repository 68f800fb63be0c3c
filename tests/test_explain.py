"""Exact explanations (fastpath/pipeline/_explain.py, fastpath/predict/_explain.py): the terms
are the tables' numbers at the nodes an independent descent (``ContextTree.find``) reaches,
they sum to ``predict_log_proba`` for every structure and estimation method, the ensemble's gap
obeys its identity and Jensen's bounds, unknown values contribute 0 and are flagged, and the
structure's information is the empirical ``I(X_i; Y | Pa_i)`` counted by brute force."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.encode._encoder import code_members
from fastpath.pipeline._explain import conditional_information
from fastpath.predict._explain import member_terms
from fastpath.predict._inference import packed_joint_log_likelihood
from fastpath.structure import mutual_information

STRUCTURES = [dict(structure="nb"), dict(structure="tan"), dict(structure="kdb", k=1),
              dict(structure="kdb", k=2), dict(structure="skdb", k=2)]
ESTIMATIONS = [dict(estimation="m"), dict(estimation="m", m=0.5),
               dict(estimation="hdp", sampler=HDPOptions.preset("adaptive", n_iter=40)),
               dict(estimation="hgs")]


def table(rng: np.random.Generator, n_rows: int, cards: list[int], n_classes: int
          ) -> tuple[pd.DataFrame, np.ndarray]:
    """Nominal columns whose values depend on the class and on the column before."""
    y = rng.integers(n_classes, size=n_rows)
    cols = {}
    prev = np.zeros(n_rows, np.int64)
    for j, card in enumerate(cards):
        shift = (y + prev) % card
        v = np.where(rng.random(n_rows) < 0.6, shift, rng.integers(card, size=n_rows))
        cols[f"a{j}"] = np.array([f"v{k}" for k in v], dtype=object)
        prev = v
    return pd.DataFrame(cols), np.array([f"c{k}" for k in y], dtype=object)


def with_unseen(rng: np.random.Generator, X: pd.DataFrame, rate: float = 0.15) -> pd.DataFrame:
    """``X`` with some cells replaced by a value never seen in fit (an unknown code)."""
    X = X.copy()
    for col in X.columns:
        hit = rng.random(len(X)) < rate
        X.loc[hit, col] = "unseen"
    return X


def brute_terms(clf, X: pd.DataFrame) -> list[np.ndarray]:
    """Each member's (rows, attributes, classes) terms by ``ContextTree.find`` on its own
    tree and table, without the packed arrays."""
    out = []
    n_classes = len(clf.classes_)
    for member in clf.members_:
        codes = member.encoder.transform(X)
        terms = np.zeros((len(X), codes.shape[1], n_classes))
        for spec, tree, tab in zip(member.tree_specs, member.trees, member.probability_tables,
                                   strict=True):
            if spec.child < 0:
                continue
            x = codes[:, spec.child]
            for c in range(n_classes):
                paths = np.stack([np.full(len(X), c) if col < 0 else codes[:, col]
                                  for col in spec.conditioning], axis=1)
                node = tree.find(paths)
                value = np.log(tab[node, np.maximum(x, 0)])
                terms[:, spec.child, c] = np.where(x >= 0, value, 0.0)
        out.append(terms)
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structure=st.sampled_from(STRUCTURES), estimation=st.sampled_from(ESTIMATIONS),
       n_rows=st.integers(30, 200), cards=st.lists(st.integers(2, 4), min_size=2, max_size=5),
       n_classes=st.integers(2, 3), seed=st.integers(0, 2**32 - 1))
def test_contributions_sum_to_the_log_posterior(structure, estimation, n_rows, cards, n_classes,
                                                seed):
    rng = np.random.default_rng(seed)
    X, y = table(rng, n_rows, cards, n_classes)
    if len(set(y)) < 2:
        y[0], y[1] = "c0", "c1"
    test = with_unseen(rng, table(rng, 60, cards, n_classes)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains, unseen values
        clf = BayesNetClassifier(**structure, **estimation, random_state=0).fit(X, y)
        ex = clf.explain(test)
        np.testing.assert_allclose(ex.log_posterior, clf.predict_log_proba(test), rtol=0,
                                   atol=1e-10)
        # every term is the table's number at the node an independent descent reaches
        np.testing.assert_array_equal(ex.contributions, brute_terms(clf, test)[0])
        codes = clf.members_[0].encoder.transform(test)
    # unknown values are flagged and contribute 0; the known ones of a used attribute are not
    used = np.zeros(codes.shape[1], bool)
    used[[s.child for s in clf.members_[0].tree_specs if s.child >= 0]] = True
    np.testing.assert_array_equal(ex.unknown, (codes < 0) & used)
    assert ex.unknown.any()
    assert (ex.contributions[:, ~used] == 0).all()  # an unselected attribute adds nothing
    assert (ex.contributions[ex.unknown] == 0).all()
    np.testing.assert_array_equal(ex.ensemble_gap, 0.0)
    if len(clf.classes_) == 2:
        odds = ex.log_odds()
        lp = clf.predict_log_proba(test)
        np.testing.assert_allclose(odds.log_odds, lp[:, 1] - lp[:, 0], atol=1e-10)


def test_member_joint_is_the_prediction_kernels_bit_for_bit(car):
    """The prior plus the terms, added in the kernel's order, are the kernel's own floats,
    with every layout (tables in advance, merged branches, descents) in play."""
    X, y = car
    for clf in (BayesNetClassifier(structure="kdb", k=3, estimation="m").fit(X, y),
                ESKDBClassifier(n_estimators=3, estimation="m", random_state=1).fit(X, y)):
        plan = clf._plan()
        codes, columns = code_members(plan.encoders, X, plan.layout)
        joint = packed_joint_log_likelihood(plan.packed, codes, columns)
        for e in range(len(clf.members_)):
            _, mine, _ = member_terms(plan.packed, codes, columns, e)
            np.testing.assert_array_equal(mine, joint[e])


def test_ensemble_gap_identity_and_bounds(car):
    X, y = car
    rng = np.random.default_rng(3)
    test = with_unseen(rng, X.iloc[::7].reset_index(drop=True), rate=0.05)
    clf = ESKDBClassifier(n_estimators=4, estimation="m", random_state=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ex = clf.explain(test)
        model = clf.predict_log_proba(test)
        members = [BayesNetClassifier() for _ in clf.members_]
        logs = []
        for e, member in enumerate(clf.members_):
            single = members[e]
            single._assign(dataclasses_replace_members(clf, [member]))
            logs.append(single.predict_log_proba(test))
    logs = np.stack(logs)
    # identity: the parts sum to the model's log-posterior
    np.testing.assert_allclose(ex.log_posterior, model, atol=1e-10)
    # the parts are the members' exact explanations averaged
    np.testing.assert_allclose(ex.prior + ex.contributions.sum(1) - ex.log_normaliser[:, None],
                               logs.mean(axis=0), atol=1e-10)
    # Jensen: 0 <= gap <= max_e log P_e - mean_e log P_e, and 0 only where members agree
    assert (ex.ensemble_gap >= -1e-12).all()
    assert (ex.ensemble_gap <= logs.max(axis=0) - logs.mean(axis=0) + 1e-12).all()
    assert ex.ensemble_gap.max() > 1e-3
    assert ex.n_members == 4 and ex.unknown.any()


def dataclasses_replace_members(clf, members):
    """``clf``'s fitted model with only ``members`` (a single member is a BayesNetClassifier's
    model)."""
    import dataclasses

    return dataclasses.replace(clf._fitted_model(), members_=members)


def test_iter_explain_streams_a_file_in_chunks(tmp_path, car):
    X, y = car
    clf = BayesNetClassifier(structure="tan", estimation="m").fit(X, y)
    path = tmp_path / "car.csv"
    X.to_csv(path, index=False)
    whole = clf.explain(X)
    parts = list(clf.iter_explain(path, chunksize=500))
    assert [p.n_rows for p in parts] == [500, 500, 500, 228]
    np.testing.assert_array_equal(np.concatenate([p.contributions for p in parts]),
                                  whole.contributions)
    sliced = list(clf.iter_explain(X, chunksize=1000))
    np.testing.assert_array_equal(np.concatenate([p.log_normaliser for p in sliced]),
                                  whole.log_normaliser)
    with pytest.raises(TypeError, match="iter_explain"):
        clf.explain(path)


def test_class_weight_is_in_the_prior_term(car):
    X, y = car
    clf = BayesNetClassifier(estimation="m", class_weight="balanced").fit(X, y)
    ex = clf.explain(X.iloc[:50])
    np.testing.assert_allclose(ex.log_posterior, clf.predict_log_proba(X.iloc[:50]), atol=1e-10)
    plain = BayesNetClassifier(estimation="m").fit(X, y).explain(X.iloc[:50])
    np.testing.assert_array_equal(ex.contributions, plain.contributions)
    assert not np.allclose(ex.prior, plain.prior)


def test_to_frame_and_importance(car):
    X, y = car
    clf = BayesNetClassifier(estimation="m").fit(X, y)
    ex = clf.explain(X.iloc[:20])
    with pytest.raises(ValueError, match="cls"):
        ex.to_frame()
    frame = ex.to_frame(cls=clf.classes_[1])
    assert list(frame.columns) == ["prior", *X.columns, "log_normaliser", "ensemble_gap",
                                   "log_posterior"]
    np.testing.assert_allclose(frame["log_posterior"],
                               clf.predict_log_proba(X.iloc[:20])[:, 1], atol=1e-10)
    with pytest.raises(ValueError, match="not a class"):
        ex.to_frame(cls="nope")
    with pytest.raises(ValueError, match="two classes"):
        ex.log_odds()
    importance = ex.importance()
    np.testing.assert_allclose(importance[X.columns].to_numpy(),
                               np.abs(ex.centred()).mean(axis=(0, 2)))
    assert importance.is_monotonic_decreasing


def test_two_class_frame_sums_to_the_log_odds():
    rng = np.random.default_rng(0)
    X, y = table(rng, 300, [3, 2, 4], 2)
    clf = BayesNetClassifier(structure="kdb", k=1, estimation="m").fit(X, y)
    frame = clf.explain(X).to_frame()
    lp = clf.predict_log_proba(X)
    parts = frame.drop(columns="log_odds").sum(axis=1)
    np.testing.assert_allclose(parts, lp[:, 1] - lp[:, 0], atol=1e-10)
    np.testing.assert_allclose(clf.explain(X).importance()[list(X.columns)],
                               frame[list(X.columns)].abs().mean().to_numpy())


def brute_cmi(x: np.ndarray, y: np.ndarray, parents: np.ndarray) -> float:
    """``I(X; Y | Pa)`` from a table of counts over (y, pa, x)."""
    frame = pd.DataFrame({"x": x, "y": y, "pa": [tuple(r) for r in parents]})
    n = len(frame)
    total = 0.0
    for (yy, pa, xx), n_ypx in frame.groupby(["y", "pa", "x"]).size().items():
        n_pa = (frame.pa == pa).sum()
        n_ypa = ((frame.y == yy) & (frame.pa == pa)).sum()
        n_pax = ((frame.pa == pa) & (frame.x == xx)).sum()
        total += n_ypx / n * np.log(n_ypx * n_pa / (n_ypa * n_pax))
    return total


def test_structure_information_is_the_conditional_mutual_information():
    rng = np.random.default_rng(5)
    X, y = table(rng, 400, [3, 3, 2, 4], 3)
    clf = BayesNetClassifier(structure="kdb", k=2, estimation="m").fit(X, y)
    codes = clf.members_[0].encoder.transform(X)
    y_codes = np.searchsorted(clf.classes_, y)
    info = clf.structure_information()
    for j, parents in enumerate(clf.members_[0].structure.parents):
        expected = brute_cmi(codes[:, j], y_codes,
                             codes[:, list(parents)] if parents else np.zeros((len(X), 1)))
        assert info[f"a{j}"] == pytest.approx(expected, abs=1e-12)
    nb = BayesNetClassifier(structure="nb", estimation="m").fit(X, y)
    mi = mutual_information(codes, y_codes, clf.members_[0].encoder.cardinalities_, 3)
    np.testing.assert_allclose(nb.structure_information()[list(X.columns)], mi, atol=1e-12)


def test_conditional_information_of_independent_counts_is_zero():
    counts = np.array([[2.0, 4.0], [1.0, 2.0]])  # x independent of y
    assert conditional_information(counts, np.array([[0], [1]])) == pytest.approx(0, abs=1e-15)
    assert conditional_information(np.zeros((2, 2)), np.array([[0], [1]])) == 0.0
