"""Selective kDB: incremental leave-one-out scores against a brute-force refit per row."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.counts import CountAccumulator, TreeSpec
from fastpath.estimate import m_estimate_table
from fastpath.predict import joint_log_likelihood, pack_model, posterior_from_joint
from fastpath.structure import (
    SelectedStructure,
    loo_scores,
    sample_order,
    select_skdb,
    selective_structure,
)
from fastpath.structure import _graphs as structure_mod
from fastpath.structure._scores import mi_order, mutual_information_scores
from fastpath.structure._selective import _best, loo_sample_threshold


def _random_data(seed: int, n_rows: int, cards: tuple[int, ...], n_classes: int):
    """Correlated codes with rare values and a rare class (so nodes vanish when a row goes)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_rows)
    y[0] = n_classes - 1  # make sure the last class is rare but present
    y[y == n_classes - 1] = rng.integers(0, n_classes - 1, (y == n_classes - 1).sum())
    y[0] = n_classes - 1
    codes = np.empty((n_rows, len(cards)), dtype=np.int64)
    for j, c in enumerate(cards):
        noise = rng.integers(0, c, n_rows)
        base = (y + (codes[:, j - 1] if j else 0)) % c
        codes[:, j] = np.where(rng.random(n_rows) < 0.6, base, noise)
    codes[1, 0] = cards[0] - 1  # a value that may occur only once
    return codes, y


def _brute_force_rmse(codes, y, cards, n_classes, full, m):
    """Refit the m-estimate counts without each row, then predict that row (library pipeline).

    Returns the RMSE of every (n*, k*), shape (n, K + 1). Each (attribute, k*) table is
    refitted and queried on its own through the prediction kernel; the log-joint of (n*, k*)
    is the class prior plus the first n* attributes' log-probabilities.
    """
    n, max_k = len(cards), full.k
    prior_spec = TreeSpec(-1, (), n_classes, ())
    specs = {}
    for i in full.order:
        for k in range(max_k + 1):
            ps = full.branching_order(i)[:k]
            specs[i, k] = TreeSpec(i, (-1, *ps), cards[i], (n_classes, *(cards[p] for p in ps)))
    keys = list(specs)
    sq = np.zeros((n, max_k + 1))
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # one-row predictions: thread hand-offs would dominate
    try:
        for r in range(codes.shape[0]):
            _brute_force_row(codes, y, r, n_classes, full, m, prior_spec, specs, keys, sq)
    finally:
        numba.set_num_threads(threads)
    return np.sqrt(sq / codes.shape[0])


def _brute_force_row(codes, y, r, n_classes, full, m, prior_spec, specs, keys, sq):
    """Add row r's squared errors of every (n*, k*) to sq, refitting without row r."""
    keep = np.arange(codes.shape[0]) != r
    acc = CountAccumulator([prior_spec, *specs.values()]).update(codes[keep], y[keep])
    with np.errstate(divide="ignore"):
        log_prior = np.log(m_estimate_table(acc.tree(0), m)[0])
    logp = {}
    for t, key in enumerate(keys, start=1):
        tree = acc.tree(t)
        packed = pack_model(np.ones(n_classes), [specs[key]], [tree], [m_estimate_table(tree, m)])
        logp[key] = joint_log_likelihood(packed, codes[r : r + 1])[0]
    for k in range(full.k + 1):
        joint = log_prior.copy()
        for pos, i in enumerate(full.order):
            joint = joint + logp[i, k]
            proba = posterior_from_joint(joint[None, :])[0]
            sq[pos, k] += (1.0 - proba[y[r]]) ** 2


