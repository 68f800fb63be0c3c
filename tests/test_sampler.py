"""The HDP Gibbs sampler against exact answers.

* Fixed concentrations, tiny trees: every configuration of table counts is enumerated (pure Python,
  exact Stirling numbers from big integers) and the exact posterior mean of every node's
  Rao-Blackwellised estimate is compared with the sampler's, within 4 Monte-Carlo standard errors
  (batch means over chains), for both root treatments and for the two code paths of the exact
  update (full conditional; randomly shifted cells) and of the weights (ratio tables; log space).
* Free concentrations: the worked example's posterior means (estimates and alpha) against
  enumeration over t times quadrature over alpha.
* The paper's worked example with the reference settings (window update, reference root).
* Invariants after sweeps (hypothesis) and random-variate checks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from fastpath.counts import ContextTree, tying_groups
from fastpath.estimate.hdp import HDPOptions, estimate_tree
from fastpath.estimate.hdp import _api as hdp
from fastpath.estimate.hdp import _kernels as S
from fastpath.utils._seeds import seed_states


def _stream(entropy: int, key: tuple[int, ...]) -> np.ndarray:
    """A xoshiro256** state for a kernel called directly: ``SeedSequence(entropy,
    spawn_key=key)``'s first four words, as the sampler seeds its streams."""
    state = seed_states(entropy, np.asarray([key], dtype=np.int64))[0]
    assert state.any()  # xoshiro's forbidden all-zero state (the sampler replaces it)
    return state


# ---------------------------------------------------------------------------- exact enumeration


def _stirling_rows(n_max: int) -> list[list[int]]:
    rows = [[1]]
    for m in range(n_max):
        prev = rows[-1]
        row = [0] * (m + 2)
        for t in range(1, m + 2):
            row[t] = (m * prev[t] if t <= m else 0) + prev[t - 1]
        rows.append(row)
    return rows


_S = _stirling_rows(80)


def _ls(n: int, t: int) -> float:
    return math.log(_S[n][t])


def _root_log_factor(n_root, alpha0, root):
    K = len(n_root)
    big_n = sum(n_root)
    if root == "exact":
        out = math.lgamma(alpha0) - math.lgamma(big_n + alpha0)
        for x in n_root:
            if x > 0:
                out += math.lgamma(x + alpha0 / K) - math.lgamma(alpha0 / K)
        return out
    t_root = [min(1, x) for x in n_root]
    out = sum(t_root) * math.log(alpha0 / K) - (math.lgamma(alpha0 + big_n) - math.lgamma(alpha0))
    return out + sum(_ls(x, y) for x, y in zip(n_root, t_root, strict=True))


def enumerate_posterior(tree: ContextTree, node_alpha, alpha0: float, root: str):
    """Exact posterior E[phi] (= E[RB estimate]) and E[phi^2] of every node given fixed
    concentrations (alpha per node).

    Every configuration of the table counts is visited: the leaves' t are free in [1, n]; an
    internal node's n is the sum of its children's t and its own t ranges over [1, n].
    Returns (E[phi] (n_nodes, K), number of configurations, E[phi^2] (n_nodes, K)).
    """
    nn, K = tree.n_nodes, tree.n_values
    parent = tree.parent
    leaf0 = int(tree.level_offsets[-2])
    children = [list(range(tree.child_offsets[i], tree.child_offsets[i + 1])) for i in range(nn)]
    order = list(range(nn - 1, 0, -1))  # children before parents
    n = np.zeros((nn, K), dtype=np.int64)
    t = np.zeros((nn, K), dtype=np.int64)
    acc = np.zeros((2, nn, K))
    total = [0.0, 0]
    logs = []

    def rb(nv):
        # E[phi | t] (the RB estimate) and E[phi^2 | t], top-down through
        # phi_j | phi_p, t ~ Dirichlet(n_j + alpha_j phi_p)
        p = np.zeros((nn, K))
        p2 = np.zeros((nn, K))
        a = nv[0] + alpha0 / K
        big_a = nv[0].sum() + alpha0
        p[0] = a / big_a
        p2[0] = a * (a + 1) / (big_a * (big_a + 1))
        for j in range(1, nn):
            al = node_alpha[j]
            n_j = nv[j]
            big_a = n_j.sum() + al
            p[j] = (n_j + al * p[parent[j]]) / big_a
            p2[j] = (n_j * (n_j + 1) + al * (2 * n_j + 1) * p[parent[j]]
                     + al * al * p2[parent[j]]) / (big_a * (big_a + 1))
        return np.stack([p, p2])

    def logw():
        out = _root_log_factor([int(x) for x in n[0]], alpha0, root)
        for j in range(1, nn):
            a = node_alpha[j]
            big_n, big_t = int(n[j].sum()), int(t[j].sum())
            out += big_t * math.log(a) - (math.lgamma(a + big_n) - math.lgamma(a))
            out += sum(_ls(int(n[j, k]), int(t[j, k])) for k in range(K))
        return out

    def rec(pos):
        if pos == len(order):
            n[0] = sum(t[c] for c in children[0])
            logs.append((logw(), rb(n.copy())))
            return
        j = order[pos]
        if j >= leaf0:
            n[j] = tree.counts[j]
        else:
            n[j] = sum(t[c] for c in children[j])
        ranges = [range(1, int(x) + 1) if x > 0 else range(0, 1) for x in n[j]]
        for combo in itertools.product(*ranges):
            t[j] = combo
            rec(pos + 1)

    rec(0)
    mx = max(lw for lw, _ in logs)
    for lw, p in logs:
        w = math.exp(lw - mx)
        acc += w * p
        total[0] += w
        total[1] += 1
    acc /= total[0]
    return acc[0], total[1], acc[1]


