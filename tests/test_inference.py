"""fastpath.predict._inference: packed tables -> joint log likelihoods -> class posteriors.

The reference is a brute-force evaluation written from the definitions: for every row and
class, log P(y) plus, for every attribute, the log of its table entry at the deepest node of its
context tree whose path (class, parent values...) matches the row, found by looking the path up
in ``tree.paths()`` (no ``child_lookup``). An unknown value (code -1) contributes no factor of
its own and stops the descent of its children's trees (back-off). For naive Bayes this is
exactly marginalising the value out. Posteriors are compared with ``scipy.special.softmax``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp, softmax

from fastpath import BayesNetClassifier, ESKDBClassifier, load_dataset
from fastpath.encode._encoder import code_members
from fastpath.predict import joint_log_likelihood, pack_model, posterior_from_joint
from fastpath.predict._inference import (
    members_posterior_mean,
    pack_members,
    packed_joint_log_likelihood,
)


# ====================================================================== the reference
def _node_index(tree):
    """Path prefix (tuple) -> node, for every node of a context tree."""
    paths, depth = tree.paths(), tree.node_depth
    return {tuple(int(v) for v in paths[i, : depth[i]]): i for i in range(tree.n_nodes)}


def brute_force_joint(specs, trees, tables, codes):
    """log P(y, x) by hand, and how many factors backed off above their leaf."""
    n_classes = tables[0].shape[1]
    index = [_node_index(t) for t in trees]
    out = np.empty((codes.shape[0], n_classes))
    backed_off = 0
    for r, row in enumerate(codes):
        for c in range(n_classes):
            s = math.log(tables[0][0, c])
            for a in range(1, len(specs)):
                spec, table = specs[a], tables[a]
                x = row[spec.child]
                if x < 0:
                    continue  # unknown value: no factor
                values = [c if col < 0 else int(row[col]) for col in spec.conditioning]
                node = 0
                for d in range(1, len(values) + 1):
                    if values[d - 1] < 0 or tuple(values[:d]) not in index[a]:
                        backed_off += 1
                        break
                    node = index[a][tuple(values[:d])]
                with np.errstate(divide="ignore"):
                    s += np.log(table[node, x])
            out[r, c] = s
    return out, backed_off


def _packed(clf):
    return pack_model(clf.probability_tables_[0][0], clf.tree_specs_[1:], clf.trees_[1:],
                      clf.probability_tables_[1:])


# ====================================================================== data
def _nominal_data(n=300, seed=0):
    """Four nominal attributes; a1 copies a0 most of the time, so many (class, a0, a1) paths
    are never observed and kDB's trees have to back off on new rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    a0 = (y + (rng.random(n) < 0.3) * rng.integers(0, 3, n)) % 3
    a1 = np.where(rng.random(n) < 0.9, a0, rng.integers(0, 4, n))
    a2 = rng.integers(0, 2, n) + 2 * (y == 2)
    a3 = (a2 + y) % 3
    X = pd.DataFrame({f"a{j}": v.astype(str) for j, v in enumerate((a0, a1, a2, a3))})
    return X, np.array(["lo", "mid", "hi"])[y]


def _all_codes(clf, seed=1, n=200, p_unknown=0.0):
    """Random code rows over the whole product space (most paths unseen), some unknown."""
    rng = np.random.default_rng(seed)
    cards = np.array(clf.encoder_.cardinalities_)
    codes = (rng.random((n, cards.size)) * cards).astype(np.int64)
    codes[rng.random(codes.shape) < p_unknown] = -1
    return codes


@pytest.fixture(scope="module")
def data():
    return _nominal_data()


@pytest.fixture(scope="module")
def nb(data):
    return BayesNetClassifier("nb", m=1.0).fit(*data)


@pytest.fixture(scope="module")
def kdb1(data):
    return BayesNetClassifier("kdb", k=1, m=1.0).fit(*data)