@pytest.mark.parametrize(
    ("seed", "n_rows", "cards", "n_classes", "k", "m"),
    [
        (0, 40, (3, 2, 4, 3, 2), 3, 3, 1.0),
        (1, 25, (2, 5, 3, 3), 2, 2, 0.2),
        (2, 30, (4, 3, 3, 2, 2, 3), 4, 4, 5.0),
    ],
)
def test_incremental_loo_equals_brute_force_refit(seed, n_rows, cards, n_classes, k, m):
    codes, y = _random_data(seed, n_rows, cards, n_classes)
    full = structure_mod.kdb(codes, y, cards, n_classes, k)
    fast = loo_scores(codes, y, cards, n_classes, full, m=m)
    assert fast.shape == (len(cards), k + 1)
    slow = _brute_force_rmse(codes, y, cards, n_classes, full, m)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_rows=st.integers(3, 18),
    n_classes=st.integers(2, 3),
    k=st.integers(0, 3),
)
def test_incremental_loo_property(seed, n_rows, n_classes, k):
    """Random small tables, including single-row classes and values (hypothesis)."""
    rng = np.random.default_rng(seed)
    cards = tuple(int(c) for c in rng.integers(1, 4, 4))
    codes = np.stack([rng.integers(0, c, n_rows) for c in cards], axis=1).astype(np.int64)
    y = rng.integers(0, n_classes, n_rows).astype(np.int64)
    full = structure_mod.kdb(codes, y, cards, n_classes, k)
    fast = loo_scores(codes, y, cards, n_classes, full, m=1.0)
    slow = _brute_force_rmse(codes, y, cards, n_classes, full, 1.0)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)


def test_scores_do_not_depend_on_threads():
    codes, y = _random_data(3, 200, (3, 3, 4, 2, 5), 3)
    full = structure_mod.kdb(codes, y, (3, 3, 4, 2, 5), 3, 3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = loo_scores(codes, y, (3, 3, 4, 2, 5), 3, full)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, loo_scores(codes, y, (3, 3, 4, 2, 5), 3, full))


def test_select_skdb_picks_the_argmin_with_ties_to_simpler():
    codes, y = _random_data(4, 120, (3, 2, 4, 3, 2, 3), 3)
    cards = (3, 2, 4, 3, 2, 3)
    sel = select_skdb(codes, y, cards, 3, 3)
    assert isinstance(sel, SelectedStructure)
    full = structure_mod.kdb(codes, y, cards, 3, 3)
    assert sel.full_structure == full
    scores = loo_scores(codes, y, cards, 3, full)
    np.testing.assert_array_equal(sel.rmse, scores)
    assert not sel.rmse.flags.writeable
    assert sel.rmse[sel.n_selected - 1, sel.k_selected] == scores.min()
    # every candidate with the same score is at least as complex
    for n_star, k_star in zip(*np.nonzero(scores == scores.min()), strict=True):
        assert (n_star + 1, k_star) >= (sel.n_selected, sel.k_selected)
    assert sel.attributes == full.order[: sel.n_selected]
    s = sel.structure
    assert s.kind == "kdb" and s.k == sel.k_selected
    for i in range(len(cards)):
        if i in sel.attributes:
            assert s.parents[i] == full.parents[i][: sel.k_selected]
            assert set(s.parents[i]) <= set(sel.attributes)
        else:
            assert s.parents[i] == ()
    assert "n*=" in repr(sel)


def test_best_breaks_ties_to_fewer_attributes_then_smaller_k():
    r = np.array([[0.5, 0.4, 0.4], [0.4, 0.3, 0.3], [0.3, 0.3, 0.4]])
    assert _best(r) == (2, 1)
    assert _best(np.full((3, 2), 0.2)) == (1, 0)


def test_selection_prefers_informative_attributes():
    """Noise attributes ranked last by MI are dropped; a pairwise (XOR) class needs k* >= 1."""
    rng = np.random.default_rng(7)
    n = 600
    a = rng.integers(0, 2, n)
    b = rng.integers(0, 2, n)
    y = a ^ b
    # a, b alone carry no MI with y; a noisy copy of y makes a third attribute informative
    c = np.where(rng.random(n) < 0.75, y, 1 - y)
    noise = rng.integers(0, 3, (n, 3))
    codes = np.column_stack([a, b, c, noise]).astype(np.int64)
    cards = (2, 2, 2, 3, 3, 3)
    sel = select_skdb(codes, y, cards, 2, 2)
    assert sel.k_selected >= 1
    assert {0, 1} <= set(sel.attributes)
    assert sel.rmse.min() < 0.1