def _small_tree():
    # depth 2, K = 2: root -> y in {0, 1} -> x in {0, 1}; leaf counts kept small
    paths = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    counts = np.array([[3, 1], [2, 2], [5, 0], [1, 4]])
    return ContextTree.from_leaf_counts(paths, counts, [2, 2])


def _node_alpha(tree, tying, group_values):
    groups = tying_groups(tree, tying)
    return [0.0] + [group_values[g] for g in groups[1:]]


# the tests that read the enumeration below run in one worker, which computes it once
_ENUMERATION = pytest.mark.xdist_group("sampler-enumeration")


@pytest.fixture(scope="module")
def small_exact():
    tree = _small_tree()
    values = (1.3, 3.0)  # level tying: depth 1, depth 2
    alpha = _node_alpha(tree, "level", values)
    out = {}
    for root in ("exact", "reference"):
        out[root] = enumerate_posterior(tree, alpha, 2.0, root)
    return tree, values, out


def _check_close(res, exact, n_mcse=4.0):
    diff = np.abs(res.probabilities - exact)
    tol = n_mcse * res.mcse + 1e-9
    bad = np.argwhere(diff > tol)
    assert bad.size == 0, (
        f"sampler vs exact at {bad.tolist()}: diff {diff[diff > tol]}, mcse {res.mcse[diff > tol]}"
    )
    # the MCSE must be a real error bar, not a degenerate zero
    assert res.mcse[1:].max() > 0


@_ENUMERATION
@pytest.mark.parametrize("overrelax", [False, True], ids=["gibbs", "overrelaxed"])
@pytest.mark.parametrize("root", ["exact", "reference"])
@pytest.mark.parametrize("window", [10, 1], ids=["full-conditional", "shifted-cells"])
def test_exact_update_matches_enumeration(small_exact, root, window, overrelax):
    tree, values, exact = small_exact
    mean, n_conf, _ = exact[root]
    assert n_conf > 1000  # the enumeration really covers many configurations
    opt = HDPOptions.preset(
        "paper", n_iter=30000, burn_in=1000, update="exact", root=root, window=window,
        fix_concentrations=True, concentration_init=values, n_chains=4, overrelax=overrelax,
    )
    res = estimate_tree(tree, opt, seed=11)
    _check_close(res, mean)


@_ENUMERATION
def test_posterior_draws_match_enumeration(small_exact):
    # thinned Dirichlet draws given (t, alpha): their first two moments against enumeration
    tree, values, exact = small_exact
    mean, _, second = exact["exact"]
    opt = HDPOptions.preset(
        "paper", n_iter=30000, burn_in=1000, fix_concentrations=True, concentration_init=values,
        n_chains=4, thin=5, record_draws=True,
    )
    res = estimate_tree(tree, opt, seed=14)
    d = res.draws  # (chains, draws, nodes, K)
    for moment, want in ((d, mean), (d * d, second)):
        bm = moment.reshape(4, 20, -1, tree.n_nodes, tree.n_values).mean(axis=2)
        bm = bm.reshape(80, tree.n_nodes, tree.n_values)
        se = bm.std(axis=0, ddof=1) / math.sqrt(80)
        z = np.abs(bm.mean(axis=0) - want) / se
        assert z.max() < 4.5, z.max()