# ====================================================================== joint log likelihood
@pytest.mark.parametrize("model", ["nb", "kdb1"])
def test_joint_equals_the_brute_force_product_of_table_entries(model, request):
    clf = request.getfixturevalue(model)
    codes = _all_codes(clf)
    ref, _ = brute_force_joint(clf.tree_specs_, clf.trees_, clf.probability_tables_, codes)
    np.testing.assert_allclose(joint_log_likelihood(_packed(clf), codes), ref, rtol=1e-12)


def test_kdb1_has_attribute_parents_and_backs_off(kdb1):
    assert any(len(p) == 1 for p in kdb1.structure_.parents)
    codes = _all_codes(kdb1)
    _, backed_off = brute_force_joint(kdb1.tree_specs_, kdb1.trees_,
                                      kdb1.probability_tables_, codes)
    assert backed_off > 0  # the previous test really exercised unseen paths


@pytest.mark.parametrize("model", ["nb", "kdb1"])
def test_unknown_codes_back_off_like_the_brute_force(model, request):
    clf = request.getfixturevalue(model)
    codes = _all_codes(clf, seed=2, p_unknown=0.3)
    ref, _ = brute_force_joint(clf.tree_specs_, clf.trees_, clf.probability_tables_, codes)
    np.testing.assert_allclose(joint_log_likelihood(_packed(clf), codes), ref, rtol=1e-12)


def test_classifier_joint_is_the_packed_joint_of_its_codes(kdb1, data):
    X, _ = data
    new = X.iloc[:20].copy()
    new.iloc[3, 1] = "never-seen"
    codes = kdb1.transform_codes(new)
    assert codes[3, 1] == -1
    ref, _ = brute_force_joint(kdb1.tree_specs_, kdb1.trees_, kdb1.probability_tables_, codes)
    np.testing.assert_allclose(kdb1.predict_joint_log_proba(new), ref, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_naive_bayes_unknown_value_is_marginalised_out(nb, data):
    cards = nb.encoder_.cardinalities_
    row = np.array([data.draw(st.integers(0, k - 1)) for k in cards])
    j = data.draw(st.integers(0, len(cards) - 1))
    packed = _packed(nb)
    completed = np.repeat(row[None, :], cards[j], axis=0)
    completed[:, j] = np.arange(cards[j])
    unknown = row.copy()
    unknown[j] = -1
    # sum over the values of x_j of P(y, x) = P(y, x without x_j): the tables' rows sum to 1
    marginal = logsumexp(joint_log_likelihood(packed, completed), axis=0)
    np.testing.assert_allclose(joint_log_likelihood(packed, unknown[None, :])[0], marginal,
                               rtol=1e-12)


def test_every_value_unknown_leaves_the_class_prior(kdb1):
    codes = np.full((3, kdb1.n_features_in_), -1, dtype=np.int64)
    joint = joint_log_likelihood(_packed(kdb1), codes)
    np.testing.assert_allclose(joint, np.log(kdb1.probability_tables_[0][[0, 0, 0]]))


def test_no_attribute_trees_and_no_rows():
    prior = np.array([0.2, 0.8])
    empty = pack_model(prior, [], [], [])
    np.testing.assert_allclose(joint_log_likelihood(empty, np.zeros((2, 3), np.int64)),
                               np.log([prior, prior]))
    assert joint_log_likelihood(empty, np.zeros((0, 3), np.int64)).shape == (0, 2)


def test_zero_table_entries_give_minus_infinity(data):
    clf = BayesNetClassifier("kdb", k=1, estimation="m", m=0.0).fit(*data)
    codes = _all_codes(clf, seed=3)
    ref, _ = brute_force_joint(clf.tree_specs_, clf.trees_, clf.probability_tables_, codes)
    joint = joint_log_likelihood(_packed(clf), codes)
    assert np.isneginf(ref).any()
    np.testing.assert_array_equal(np.isneginf(joint), np.isneginf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(joint[finite], ref[finite], rtol=1e-12)


# ====================================================================== posteriors
finite_or_minus_inf = st.one_of(
    st.floats(-5e3, 5e3, allow_nan=False), st.just(-np.inf)
)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6),
                  elements=finite_or_minus_inf))