def test_selective_structure_validates():
    codes, y = _random_data(5, 50, (3, 2, 4), 2)
    full = structure_mod.kdb(codes, y, (3, 2, 4), 2, 2)
    with pytest.raises(ValueError, match="n_selected"):
        selective_structure(full, 0, 1)
    with pytest.raises(ValueError, match="k_selected"):
        selective_structure(full, 2, 3)
    assert selective_structure(full, 3, 2) == full


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"m": 0.0}, "m must be a positive"),
        ({"m": "auto"}, "m must be a positive"),
        ({"k": -1}, "k must be"),
    ],
)
def test_select_skdb_rejects_bad_parameters(kwargs, match):
    codes, y = _random_data(6, 30, (3, 2), 2)
    args = {"k": 2, **kwargs}
    k = args.pop("k")
    with pytest.raises(ValueError, match=match):
        select_skdb(codes, y, (3, 2), 2, k, **args)


def test_select_skdb_rejects_bad_data():
    codes, y = _random_data(6, 30, (3, 2), 2)
    with pytest.raises(ValueError, match="at least 2 rows"):
        select_skdb(codes[:1], y[:1], (3, 2), 2, 1)
    with pytest.raises(ValueError, match="non-negative"):
        bad = codes.copy()
        bad[0, 0] = -1
        select_skdb(bad, y, (3, 2), 2, 1)
    with pytest.raises(TypeError, match="integer codes"):
        select_skdb(codes.astype(float), y, (3, 2), 2, 1)
    with pytest.raises(ValueError, match="cardinalities"):
        select_skdb(codes, y, (3,), 2, 1)
    original = codes.copy()
    select_skdb(codes, y, (3, 2), 2, 1)
    assert np.array_equal(codes, original)  # callers' data is not mutated


# ---------------------------------------------------------------- ESKDB: a given order
# Zhang, Petitjean & Buntine (KAIS 2020): each member runs SkDB over the prefixes of an order
# sampled in proportion to I(X_j; Y) instead of the MI order.
def _same_selection(a: SelectedStructure, b: SelectedStructure) -> bool:
    return (
        a.full_structure == b.full_structure
        and a.structure == b.structure
        and a.attributes == b.attributes
        and a.n_selected == b.n_selected
        and a.k_selected == b.k_selected
        and (a.max_k, a.m) == (b.max_k, b.m)
        and np.array_equal(a.rmse, b.rmse)
    )


def test_select_skdb_with_the_mi_order_equals_the_default():
    cards = (3, 2, 4, 3, 2, 3)
    codes, y = _random_data(4, 120, cards, 3)
    mi, _ = mutual_information_scores(codes, y, cards, 3)
    default = select_skdb(codes, y, cards, 3, 3)
    assert _same_selection(select_skdb(codes, y, cards, 3, 3, order=mi_order(mi)), default)
    assert _same_selection(select_skdb(codes, y, cards, 3, 3, order=None), default)


@pytest.mark.parametrize("seed", range(3))
def test_select_skdb_with_a_sampled_order_selects_a_prefix_of_it(seed):
    cards = (3, 2, 4, 3, 2, 3)
    codes, y = _random_data(20 + seed, 120, cards, 3)
    mi, _ = mutual_information_scores(codes, y, cards, 3)
    order = sample_order(mi, seed)
    if order == mi_order(mi):
        order = order[::-1]  # make sure the order differs from the default
    sel = select_skdb(codes, y, cards, 3, 2, order=order)
    full = structure_mod.kdb(codes, y, cards, 3, 2, order)
    assert sel.full_structure == full and full.order == order
    np.testing.assert_array_equal(sel.rmse, loo_scores(codes, y, cards, 3, full))
    assert sel.attributes == order[: sel.n_selected]
    assert sel.structure.order == order
    for i in range(len(cards)):
        if i in sel.attributes:
            assert sel.structure.parents[i] == full.parents[i][: sel.k_selected]
            assert set(sel.structure.parents[i]) <= set(sel.attributes)
        else:
            assert sel.structure.parents[i] == ()
    # the order survives a model file's round trip
    again = SelectedStructure.from_dict(sel.to_dict())
    assert _same_selection(again, sel)


def test_incremental_loo_in_a_given_order_equals_brute_force_refit():
    """The kernel's prefixes follow the structure's order, not the MI ranking."""
    cards = (3, 2, 4, 3, 2)
    codes, y = _random_data(0, 40, cards, 3)
    mi, _ = mutual_information_scores(codes, y, cards, 3)
    order = mi_order(mi)[::-1]
    full = structure_mod.kdb(codes, y, cards, 3, 2, order)
    fast = loo_scores(codes, y, cards, 3, full)
    slow = _brute_force_rmse(codes, y, cards, 3, full, 1.0)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)