@_ENUMERATION
@pytest.mark.parametrize("overrelax", [False, True], ids=["gibbs", "overrelaxed"])
def test_log_space_and_band_paths_match_enumeration(small_exact, monkeypatch, overrelax):
    # Shrink the ratio tables so that every update goes through the log-space path (and the
    # leaves with count > 3 through the band cache of log S values).
    tree, values, exact = small_exact
    monkeypatch.setattr(hdp, "RATIO_N_MAX", 3)
    monkeypatch.setattr(hdp, "_RATIOS", type(hdp._RATIOS)())
    opt = HDPOptions.preset(
        "paper", n_iter=30000, burn_in=1000, root="exact", window=1,
        fix_concentrations=True, concentration_init=values, n_chains=4, overrelax=overrelax,
    )
    res = estimate_tree(tree, opt, seed=12, stirling=hdp.LogStirlingTable())
    _check_close(res, exact["exact"][0])


@_ENUMERATION
def test_window_update_is_biased_on_a_tight_window(small_exact):
    # The reference's window moves with the current value: with +-1 it is visibly not a Gibbs
    # step (this is the power check of the enumeration test above).
    tree, values, exact = small_exact
    opt = HDPOptions.preset(
        "paper", n_iter=30000, burn_in=1000, update="window", root="exact", window=1,
        fix_concentrations=True, concentration_init=values, n_chains=4,
    )
    res = estimate_tree(tree, opt, seed=13)
    z = np.abs(res.probabilities - exact["exact"][0]) / np.maximum(res.mcse, 1e-12)
    assert z.max() > 6


# ---------------------------------------------------------------------------- free concentrations


def _worked_tree(c0, c1):
    return ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([c0, c1]), [2])


def quadrature_posterior(leaves, root, alpha0=2.0, shape=2.0, rate=1.0):
    """E[p_leaf] and E[alpha] for a one-level tree with one tied concentration (Gamma prior):
    enumeration of the table counts, quadrature over log alpha."""
    K = len(leaves[0])
    la = np.linspace(math.log(1e-6), math.log(4000.0), 40001)
    a = np.exp(la)
    from scipy.special import gammaln

    logprior = shape * math.log(rate) - math.lgamma(shape) + (shape - 1) * la - rate * a + la
    ranges = [range(1, n + 1) if n > 0 else range(0, 1) for c in leaves for n in c]
    num = np.zeros((len(leaves), K))
    num_alpha = 0.0
    den = 0.0
    for ts in itertools.product(*ranges):
        tt = np.array(ts).reshape(len(leaves), K)
        n_root = tt.sum(axis=0)
        lw = _root_log_factor([int(x) for x in n_root], alpha0, root) + logprior
        for j, c in enumerate(leaves):
            big_n = sum(c)
            lw = lw + tt[j].sum() * la - (gammaln(a + big_n) - gammaln(a))
            lw = lw + sum(_ls(c[k], int(tt[j, k])) for k in range(K))
        w = np.exp(lw)
        p_root = (n_root + alpha0 / K) / (n_root.sum() + alpha0)
        den += np.trapezoid(w, la)
        num_alpha += np.trapezoid(w * a, la)
        for j, c in enumerate(leaves):
            for k in range(K):
                num[j, k] += np.trapezoid(w * (c[k] + a * p_root[k]) / (sum(c) + a), la)
    return num / den, num_alpha / den


@pytest.mark.parametrize(("root", "overrelax"),
                         [("exact", False), ("reference", False), ("exact", True)],
                         ids=["exact-root", "reference-root", "exact-root-overrelaxed"])
