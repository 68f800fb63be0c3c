"""The sampler's steps (:mod:`fastpath.estimate.hdp._kernels`) one at a time, against the paper.

* The log joint (eq. 11) against the same sum written out with exact Stirling numbers (eq. 7)
  from big integers, both root treatments.
* A table-count update's candidates and weights, in the ratio tables and in log space, against
  eq. (11) evaluated at every value of ``t[j, k]`` with the parent's counts moved (eq. 10):
  the feasible range is where that joint is positive, and the normalised weights are its
  conditional.
* The randomly shifted cells: a partition of the range that does not depend on ``t`` given the
  shift, and the draw: an inverse cdf, whose overrelaxed version mirrors a symmetric conditional.
* The product-of-uniforms draw of ``-log q_j``, ``q_j ~ Beta(alpha, N_j)``, with its products
  folded into the rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.counts import ContextTree
from fastpath.estimate.hdp import HDPOptions
from fastpath.estimate.hdp import _api as hdp
from fastpath.estimate.hdp import _kernels as S
from fastpath.utils._seeds import seed_states


def _stirling_rows(n_max: int) -> list[list[int]]:
    """Unsigned Stirling numbers of the first kind, S(n + 1, t) = n S(n, t) + S(n, t - 1)."""
    rows = [[1]]
    for m in range(n_max):
        prev = rows[-1]
        rows.append([(m * prev[t] if t <= m else 0) + (prev[t - 1] if t >= 1 else 0)
                     for t in range(m + 2)])
    return rows


_S = _stirling_rows(120)


def _log_s(n: int, t: int) -> float:
    s = _S[n][t] if t <= n else 0
    return math.log(s) if s > 0 else -math.inf


def _eq11(group, n, t, alpha, alpha0, root, shape0=0.0, rate0=0.0):
    """log P(data, t, alpha), eq. (11): the root's factor (exact treatment: its Dirichlet
    integral; reference: a node of concentration alpha0 over 1/K), then every other node's
    alpha^T / (alpha)_(N) prod_k S(n_k, t_k), then the concentrations' Gamma prior."""
    K = n.shape[1]
    n0 = [int(x) for x in n[0]]
    if root == S.ROOT_EXACT:
        out = math.lgamma(alpha0) - math.lgamma(sum(n0) + alpha0)
        out += sum(math.lgamma(x + alpha0 / K) - math.lgamma(alpha0 / K) for x in n0 if x > 0)
    else:
        out = int(t[0].sum()) * math.log(alpha0 / K)
        out -= math.lgamma(alpha0 + sum(n0)) - math.lgamma(alpha0)
        out += sum(_log_s(x, int(y)) for x, y in zip(n0, t[0], strict=True))
    for j in range(1, n.shape[0]):
        a = alpha[group[j]]
        out += int(t[j].sum()) * math.log(a) + math.lgamma(a) - math.lgamma(a + int(n[j].sum()))
        out += sum(_log_s(int(n[j, k]), int(t[j, k])) for k in range(K))
    if shape0 > 0.0 and rate0 > 0.0:
        out += sum(shape0 * math.log(rate0) - math.lgamma(shape0)
                   + (shape0 - 1.0) * math.log(a) - rate0 * a for a in alpha)
    return out


def _stream(key: int) -> np.ndarray:
    return seed_states(11, np.asarray([[key]], dtype=np.int64))[0]


def _chain(root: str):
    """A small tree's records after 20 iterations (concentrations sampled: distinct per level),
    with ratio tables that cover every count it can reach."""
    rng = np.random.default_rng(5)
    paths = rng.integers(0, 2, size=(8, 2))
    counts = rng.integers(0, 12, size=(8, 3))
    tree = ContextTree.from_leaf_counts(paths, counts, [2, 2])
    opt = HDPOptions(root=root, window=2, n_iter=40, concentration_every=1)
    prep = hdp._prepare(0, tree, opt)
    table = hdp.LogStirlingTable()
    table.ensure(int(tree.counts.max()) + 2)
    model = hdp._tree_model(prep, table.kernel_args, hdp._ratio_tables(table, 120))
    cfg = hdp._config(opt, prep)
    seeds = np.stack([_stream(0), _stream(1)])
    state, _, _, scratch = hdp._init_chain(prep, model, cfg, seeds, it_stop=21)
    assert len(set(state.alpha.tolist())) == state.alpha.size > 1
    return model, cfg, state, scratch


@pytest.mark.parametrize("root", ["exact", "reference"])
def test_log_joint_is_eq11(root):
    model, cfg, state, scratch = _chain(root)
    want = _eq11(model.group, state.n, state.t, state.alpha, cfg.alpha0, cfg.root,
                 cfg.shape0, cfg.rate0)
    assert S.log_joint(model, cfg, state, scratch) == pytest.approx(want, rel=1e-12)
    # a Scratch without its work arrays: the same number
    bare = S.Scratch(*scratch[:7])
    assert S.log_joint(model, cfg, state, bare) == S.log_joint(model, cfg, state, scratch)