def test_select_skdb_rejects_a_bad_order():
    codes, y = _random_data(6, 30, (3, 2), 2)
    with pytest.raises(ValueError, match="order must be a permutation"):
        select_skdb(codes, y, (3, 2), 2, 1, order=[0, 0])
    with pytest.raises(ValueError, match="order must list all 2 attributes"):
        select_skdb(codes, y, (3, 2), 2, 1, order=[1])


# ---------------------------------------------------------------------- loo_m_scores (m="auto")
def _brute_force_model_rmse(codes, y, specs, m, backoff):
    """RMSE of the whole model when each row is predicted by tables refitted without it."""
    n_classes = specs[0].n_values
    sq = 0.0
    for r in range(codes.shape[0]):
        keep = np.arange(codes.shape[0]) != r
        acc = CountAccumulator(specs).update(codes[keep], y[keep])
        trees = [acc.tree(t) for t in range(len(specs))]
        tables = [m_estimate_table(t, m, backoff) for t in trees]
        packed = pack_model(tables[0][0], specs[1:], trees[1:], tables[1:])
        proba = posterior_from_joint(joint_log_likelihood(packed, codes[r : r + 1]))[0]
        assert proba.shape == (n_classes,)
        sq += (1.0 - proba[y[r]]) ** 2
    return float(np.sqrt(sq / codes.shape[0]))


@pytest.mark.parametrize("backoff", ["path", "value"])
@pytest.mark.parametrize("kind", ["nb", "tan", "kdb2"])
def test_loo_m_scores_equal_brute_force_refits(kind, backoff):
    from fastpath.estimate._m_choice import loo_m_scores
    from fastpath.structure import tree_specs

    cards, n_classes = (3, 2, 4, 3, 2), 3
    codes, y = _random_data(3, 35, cards, n_classes)
    mi, cmi = mutual_information_scores(codes, y, cards, n_classes)
    if kind == "nb":
        structure = structure_mod.naive_bayes(len(cards))
    elif kind == "tan":
        structure = structure_mod.tan_from_scores(mi, cmi)
    else:
        structure = structure_mod.kdb_from_scores(mi, cmi, 2)
    specs = tree_specs(structure, cards, n_classes, range(len(cards)))
    acc = CountAccumulator(specs).update(codes, y)
    trees = [acc.tree(t) for t in range(1, len(specs))]
    grid = (0.05, 1.0, 20.0)
    scores = loo_m_scores(specs[1:], trees, acc.tree(0).counts[0], codes, y, grid,
                          backoff=backoff)
    assert list(scores) == list(grid)
    for m in grid:
        assert scores[m] == pytest.approx(
            _brute_force_model_rmse(codes, y, specs, m, backoff), rel=1e-10, abs=1e-12
        )


def _both_row_kernels(codes, y, specs, n_classes, m, value_backoff):
    """Per row of ``codes``: the selection kernel's scores after the last attribute, its
    (n* = n, k* = K) error and the whole-model kernel's error, for the kDB trees ``specs``."""
    from fastpath.structure._selective import (
        full_depth,
        loo_model,
        loo_row_errors,
        loo_row_model_error,
        loo_row_scratch,
        loo_settings,
    )

    acc = CountAccumulator(specs).update(codes, y)
    model = loo_model(specs[1:], [acc.tree(t) for t in range(1, len(specs))],
                      acc.tree(0).counts[0])
    max_k = full_depth(specs[1:])
    cum, class_prob, nodes = loo_row_scratch(n_classes, max_k)
    prob = np.empty(max_k + 2)
    out = np.empty((len(specs) - 1, max_k + 1))
    cum1 = np.empty(n_classes)
    settings = loo_settings(m, value_backoff, max_k, codes.shape[0])
    for r in range(codes.shape[0]):
        loo_row_errors(codes, y, r, model, settings, cum, class_prob, nodes, out)
        yield cum[max_k], out[-1, max_k], loo_row_model_error(codes, y, r, model, settings,
                                                              cum1, prob)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["nb", "tan", "kdb2", "kdb3"]),
       value_backoff=st.booleans(), m=st.sampled_from([0.05, 1.0, 20.0]))