def test_free_concentration_matches_quadrature(root, overrelax):
    leaves = [[2, 0], [20, 5]]  # worked example, dataset 1
    p_exact, alpha_exact = quadrature_posterior(leaves, root)
    opt = HDPOptions.preset("paper", n_iter=100000, root=root, n_chains=4, concentration_every=1,
                            thin=50,
                     overrelax=overrelax)
    res = estimate_tree(_worked_tree(*leaves), opt, seed=5)
    _check_close_rows(res, p_exact)
    # E[alpha]: batch-means error bar from the (thinned) trace, pooled over chains
    a_tr = res.trace.concentrations[:, res.trace.kept, 0]
    bm = a_tr.reshape(a_tr.shape[0], 20, -1).mean(axis=2).ravel()
    se = bm.std(ddof=1) / math.sqrt(bm.size)
    assert abs(res.concentration_mean[0] - alpha_exact) < 4 * se + 1e-3, (
        res.concentration_mean[0], alpha_exact, se)


def _check_close_rows(res, p_leaves):
    got = res.probabilities[1:]
    tol = 4 * res.mcse[1:] + 1e-9
    assert np.all(np.abs(got - p_leaves) <= tol), (got, p_leaves, res.mcse[1:])


# ---------------------------------------------------------------------------- worked example


def _mean_over_seeds(c0, c1, n_seeds=20, **kw):
    options = HDPOptions.preset("paper", **kw)
    vals = [estimate_tree(_worked_tree(c0, c1), options, seed=s).probabilities[1:, 0]
            for s in range(n_seeds)]
    return np.mean(vals, axis=0)


def test_worked_example_reference_settings():
    # REFERENCE-FACTS.md: the reference code (5,000 iterations, level tying, mean of 20 seeds)
    # gives DS1 [0.8753, 0.7945] and DS2 [0.8357, 0.3375] for P(X1 = 0 | Y = y).
    ds1 = _mean_over_seeds([2, 0], [20, 5], update="window", root="reference")
    ds2 = _mean_over_seeds([2, 0], [4, 9], update="window", root="reference")
    np.testing.assert_allclose(ds1, [0.8753, 0.7945], atol=0.01)
    np.testing.assert_allclose(ds2, [0.8357, 0.3375], atol=0.01)


def test_worked_example_exact_settings():
    # the exact root treatment integrates phi_root against Dirichlet(alpha0 / K): the Y = 0 leaf
    # borrows less from the Y = 1 data (quadrature: DS1 0.85658, DS2 0.79421)
    ds1 = _mean_over_seeds([2, 0], [20, 5])
    ds2 = _mean_over_seeds([2, 0], [4, 9])
    np.testing.assert_allclose(ds1, [0.8566, 0.7930], atol=0.005)
    np.testing.assert_allclose(ds2, [0.7942, 0.3412], atol=0.008)


# ---------------------------------------------------------------------------- invariants


@st.composite
def trees(draw):
    depth = draw(st.integers(1, 3))
    K = draw(st.integers(1, 4))
    cards = [draw(st.integers(1, 3)) for _ in range(depth)]
    n_leaves = draw(st.integers(1, 6))
    paths = np.array(
        [[draw(st.integers(0, c - 1)) for c in cards] for _ in range(n_leaves)], dtype=np.int64
    )
    counts = np.array(
        [[draw(st.integers(0, 40)) for _ in range(K)] for _ in range(n_leaves)], dtype=np.int64
    )
    counts[:, 0] += 1  # no empty leaf
    return ContextTree.from_leaf_counts(paths, counts, cards)