@pytest.mark.parametrize("root", ["exact", "reference"])
def test_table_count_weights_are_the_conditional_of_eq11(root):
    model, cfg, state, _ = _chain(root)
    n, t, alpha, group, parent = state.n, state.t, state.alpha, model.group, model.parent
    r2_order = S.ratio_table_order(model.r2.shape[0])
    a0k = cfg.alpha0 / n.shape[1]
    buf = np.zeros(200)
    none = np.zeros(0, np.int64), np.zeros((0, S.BAND))
    checked = 0
    tol = {"rtol": 1e-9, "atol": 1e-14}  # differences of cumulative sums
    for j, k in zip(model.pair_node, model.pair_value, strict=True):
        nj, p, told = int(n[j, k]), int(parent[j]), int(t[j, k])
        if nj < 2:
            continue
        generic = p != 0 or cfg.root == S.ROOT_REFERENCE
        m_rest, big_rest, tpk = int(n[p, k]) - told, int(state.N[p]) - told, int(t[p, k])
        aj = alpha[group[j]]
        ap = cfg.alpha0 if p == 0 else alpha[group[p]]
        # eq. (11) at every t in 1..n_j, the parent's n[p, k] and N[p] moved with it (eq. 10)
        logp = []
        for cand in range(1, nj + 1):
            n2, t2 = n.copy(), t.copy()
            t2[j, k] = cand
            n2[p, k] += cand - told
            logp.append(_eq11(group, n2, t2, alpha, cfg.alpha0, cfg.root))
        logp = np.array(logp)
        lo, hi = S.feasible_range(nj, m_rest, tpk, generic)
        np.testing.assert_array_equal(np.flatnonzero(np.isfinite(logp)) + 1,
                                      np.arange(lo, hi + 1))
        want = np.exp(logp[lo - 1:hi] - logp[lo - 1:hi].max())
        want /= want.sum()
        m = hi - lo + 1
        tot = S.ratio_weights(buf, lo, m, nj, m_rest, big_rest, tpk, aj, ap, generic, a0k,
                              model.r1, model.r2, r2_order)
        np.testing.assert_allclose(np.diff(buf[:m], prepend=0.0) / tot, want, **tol)
        tot = S.log_weights(buf, lo, hi, nj, -1, generic, m_rest, big_rest, tpk, aj, ap,
                            cfg.alpha0, a0k, *none, model.stir)
        np.testing.assert_allclose(np.diff(buf[:m], prepend=0.0) / tot, want, **tol)
        checked += 1
    assert checked >= 10


@settings(max_examples=40, deadline=None)
@given(lo=st.integers(1, 30), size=st.integers(1, 60), width=st.integers(1, 9),
       pos=st.floats(0.0, 1.0), key=st.integers(0, 10**6))
def test_random_cells_partition_the_range_whatever_t(lo, size, width, pos, key):
    # given the shift u (the stream's next uniform) the cells are a partition of [lo, hi] that
    # does not depend on t: every value of a cell gets the same cell (an exact Gibbs step on
    # the pair (t, u))
    hi = lo + size - 1
    told = lo + int(pos * (size - 1))
    rng = _stream(key)
    a, b = S.random_cell(lo, hi, told, width, rng.copy())
    assert lo <= a <= told <= b <= hi
    assert b - a + 1 <= width if size > width else (a, b) == (lo, hi)
    for other in range(a, b + 1):
        assert S.random_cell(lo, hi, other, width, rng.copy()) == (a, b)


def test_draw_is_the_inverse_cdf_and_overrelaxation_mirrors_a_symmetric_conditional():
    w = np.array([1.0, 3.0, 0.5, 2.0, 0.5, 3.0, 1.0])  # palindromic
    buf = np.cumsum(w)
    m = w.size
    for key in range(20):
        rng = _stream(key)
        u = S.uniform(rng.copy()) * buf[-1]
        i = S.draw_candidate(buf, m, key % m, buf[-1], 0.0, rng.copy())
        assert (i == 0 or buf[i - 1] <= u) and u < buf[i]
        # reflected: the point v of the current value's interval goes to tot - v, in the
        # mirrored interval
        c = key % m
        assert S.draw_candidate(buf, m, c, buf[-1], 1.0, rng.copy()) == m - 1 - c


def test_uniform_products_fold_into_the_rate():
    # q = prod_{i < b} U_i^(1 / (a + i)) ~ Beta(a, b): after many nodes of one group the rate
    # holds sum over the nodes of -log q, whether or not the running products were folded in
    # early (they underflow past 1e-250 after ~600 uniforms)
    a, b, nodes = 0.7, S.SMALL_SHAPE, 800
    rng = _stream(3)
    us = rng.copy()
    want = 0.0
    for _ in range(nodes):
        for i in range(b):
            want -= math.log(S.uniform(us)) / (a + i)
    rt = np.zeros(1)
    prod_u = np.ones((1, S.SMALL_SHAPE))
    for _ in range(nodes):
        S.add_neg_log_q_uniforms(0, b, a, rt, prod_u, rng)
    S.fold_products(0, a, S.SMALL_SHAPE, rt, np.ones(1), prod_u)
    np.testing.assert_array_equal(rng, us)  # b uniforms per node, no more
    assert rt[0] == pytest.approx(want, rel=1e-12)