def test_posterior_is_the_softmax_and_rows_sum_to_one(joint):
    p = posterior_from_joint(joint)
    assert p.shape == joint.shape
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    for r in range(joint.shape[0]):
        if np.isfinite(joint[r]).any():
            np.testing.assert_allclose(p[r], softmax(joint[r]), rtol=1e-9, atol=1e-300)
            assert np.all(p[r][np.isneginf(joint[r])] == 0)
        else:  # every class impossible: no information, uniform
            np.testing.assert_array_equal(p[r], 1.0 / joint.shape[1])


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, (4, 3), elements=st.floats(-50, 50)),
       st.floats(-1e5, 1e5))
def test_posterior_ignores_a_constant_shift(joint, shift):
    np.testing.assert_allclose(posterior_from_joint(joint + shift), posterior_from_joint(joint),
                               rtol=1e-6, atol=1e-12)


def test_classifier_posterior_is_normalised_brute_force(kdb1, data):
    X, _ = data
    codes = kdb1.transform_codes(X)
    ref, _ = brute_force_joint(kdb1.tree_specs_, kdb1.trees_, kdb1.probability_tables_, codes)
    expected = np.exp(ref - logsumexp(ref, axis=1, keepdims=True))
    np.testing.assert_allclose(kdb1.predict_proba(X), expected, rtol=1e-10)


# ====================================================================== every member, shared codes
def test_every_members_joint_from_shared_codes_is_each_members_joint():
    """An ensemble's members, coded in one shared matrix (each distinct coding once), give
    exactly each member's own codes and joint (unknown values included)."""
    X, y = load_dataset("credit-a")
    ens = ESKDBClassifier(4, 2, "m", random_state=3).fit(X.iloc[:400], y[:400])
    Xt = X.iloc[400:].copy()
    Xt.iloc[::7, 3] = "never seen"  # unknown nominal values
    codes, columns = code_members([m.encoder for m in ens.members_], Xt)
    assert codes.shape[1] < columns.size  # nominal columns are coded once for all members
    tables = [m.prediction_tables() for m in ens.members_]
    packed = pack_members([t[0][0] for t in tables], [m.tree_specs[1:] for m in ens.members_],
                          [m.trees[1:] for m in ens.members_], [t[1:] for t in tables])
    joint = packed_joint_log_likelihood(packed, codes, columns)
    for e, member in enumerate(ens.members_):
        own = member.encoder.transform(Xt)
        np.testing.assert_array_equal(codes[:, columns[e]], own)
        np.testing.assert_array_equal(joint[e], joint_log_likelihood(member.pack(), own))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("p_unknown", [0.0, 0.2])
def test_trees_resolved_in_advance_give_the_descents_numbers(data, monkeypatch, k, p_unknown):
    """A small tree's table of every parent combination (_dense_tables) holds the numbers its
    descent reads: the joint is the same float with and without it, unknown values included,
    and is the brute-force product."""
    import fastpath.predict._inference as inference

    clf = BayesNetClassifier("kdb", k=k, m=1.0).fit(*data)
    codes = _all_codes(clf, seed=k, n=300, p_unknown=p_unknown)
    dense = _packed(clf)
    assert (dense.dense_offset >= 0).all()
    monkeypatch.setattr(inference, "DENSE_MIN_ENTRIES", 0)
    monkeypatch.setattr(inference, "DENSE_GROWTH", 0)
    walked = _packed(clf)
    assert (walked.dense_offset < 0).all()
    got = joint_log_likelihood(dense, codes)
    np.testing.assert_array_equal(got, joint_log_likelihood(walked, codes))
    expected, _ = brute_force_joint(clf.tree_specs_, clf.trees_, clf.probability_tables_, codes)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("p_unknown", [0.0, 0.2])