def test_whole_model_row_error_is_the_full_kernels_last_entry(seed, kind, value_backoff, m):
    """The m choice's kernel (whole model only) adds exactly the numbers the selection kernel
    computes for (n* = n, k* = K): the same float, row by row, for any structure and back-off."""
    from fastpath.structure import tree_specs

    cards, n_classes = (3, 2, 4, 3, 2), 3
    codes, y = _random_data(seed, 30, cards, n_classes)
    mi, cmi = mutual_information_scores(codes, y, cards, n_classes)
    structure = (structure_mod.naive_bayes(len(cards)) if kind == "nb"
                 else structure_mod.tan_from_scores(mi, cmi) if kind == "tan"
                 else structure_mod.kdb_from_scores(mi, cmi, int(kind[3:])))
    specs = tree_specs(structure, cards, n_classes, range(len(cards)))
    for _, full, whole in _both_row_kernels(codes, y, specs, n_classes, m, value_backoff):
        assert whole == full


def test_whole_model_row_error_is_the_full_kernels_last_entry_after_rescaling():
    """With 80 to 139 attributes of 10 values each the class scores' sum falls below
    RESCALE_BELOW, at some attribute count on the last attribute itself: the two kernels
    still give the same float (the whole-model kernel reads the rescaled scores' sum as 1)."""
    from fastpath.structure import tree_specs
    from fastpath.structure._selective import RESCALE_BELOW

    n_classes = 3
    codes_all, y = _random_data(7, 40, (10,) * 139, n_classes)
    rescaled_last = 0
    for n in range(80, 140):
        codes = np.ascontiguousarray(codes_all[:, :n])
        specs = tree_specs(structure_mod.naive_bayes(n), (10,) * n, n_classes, range(n))
        for scores, full, whole in _both_row_kernels(codes, y, specs, n_classes, 0.05, False):
            # the scores sum to 1 after the last attribute only if it rescaled them
            rescaled_last += bool(scores.sum() == pytest.approx(1.0, rel=1e-9))
            assert whole == full
    assert RESCALE_BELOW == 1e-100 and rescaled_last > 0


# ====================================================================== sampled selection
def test_sampled_loo_scores_are_the_rmse_over_the_picked_rows():
    """loo_scores(max_rows=S) = sqrt(mean over the S picked rows of each row's squared
    leave-one-out error), the errors taken with every row's counts."""
    from fastpath.scale._kernels import loo_errors
    from fastpath.structure._selective import loo_model, loo_sample_mask, loo_settings
    from fastpath.structure._specs import tree_specs
    from fastpath.utils._rows import picked_rows

    rng = np.random.default_rng(3)
    n, cards, n_classes = 600, [3, 4, 2, 5, 3], 3
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1).astype(np.int64)
    y = ((codes[:, 0] + codes[:, 1] + rng.integers(0, 2, n)) % n_classes).astype(np.int64)
    full = structure_mod.kdb(codes, y, cards, n_classes, 2)
    specs = tree_specs(full, cards, n_classes, full.order)[1:]
    acc = CountAccumulator(specs).update(codes, y)
    model = loo_model(specs, [acc.tree(t) for t in range(len(specs))],
                      np.bincount(y, minlength=n_classes))
    errors = np.empty((n, len(specs), full.k + 1))
    loo_errors(codes, y, model, loo_settings(1.0, False, full.k, n), 0, n,
               np.empty(0, np.uint8), errors)
    picked = picked_rows(n, 150, 77)
    expected = np.sqrt(errors[picked].mean(axis=0))
    got = loo_scores(codes, y, cards, n_classes, full, max_rows=150, sample_key=77)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # exactly max_rows rows, the same ones chunk by chunk
    threshold = loo_sample_threshold(n, 150, 77)
    whole = loo_sample_mask(0, n, threshold, 77)
    assert whole.sum() == 150
    np.testing.assert_array_equal(np.flatnonzero(whole), picked)
    parts = [loo_sample_mask(s, min(97, n - s), threshold, 77) for s in range(0, n, 97)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    # every row, for max_rows None or at least n
    np.testing.assert_array_equal(loo_scores(codes, y, cards, n_classes, full, max_rows=n),
                                  loo_scores(codes, y, cards, n_classes, full))
    assert loo_sample_threshold(n, None, 77) is None