def _check_state(tree, t, n):
    K = tree.n_values
    leaf0 = int(tree.level_offsets[-2])
    np.testing.assert_array_equal(n[leaf0:], tree.counts[leaf0:])
    for i in range(leaf0):
        kids = slice(tree.child_offsets[i], tree.child_offsets[i + 1])
        np.testing.assert_array_equal(n[i], t[kids].sum(axis=0))
    nz = n[1:] >= 1
    assert np.all((t[1:] >= 1) == nz)
    assert np.all(t[1:] <= n[1:])
    assert np.all(t[1:][~nz] == 0)
    assert t.shape == (tree.n_nodes, K)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tree=trees(),
    tying=st.sampled_from(["level", "same-parent", "single", "none"]),
    update=st.sampled_from(["exact", "window"]),
    root=st.sampled_from(["exact", "reference"]),
    window=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariants_after_sweeps(tree, tying, update, root, window, seed):
    opt = HDPOptions.preset("paper", n_iter=37, burn_in=5, tying=tying, update=update, root=root,
                            window=window,
                     n_chains=2, thin=3, concentration_every=2)
    res = estimate_tree(tree, opt, seed=seed, n_threads=1)
    for c in range(2):
        _check_state(tree, res.table_counts[c], res.node_counts[c])
    np.testing.assert_allclose(res.probabilities.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(res.probabilities > 0)
    assert np.all(np.isfinite(res.trace.log_joint))
    assert np.all(res.trace.concentrations > 0)
    res2 = estimate_tree(tree, opt, seed=seed, n_threads=2)
    np.testing.assert_array_equal(res.probabilities, res2.probabilities)
    np.testing.assert_array_equal(res.trace.log_joint, res2.trace.log_joint)


def test_invariants_after_every_sweep_on_a_deep_tree():
    # drive the kernels directly and check the state after each of many sweeps
    rng = np.random.default_rng(3)
    paths = rng.integers(0, 3, size=(60, 3))
    counts = rng.integers(0, 30, size=(60, 3))
    tree = ContextTree.from_leaf_counts(paths, counts, [3, 3, 3])
    # alpha0 2, exact root and update, Gamma(2, 1) prior, cap 4000
    opt = HDPOptions.preset("paper", window=2)
    prep = hdp._prepare(0, tree, opt)
    table = hdp.LogStirlingTable()
    table.ensure(int(tree.counts.max()))
    ratios = hdp._ratio_tables(table, int(tree.counts.max()))
    model = hdp._tree_model(prep, table.kernel_args, ratios)
    assert np.all(model.band_slot == -1)  # every count within the ratio tables: no band cache
    cfg = hdp._config(opt, prep)
    assert (cfg.alpha0, cfg.root, cfg.update, cfg.window, cfg.reflect) == (
        2.0, S.ROOT_EXACT, S.UPDATE_EXACT, 2, 0.0)
    assert (cfg.shape0, cfg.rate0, cfg.cap, cfg.adler) == (2.0, 1.0, 4000.0, 0.0)
    nn, K = tree.n_nodes, tree.n_values
    G = prep.alpha_init.size
    state = S.ChainState(
        n=np.zeros((nn, K), np.int64), t=np.zeros((nn, K), np.int64), N=np.zeros(nn, np.int64),
        T=np.zeros(nn, np.int64), alpha=prep.alpha_init.copy(),
        rng=_stream(1, (0, 0, 0)), rng_draw=_stream(1, (0, 0, 1)),
    )
    S.init_state(model, cfg, state)
    _check_state(tree, state.t, state.n)
    scratch = S.Scratch(
        buf=np.zeros(5), sh=np.zeros(G), rt=np.zeros(G), phi=np.zeros((nn, K)),
        conc=np.zeros(K), band_b0=np.zeros(0, np.int64), band_vals=np.zeros((0, S.BAND)),
    )
    for it in range(200):
        S.sweep(model, cfg, state, scratch)
        _check_state(tree, state.t, state.n)
        np.testing.assert_array_equal(state.N, state.n.sum(axis=1))
        np.testing.assert_array_equal(state.T[1:], state.t[1:].sum(axis=1))
        if it % 5 == 3:
            S.sample_concentrations(model, cfg, state, scratch)
            assert np.all(state.alpha > 0)


# a statistical check of many draws (about 11 s each): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
@pytest.mark.parametrize(("alpha", "uniforms"), [(0.4, True), (3.0, True), (3.0, False)])
def test_concentration_step_draws_the_augmented_conditional(alpha, uniforms):
    # one concentration step from a fixed state: alpha' ~ Gamma(shape0 + sum T_j, rate0 +
    # sum_j -log q_j) with q_j ~ Beta(alpha, N_j) (Algorithm 5), whether q_j of the nodes with
    # N_j <= SMALL_SHAPE is a product of uniforms or, as for the others, a ratio of Gamma
    # variates; against the same step simulated with numpy's Beta and Gamma variates
    from numba import njit

    rng = np.random.default_rng(5)
    paths = rng.integers(0, 3, size=(40, 3))
    tree = ContextTree.from_leaf_counts(paths, rng.integers(0, 5, size=(40, 2)), [3, 3, 3])
    opt = HDPOptions.preset("paper", concentration_max=1e6,
                     concentration_draws="uniforms" if uniforms else "gamma")
    prep = hdp._prepare(0, tree, opt)
    table = hdp.LogStirlingTable()
    table.ensure(int(tree.counts.max()))
    ratios = hdp._ratio_tables(table, int(tree.counts.max()))
    cfg = hdp._config(opt, prep)
    assert cfg.beta_uniforms == uniforms
    nn = 13
    group = np.array([-1] + [0] * 6 + [1] * 6, dtype=np.int64)
    # every small shape and large ones, in both groups; a node with N_j = 0 has q = 1
    N = np.array([0, 1, 2, 3, 0, 8, 40, 1, 1, 5, 7, 9, 300], dtype=np.int64)
    T = np.array([0, 1, 2, 1, 0, 3, 9, 1, 1, 2, 3, 4, 20], dtype=np.int64)
    assert (N[1:] <= S.SMALL_SHAPE).sum() >= 8 and (N > S.SMALL_SHAPE).sum() >= 3
    model = hdp._tree_model(prep, table.kernel_args, ratios)._replace(group=group)

    @njit
    def steps(model, cfg, state, scratch, a, out):
        for r in range(out.shape[0]):
            state.alpha[0] = a
            state.alpha[1] = a
            S.sample_concentrations(model, cfg, state, scratch)
            out[r, 0] = state.alpha[0]
            out[r, 1] = state.alpha[1]

    state = S.ChainState(
        n=np.zeros((nn, 2), np.int64), t=np.zeros((nn, 2), np.int64), N=N, T=T,
        alpha=np.zeros(2), rng=_stream(4, (0,)), rng_draw=_stream(4, (1,)),
    )
    scratch = S.Scratch(
        buf=np.zeros(5), sh=np.zeros(2), rt=np.zeros(2), phi=np.zeros((nn, 2)),
        conc=np.zeros(2), band_b0=np.zeros(0, np.int64), band_vals=np.zeros((0, S.BAND)),
    )
    draws = np.empty((20000, 2))
    steps(model, cfg, state, scratch, alpha, draws)
    for g in range(2):
        nodes = np.flatnonzero(group == g)
        shape = cfg.shape0 + T[nodes].sum()
        b = N[nodes][N[nodes] > 0]
        q = rng.beta(alpha, b, size=(20000, b.size))
        want = rng.gamma(shape, size=20000) / (cfg.rate0 - np.log(q).sum(axis=1))
        assert stats.ks_2samp(draws[:, g], want).pvalue > 1e-3
        # the test has power: a step that forgot the small nodes' auxiliaries is rejected
        small = b[b <= S.SMALL_SHAPE]
        wrong = rng.gamma(shape, size=20000) / (
            cfg.rate0 - np.log(q[:, b > S.SMALL_SHAPE]).sum(axis=1))
        assert small.size and stats.ks_2samp(draws[:, g], wrong).pvalue < 1e-6


@pytest.mark.parametrize("nr", [0, 1, 2, 7, 40])
def test_the_ratio_tables_hold_the_ratios_of_stirling_numbers(nr):
    # r1[n, t] = S(n, t+1) / S(n, t) by rows, r2[n, t] = S(n+1, t) / S(n, t) by columns (an
    # update reads its candidates' parent counts down one column), zero off the triangle; the
    # table's order is read back from its size (a table built for larger counts serves
    # smaller ones, with its own layout)
    from fastpath.estimate.hdp._stirling import log_stirling

    table = hdp.LogStirlingTable()
    table.ensure(nr + 2)
    stir = table.kernel_args
    size = (nr + 1) * (nr + 2) // 2
    r1, r2 = np.full(size, np.nan), np.full(size, np.nan)
    S.build_ratio_tables(nr, stir, r1, r2)
    assert S.ratio_table_order(size) == nr
    assert S.ratio_table_order(size + 1) == nr  # not a triangle: the largest one inside
    seen = set()
    for n in range(nr + 1):
        for t in range(n + 1):
            at = S.r2_column(t, nr) + n - t
            seen.add(at)
            row = n * (n + 1) // 2 + t
            if t == 0:
                assert r1[row] == 0.0 and r2[at] == 0.0
                continue
            want2 = math.exp(log_stirling(n + 1, t, stir) - log_stirling(n, t, stir))
            assert r2[at] == pytest.approx(want2, rel=1e-12)
            want1 = (math.exp(log_stirling(n, t + 1, stir) - log_stirling(n, t, stir))
                     if t < n else 0.0)
            assert r1[row] == pytest.approx(want1, rel=1e-12)
    assert seen == set(range(size))  # the columns tile the table


def test_the_band_cache_of_large_leaf_counts_returns_log_stirling():
    # a leaf count beyond the ratio tables reads log S(n, t) through a band cache of BAND values
    # of t that moves with the chain and computes an entry when first read: every read is
    # log S(n, t) itself, for ranges narrower and wider than the band (cells of window >= 128
    # once read past it), in any order
    from fastpath.estimate.hdp._stirling import log_stirling

    table = hdp.LogStirlingTable()
    table.ensure(40000)
    stir = table.kernel_args
    rng = np.random.default_rng(8)
    band_b0 = np.zeros(2, np.int64)
    band_vals = np.zeros((2, S.BAND))
    for _ in range(400):
        slot = int(rng.integers(0, 2))
        nk = (30000, 2500)[slot]
        lo = int(rng.integers(1, 600))
        hi = min(nk, lo + int(rng.integers(0, 3 * S.BAND)))
        t = int(rng.integers(lo, hi + 1))
        got = S._band_lookup(slot, t, lo, hi, nk, band_b0, band_vals, stir)
        assert got == log_stirling(nk, t, stir)


def test_a_wide_window_samples_large_leaves_as_a_narrow_band_would():
    # a chain whose cells are wider than the band cache (window=200: 401 values) over a leaf of
    # 30,000 rows reads the same log S(n, t) as any other: the table counts are those the same
    # seed gave with a band of 1,024 values (which covers the cells); a band of 256 read past
    # its end here and gave [[69, 59], [62, 15]]
    paths = np.array([[0], [1]])
    tree = ContextTree.from_leaf_counts(paths, np.array([[30000, 5000], [3000, 40]]), [2])
    res = estimate_tree(tree, HDPOptions.preset("paper", n_iter=200, window=200), seed=3)
    assert res.table_counts[0, 1:].tolist() == [[7, 1], [8, 1]]


# ---------------------------------------------------------------------------- random variates


def test_uniform_and_normal_distribution():
    from numba import njit

    @njit
    def many(kind, state, out):
        for i in range(out.size):
            out[i] = S.uniform(state) if kind == 0 else S.normal(state)

    state = _stream(7, (0,))
    u = np.empty(400000)
    many(0, state, u)
    assert u.min() > 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = np.empty(400000)
    many(1, state, z)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    # the tails (beyond the ziggurat's base strip) are populated at the right rate
    assert abs((np.abs(z) > 3.4426).mean() / (2 * stats.norm.sf(3.4426)) - 1) < 0.2


@pytest.mark.parametrize("shape", [0.05, 0.7, 1.0, 3.5, 40.0])
def test_gamma_variates(shape):
    from numba import njit

    @njit
    def many(a, state, out):
        for i in range(out.size):
            out[i] = S.gamma_variate(a, state)

    state = _stream(8, (1,))
    x = np.empty(100000)
    many(shape, state, x)
    assert stats.kstest(x, "gamma", args=(shape,)).pvalue > 1e-3


@pytest.mark.parametrize(("a", "b"), [(0.3, 4.0), (2.5, 1.0), (7.0, 60.0)])
def test_neg_log_beta_variates(a, b):
    from numba import njit

    @njit
    def many(a, b, state, out):
        for i in range(out.size):
            out[i] = S.neg_log_beta_variate(a, b, state)

    state = _stream(9, (2,))
    x = np.empty(100000)
    many(a, b, state, x)
    assert stats.kstest(np.exp(-x), "beta", args=(a, b)).pvalue > 1e-3


def test_init_table_counts_follow_the_paper():
    # eq. eq:init-t with c = 2: t = n for n <= 1, else max(1, floor(c (psi(c + n) - psi(c))))
    from scipy.special import digamma

    for nk in [0, 1, 2, 3, 10, 57, 1000, 123456]:
        want = nk if nk <= 1 else max(1, math.floor(2 * (digamma(2 + nk) - digamma(2))))
        assert S._init_t(nk, 2.0) == want