def test_merged_class_branches_give_the_descents_numbers(data, monkeypatch, k, p_unknown):
    """A tree whose class branches are merged (_merged_branches) reads, for every class, the
    node its own descent stops at: the joint is the same float as descending once per class
    (unknown values and unseen paths included, over more rows than one ROW_BLOCK), and is the
    brute-force product."""
    import fastpath.predict._inference as inference

    clf = BayesNetClassifier("kdb", k=k, m=1.0).fit(*data)
    codes = _all_codes(clf, seed=10 + k, n=3 * inference.ROW_BLOCK + 17, p_unknown=p_unknown)
    monkeypatch.setattr(inference, "DENSE_MIN_ENTRIES", 0)
    monkeypatch.setattr(inference, "DENSE_GROWTH", 0)
    merged = _packed(clf)
    with_parents = np.array([len(s.conditioning) > 1 for s in clf.tree_specs_[1:]])
    assert (merged.dense_offset < 0).all()
    np.testing.assert_array_equal(merged.merged_node_offset >= 0, with_parents)
    monkeypatch.setattr(inference, "MERGED_GROWTH", -1)
    walked = _packed(clf)
    assert (walked.merged_node_offset < 0).all()
    got = joint_log_likelihood(merged, codes)
    np.testing.assert_array_equal(got, joint_log_likelihood(walked, codes))
    expected, backed_off = brute_force_joint(clf.tree_specs_, clf.trees_,
                                             clf.probability_tables_, codes)
    assert backed_off > 0
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("merged_growth", [4, -1])  # trees merged where they may, and none
def test_the_members_child_links_are_each_slots_child_and_its_slots(monkeypatch, merged_growth):
    """The packed model holds a tree's children as links: slot s of member e's tree is the
    pair (child, the child's slots) of that tree's own lookups, for descended and merged
    (:func:`_merged_branches`) trees alike, every member shifted into the concatenation."""
    import fastpath.predict._inference as inference

    monkeypatch.setattr(inference, "DENSE_MIN_ENTRIES", 0)
    monkeypatch.setattr(inference, "DENSE_GROWTH", 0)
    monkeypatch.setattr(inference, "MERGED_GROWTH", merged_growth)
    X, y = load_dataset("credit-a")
    ens = ESKDBClassifier(3, 3, "m", random_state=1).fit(X, y)
    packed = ens._prediction_plan.packed
    pairs = packed.child_links.reshape(-1, 2)
    merged_pairs = packed.merged_child_links.reshape(-1, 2)
    checked = merged_checked = 0
    for e, member in enumerate(ens.members_):
        for a, (spec, tree) in enumerate(zip(member.tree_specs[1:], member.trees[1:],
                                             strict=True)):
            t = packed.tree_ptr[e] + a
            for s, child in enumerate(tree.child_lookup):
                want = tree.lookup_offsets[child] if child >= 0 else -1
                assert tuple(pairs[packed.lookup_base[t] + s]) == (child, want)
                checked += 1
            if packed.merged_node_offset[t] < 0:
                continue
            lookup, children, _ = inference._merged_branches(
                np.asarray(spec.cardinalities, np.int64), tree.lookup_offsets,
                tree.child_lookup, tree.n_values)
            for s, child in enumerate(children):
                want = lookup[child] if child >= 0 else -1
                assert tuple(merged_pairs[packed.merged_lookup_base[t] + s]) == (child, want)
                merged_checked += 1
    assert checked > 0 and (merged_checked > 0) == (merged_growth > 0)


def test_a_single_model_is_the_packed_model_of_one_member():
    """One layout: a classifier's packed model is its one member's part of an ensemble's
    packing -- member e's arrays are pack_model's of that member, shifted into the
    concatenation -- and pack_model is pack_members of one member."""
    X, y = load_dataset("credit-a")
    ens = ESKDBClassifier(3, 3, "m", random_state=1).fit(X, y)
    whole = ens._prediction_plan.packed
    starts = {name: 0 for name in ("node", "cond", "slot", "logp", "dense", "merged", "mslot")}
    for e, member in enumerate(ens.members_):
        alone = member.pack()
        assert alone.tree_ptr.tolist() == [0, alone.child_col.size]
        lo, hi = whole.tree_ptr[e], whole.tree_ptr[e + 1]
        np.testing.assert_array_equal(whole.class_log_prior[e], alone.class_log_prior[0])
        for name in ("child_col", "n_values"):
            np.testing.assert_array_equal(getattr(whole, name)[lo:hi], getattr(alone, name))
        for name, start in (("node_offset", "node"), ("cond_ptr", "cond"),
                            ("lookup_base", "slot"), ("logp_offset", "logp")):
            np.testing.assert_array_equal(getattr(whole, name)[lo:hi],
                                          getattr(alone, name)[:-1 if name in ("node_offset",
                                                                              "cond_ptr")
                                                               else None] + starts[start])
        for name, start in (("dense_offset", "dense"), ("merged_node_offset", "merged")):
            own = getattr(alone, name)
            np.testing.assert_array_equal(getattr(whole, name)[lo:hi],
                                          np.where(own >= 0, own + starts[start], -1))
        np.testing.assert_array_equal(
            whole.merged_lookup_base[lo:hi],
            np.where(alone.merged_node_offset >= 0,
                     alone.merged_lookup_base + starts["mslot"], 0))
        for name, start in (("lookup_offsets", "node"), ("cond_cols", "cond"),
                            ("cond_cards", "cond"), ("log_prob", "logp"),
                            ("dense_log_prob", "dense"), ("merged_rows", None),
                            ("child_links", "slot"), ("merged_child_links", "mslot"),
                            ("merged_lookup_offsets", "merged")):
            own = getattr(alone, name)
            first = 0 if start is None else starts[start]
            width = 2 if name.endswith("links") else 1
            if name == "merged_rows":  # a row per merged node and class
                first = starts["merged"] * whole.class_log_prior.shape[1]
            np.testing.assert_array_equal(
                getattr(whole, name)[width * first:width * first + own.size], own, name)
        starts["node"] += int(alone.node_offset[-1])
        starts["cond"] += alone.cond_cols.size
        starts["slot"] += alone.child_links.size // 2
        starts["logp"] += alone.log_prob.size
        starts["dense"] += alone.dense_log_prob.size
        starts["merged"] += alone.merged_lookup_offsets.size
        starts["mslot"] += alone.merged_child_links.size // 2
    single = BayesNetClassifier("kdb", 2, "m", random_state=0).fit(X, y)
    alone = single.members_[0].pack()
    for name in alone._fields:
        np.testing.assert_array_equal(getattr(single._prediction_plan.packed, name),
                                      getattr(alone, name), name)
    with pytest.raises(ValueError, match="one member"):
        joint_log_likelihood(whole, single.transform_codes(X))


def test_merged_branches_are_no_larger_than_the_tree(data):
    """Every merged node but the root is some class's node on its path, and every block of
    slots one of such a node's: the tree's own sizes bound the merged ones; a merged node's
    row for a class is a row of the tree's table."""
    from fastpath.predict._inference import _merged_branches

    clf = BayesNetClassifier("kdb", k=3, m=1.0).fit(*data)
    for spec, tree in zip(clf.tree_specs_[1:], clf.trees_[1:], strict=True):
        if len(spec.conditioning) < 2:
            continue
        lookup, child, rows = _merged_branches(
            np.asarray(spec.cardinalities, np.int64), tree.lookup_offsets, tree.child_lookup,
            tree.n_values)
        assert lookup.size <= tree.n_nodes and child.size <= tree.child_lookup.size
        assert rows.size == lookup.size * spec.cardinalities[0]
        assert ((rows % tree.n_values == 0) & (rows < tree.n_nodes * tree.n_values)).all()
        assert ((child == -1) | ((child > 0) & (child < lookup.size))).all()


def _posterior_reference(joint):
    """posterior_from_joint as numpy's whole-array operations wrote it before 2026-11-26."""
    top = joint.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore"):
        p = np.exp(joint - top)
    total = p.sum(axis=1, keepdims=True)
    bad = ~(total > 0) | ~np.isfinite(total)
    return np.where(bad, 1.0 / joint.shape[1], p / np.where(bad, 1.0, total))


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_posterior_is_the_same_float_as_the_whole_array_formula(n_classes, n_rows, seed):
    rng = np.random.default_rng(seed)
    joint = rng.normal(scale=30.0, size=(n_rows, n_classes)) - 200.0
    joint[rng.random(joint.shape) < 0.15] = -np.inf
    np.testing.assert_array_equal(posterior_from_joint(joint), _posterior_reference(joint))


def _numpy_posterior(joint):
    """posterior_from_joint's former numpy code (the reference the kernels reproduce)."""
    top = joint[:, :1].copy()
    for c in range(1, joint.shape[1]):
        np.maximum(top, joint[:, c : c + 1], out=top)
    top[~np.isfinite(top)] = 0.0
    p = np.subtract(joint, top)
    with np.errstate(invalid="ignore"):
        np.exp(p, out=p)
    total = p.sum(axis=1, keepdims=True)
    bad = ~(total > 0) | ~np.isfinite(total)
    return np.where(bad, 1.0 / joint.shape[1], p / np.where(bad, 1.0, total))


@pytest.mark.parametrize("n_classes", [1, 2, 3, 7, 8, 9, 21, 150])
def test_the_posterior_is_numpys_log_sum_exp_bit_for_bit(n_classes):
    rng = np.random.default_rng(n_classes)
    joint = rng.normal(size=(5, 300, n_classes)) * 40.0 - 200.0
    joint[0, :7] = -np.inf  # a row without information: uniform
    joint[1, 3, 0] = np.inf
    joint[2, 5, -1] = np.nan
    got = posterior_from_joint(joint.reshape(-1, n_classes))
    want = _numpy_posterior(joint.reshape(-1, n_classes))
    np.testing.assert_array_equal(got, want)
    proba = got.reshape(joint.shape)
    total = proba[0]
    for e in range(1, len(proba)):
        total = total + proba[e]
    # the members' mean exponentiates with fastpath.utils._exp (within an ulp, as numpy's
    # exp): a few ulps apart after the normalisation and the mean; the same rows exactly
    # where they are uniform or certain
    mean = members_posterior_mean(joint)
    np.testing.assert_allclose(mean, total / len(proba), rtol=2e-15, atol=1e-300)
    exact = (total == 1.0 / n_classes * len(proba)) | (total == 0.0) | (total == len(proba))
    np.testing.assert_array_equal(mean[exact], (total / len(proba))[exact])


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("block_bytes", [1, None])
def test_the_members_posterior_by_blocks_is_the_mean_of_the_whole_joint_bit_for_bit(
        shifted, block_bytes, monkeypatch):
    """members_proba_of_codes (joint log-likelihoods a block of rows at a time, then their
    mean posterior) is members_posterior_mean of the whole joint (plus the class shift), bit
    for bit, in one block or several (blocks of ROW_BLOCK rows), unknown values included."""
    import fastpath.predict._inference as inference

    if block_bytes is not None:
        monkeypatch.setattr(inference, "FUSED_BLOCK_BYTES", block_bytes)

    X, y = load_dataset("credit-a")
    ens = ESKDBClassifier(3, 2, "m", random_state=0).fit(X, y)
    plan = ens._prediction_plan
    rng = np.random.default_rng(3)
    rows = X.iloc[rng.integers(0, len(X), 2 * inference.ROW_BLOCK + 45)].reset_index(drop=True)
    rows = rows.mask(rng.random(rows.shape) < 0.1)  # missing values: unknown codes
    codes, columns = code_members(plan.encoders, rows, plan.layout)
    assert (codes < 0).any()
    shift = np.log([0.3, 2.5]) if shifted else None
    rows_of_a_block = inference.fused_block_rows(len(rows), 3, 2, 1)
    assert (rows_of_a_block == inference.ROW_BLOCK) == (block_bytes is not None)
    joint = inference.packed_joint_log_likelihood(plan.packed, codes, columns)
    want = members_posterior_mean(joint if shift is None else joint + shift)
    got = inference.members_proba_of_codes(plan.packed, codes, columns, shift)
    np.testing.assert_array_equal(got, want)
    assert inference.members_proba_of_codes(plan.packed, codes[:0], columns).shape == (0, 2)
