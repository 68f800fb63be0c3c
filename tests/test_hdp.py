"""The Python API of the HDP sampler: options, results, reproducibility, diagnostics, ArviZ."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastpath.counts import ContextTree
from fastpath.estimate import effective_sample_size, split_rhat
from fastpath.estimate.hdp import (
    HDPOptions,
    HDPResult,
    LogStirlingTable,
    estimate_tree,
    estimate_trees,
)


def _tree(seed=0, n_leaves=30, K=3, cards=(3, 4, 3)):
    rng = np.random.default_rng(seed)
    paths = np.stack([rng.integers(0, c, n_leaves) for c in cards], axis=1)
    counts = rng.integers(0, 25, size=(n_leaves, K))
    counts[:, 0] += 1
    return ContextTree.from_leaf_counts(paths, counts, list(cards))


TREE = _tree()


# ---------------------------------------------------------------------------- options
def test_the_paper_preset_follows_the_reference():
    o = HDPOptions.preset("paper")
    assert (o.n_iter, o.tying, o.update, o.root) == (5000, "level", "exact", "exact")
    assert (o.concentration_shape, o.concentration_rate, o.concentration_init) == (2.0, 1.0, 2.0)
    assert (o.concentration_max, o.concentration_every, o.alpha0, o.window) == (4000, 5, 2.0, 10)
    assert o.overrelax is False  # plain Gibbs, as in the paper and the reference
    assert o.burn_in_iterations == 500
    # the defaults are the classifiers' adaptive sampler: the same model (prior, tying, root),
    # overrelaxed moves, concentrations every iteration, each tree until its MCSE is small
    d = HDPOptions()
    assert (d.n_iter, d.overrelax, d.concentration_every) == ("auto", True, 1)
    assert d.replace(n_iter=5000, overrelax=False, concentration_every=5) == o
    assert HDPOptions.preset("paper", n_iter=50000).burn_in_iterations == 1000
    assert HDPOptions.preset("paper", n_iter=9).burn_in_iterations == 0


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"n_iter": 0}, "n_iter"),
        ({"n_iter": 2.5}, "n_iter"),
        ({"n_iter": True}, "n_iter"),
        ({"burn_in": 5000}, "burn_in"),
        ({"burn_in": -1}, "burn_in"),
        ({"tying": "parent"}, "tying"),
        ({"update": "gibbs"}, "update"),
        ({"root": "fixed"}, "root"),
        ({"concentration_shape": -1.0}, "concentration_shape"),
        ({"concentration_rate": -0.1}, "concentration_rate"),
        ({"concentration_rate": math.inf}, "concentration_rate"),
        ({"concentration_init": 0.0}, "concentration_init"),
        ({"concentration_init": (1.0, -2.0)}, "concentration_init"),
        ({"concentration_max": 0}, "concentration_max"),
        ({"concentration_every": 0}, "concentration_every"),
        ({"alpha0": 0.0}, "alpha0"),
        ({"alpha0": math.nan}, "alpha0"),
        ({"window": 0}, "window"),
        ({"n_chains": 0}, "n_chains"),
        ({"thin": 0}, "thin"),
        ({"n_batches": 1}, "n_batches"),
        ({"trace_nodes": [-1]}, "trace_nodes"),
        ({"fix_concentrations": "yes"}, "fix_concentrations"),
        ({"overrelax": 1}, "overrelax"),
        ({"overrelax": True, "update": "window"}, "overrelax=True needs update='exact'"),
    ],
)
def test_bad_options_name_the_option(kw, name):
    with pytest.raises(ValueError, match=name):
        HDPOptions(**kw)


def test_bad_per_tree_options():
    with pytest.raises(ValueError, match="concentration_init"):
        estimate_tree(TREE, HDPOptions.preset("paper", concentration_init=(1.0, 2.0)), seed=0)
    with pytest.raises(ValueError, match="trace_nodes"):
        estimate_tree(TREE, HDPOptions.preset("paper", n_iter=10, trace_nodes=(TREE.n_nodes,)),
                                              seed=0)
    with pytest.raises(ValueError, match="seed"):
        estimate_tree(TREE, HDPOptions.preset("paper", n_iter=10), seed=-3)
    with pytest.raises(ValueError, match="n_threads"):
        estimate_tree(TREE, HDPOptions.preset("paper", n_iter=10), seed=0, n_threads=0)
    with pytest.raises(TypeError):
        estimate_tree("not a tree", seed=0)


# ---------------------------------------------------------------------------- results
@pytest.fixture(scope="module")
def result() -> HDPResult:
    opt = HDPOptions.preset("paper", n_iter=1200, n_chains=3, thin=4, trace_nodes=(0, 5),
                            record_draws=True)
    return estimate_tree(TREE, opt, seed=42)


def test_result_shapes_and_probabilities(result):
    nn, K = TREE.n_nodes, TREE.n_values
    assert result.probabilities.shape == (nn, K)
    assert result.mcse.shape == (nn, K)
    assert result.chain_probabilities.shape == (3, nn, K)
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0)
    np.testing.assert_allclose(result.probabilities, result.chain_probabilities.mean(axis=0))
    assert np.all(result.mcse >= 0) and result.mcse.max() > 0
    assert result.concentration_mean.shape == (TREE.depth,)
    tr = result.trace
    assert tr.iterations.tolist() == list(range(4, 1201, 4))
    assert tr.concentrations.shape == (3, 300, TREE.depth)
    assert tr.log_joint.shape == (3, 300)
    assert tr.node_probabilities.shape == (3, 300, 2, K)
    assert tr.kept.sum() == 300 - 120 // 4
    assert result.draws.shape == (3, 270, nn, K)
    np.testing.assert_allclose(result.draws.sum(axis=-1), 1.0)
    assert result.seconds > 0


def test_arrays_are_read_only(result):
    for a in (result.probabilities, result.mcse, result.chain_probabilities, result.groups,
              result.concentration_mean, result.trace.log_joint, result.trace.concentrations,
              result.draws, result.table_counts, result.node_counts):
        with pytest.raises(ValueError):
            a[(0,) * a.ndim] = 1
    q = result.query(TREE.paths()[-1])
    q[0, 0] = 7.0  # queries are copies
    assert result.probabilities[-1, 0] != 7.0
    with pytest.raises(AttributeError):
        result.probabilities = None


def test_query_backs_off_to_deepest_existing_node(result):
    tree = TREE
    leaf = tree.level_offsets[-2]
    path = tree.paths()[leaf]
    np.testing.assert_array_equal(result.query(path)[0], result.probabilities[leaf])
    # an unseen value at the last depth: answered by the leaf's parent
    unseen = None
    for v in range(tree.branch_cardinalities[-1]):
        p = path.copy()
        p[-1] = v
        if tree.find(p)[0] != leaf and tree.child_lookup[
                tree.lookup_offsets[tree.parent[leaf]] + v] < 0:
            unseen = p
            break
    if unseen is not None:
        np.testing.assert_array_equal(result.query(unseen)[0],
                                      result.probabilities[tree.parent[leaf]])
    # unknown value (negative) at depth 1: the root
    p = path.copy()
    p[0] = -1
    np.testing.assert_array_equal(result.query(p)[0], result.probabilities[0])
    assert result.query(np.stack([path, path])).shape == (2, tree.n_values)


def test_trace_node_probabilities_match_estimates(result):
    # the mean of the traced RB estimates after burn-in is the thinned version of the estimate
    tr = result.trace
    m = tr.node_probabilities[:, tr.kept].mean(axis=(0, 1))
    np.testing.assert_allclose(m, result.probabilities[[0, 5]], atol=0.02)


def test_draws_average_to_estimates(result):
    # the Dirichlet draws given t and alpha average to the RB estimates
    m = result.draws.mean(axis=(0, 1))
    se = result.draws.std(axis=(0, 1)) / math.sqrt(result.draws.shape[0] * result.draws.shape[1])
    assert np.all(np.abs(m - result.probabilities) < 6 * se + 0.01)


# ---------------------------------------------------------------------------- reproducibility
@pytest.mark.parametrize("overrelax", [False, True], ids=["gibbs", "overrelaxed"])
def test_same_seed_same_bits_whatever_the_threads(overrelax):
    trees = [TREE, _tree(1, K=2), _tree(2, n_leaves=10, cards=(2, 2))]
    opt = HDPOptions.preset("paper", n_iter=300, n_chains=2, thin=5, record_draws=(0, 1),
                            overrelax=overrelax)
    a = estimate_trees(trees, opt, seed=7, n_threads=1)
    b = estimate_trees(trees, opt, seed=7, n_threads=2)
    c = estimate_trees(trees, opt, seed=7, n_threads=2, progress=lambda d, t: None)
    for x, y, z in zip(a, b, c, strict=True):
        for name in ("probabilities", "mcse", "table_counts", "draws"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
            np.testing.assert_array_equal(getattr(x, name), getattr(z, name))
        np.testing.assert_array_equal(x.trace.log_joint, y.trace.log_joint)
    # the first tree's chains do not depend on which other trees are sampled with it
    solo = estimate_trees(trees[:1], opt, seed=7)[0]
    np.testing.assert_array_equal(solo.probabilities, a[0].probabilities)
    # a different seed gives different chains
    d = estimate_trees(trees, opt, seed=8, n_threads=2)
    assert not np.array_equal(d[0].probabilities, a[0].probabilities)


def test_overrelaxed_chains_differ_from_gibbs_chains():
    a = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=200), seed=3)
    b = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=200, overrelax=True), seed=3)
    assert b.options.overrelax
    assert not np.array_equal(a.trace.concentrations, b.trace.concentrations)
    assert not np.array_equal(a.probabilities, b.probabilities)


def test_draws_do_not_change_the_chain():
    a = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=200), seed=3)
    b = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=200, record_draws=True,
                                              trace_nodes=(2,)), seed=3)
    np.testing.assert_array_equal(a.probabilities, b.probabilities)


def test_seed_none_records_entropy():
    a = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=50), seed=None)
    b = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=50), seed=a.seed_entropy)
    np.testing.assert_array_equal(a.probabilities, b.probabilities)


def test_progress_reports_all_iterations():
    seen = []
    estimate_trees([TREE, TREE], HDPOptions.preset("paper", n_iter=600, n_chains=2), seed=0,
                                                   n_threads=2,
                   progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (2400, 2400)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_shared_stirling_table_grows():
    table = LogStirlingTable()
    big = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[900, 40], [30, 3000]]),
                                       [2])
    res = estimate_trees([TREE, big], HDPOptions.preset("paper", n_iter=100), seed=0,
                                                        stirling=table)
    assert table.n_max >= 3000
    assert np.all(np.isfinite(res[1].probabilities))


# ---------------------------------------------------------------------------- special trees
def test_root_only_tree():
    t = ContextTree.from_leaf_counts(np.zeros((1, 0), np.int64), np.array([[3, 1]]), [])
    r = estimate_tree(t, HDPOptions.preset("paper", n_iter=20), seed=0)
    np.testing.assert_allclose(r.probabilities[0], [(3 + 1) / 6, (1 + 1) / 6])
    assert r.concentration_mean.shape == (0,)
    assert r.diagnostics().index.tolist() == ["log_joint"]


def test_single_value_child():
    t = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[5], [2]]), [2])
    r = estimate_tree(t, HDPOptions.preset("paper", n_iter=50), seed=0)
    np.testing.assert_allclose(r.probabilities, 1.0)


@pytest.mark.parametrize("tying", ["none", "same-parent", "single", "level"])
def test_group_names(tying):
    r = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=30, tying=tying), seed=0)
    assert len(r.group_names) == r.n_groups
    if tying != "single":
        assert len(set(r.group_names)) == r.n_groups


def test_fixed_concentrations_stay_fixed():
    r = estimate_tree(TREE, HDPOptions.preset("paper", n_iter=100, fix_concentrations=True,
                                       concentration_init=(1.0, 2.0, 3.0)), seed=0)
    assert np.all(r.trace.concentrations == np.array([1.0, 2.0, 3.0]))


def test_concentration_cap():
    t = ContextTree.from_leaf_counts(np.array([[0], [1], [2]]),
                                     np.array([[500, 500], [500, 500], [500, 500]]), [3])
    r = estimate_tree(t, HDPOptions.preset("paper", n_iter=200, concentration_max=3.0), seed=0)
    assert r.trace.concentrations.max() <= 3.0


# ---------------------------------------------------------------------------- diagnostics
def test_rhat_and_ess_against_known_cases():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=(4, 1000))
    assert abs(split_rhat(iid) - 1) < 0.01
    assert 3000 < effective_sample_size(iid) < 5000
    ar = np.zeros((4, 1000))
    for i in range(1, 1000):
        ar[:, i] = 0.9 * ar[:, i - 1] + rng.normal(size=4)
    ess = effective_sample_size(ar)
    assert 100 < ess < 400  # theory: 4000 (1 - 0.9) / (1 + 0.9) = 211
    shifted = iid + np.arange(4)[:, None]
    assert split_rhat(shifted) > 1.5
    assert math.isnan(split_rhat(np.ones((2, 100))))


def test_rhat_and_ess_agree_with_arviz():
    azs = pytest.importorskip("arviz_stats")
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=(3, 400)), axis=1) * 0.05 + rng.normal(size=(3, 400))
    assert split_rhat(x) == pytest.approx(float(azs.rhat(x, method="rank")), rel=1e-6)
    assert effective_sample_size(x) == pytest.approx(
        float(azs.ess(x, method="bulk")), rel=1e-6)


def test_diagnostics_table(result):
    d = result.diagnostics()
    assert list(d.columns) == ["mean", "sd", "rhat", "ess_bulk"]
    assert d.index.tolist() == [f"alpha[depth{i}]" for i in (1, 2, 3)] + ["log_joint"]
    assert np.all(d["rhat"] > 0.9)


def test_to_arviz_of_a_result_without_traces_says_which_option(result):
    with pytest.raises(ValueError, match=r"keep_traces=False.*keep_traces=True"):
        result.without_traces().to_arviz()


def test_to_arviz(result):
    pytest.importorskip("arviz_base")
    dt = result.to_arviz(value_labels=["a", "b", "c"])
    post = dt["posterior"]
    assert post["concentration"].shape == (3, 270, 3)
    assert post["node_probability"].shape == (3, 270, 2, 3)
    assert post["phi"].shape == (3, 270, TREE.n_nodes, 3)
    assert list(post["concentration"].coords["group"].values) == ["depth1", "depth2", "depth3"]
    assert dt["warmup_posterior"]["log_joint"].shape == (3, 30)
    np.testing.assert_array_equal(dt["sample_stats"]["lp"].values,
                                  result.trace.log_joint[:, result.trace.kept])
    azs = pytest.importorskip("arviz_stats")
    r = azs.rhat(dt, var_names=["concentration"])
    np.testing.assert_allclose(
        r["concentration"].values,
        [split_rhat(result.trace.concentrations[:, result.trace.kept, g]) for g in range(3)],
        rtol=1e-6,
    )


def test_an_error_in_a_worker_stops_the_run():
    calls = []

    def progress(done, total):
        calls.append(done)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        estimate_trees([TREE] * 4, HDPOptions.preset("paper", n_iter=5000, n_chains=2), seed=0,
                                                     n_threads=2,
                       progress=progress)
    assert len(calls) <= 8  # each worker stopped at its first chunk boundary


def test_results_do_not_depend_on_earlier_calls():
    # the default Stirling and ratio tables are shared by the process; a chain must not depend
    # on how large earlier calls made them (the kernels pick ratio tables vs log space by the
    # ratio tables' size, which _ratio_tables therefore reports as this call's)
    # one depth-1 node holds every row: its count exceeds a fresh call's ratio tables
    small = ContextTree.from_leaf_counts(np.array([[0, 0], [0, 1]]), np.array([[7, 2], [3, 9]]),
                                         [2, 2])
    opt = HDPOptions.preset("paper", n_iter=300, n_chains=2)
    table = LogStirlingTable()
    fresh = estimate_tree(small, opt, seed=4, stirling=table)
    big = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[3000, 20], [5, 900]]),
                                       [2])
    estimate_tree(big, opt, seed=4)  # grows the shared tables
    estimate_tree(big, opt, seed=4, stirling=table)  # and the caller's
    for again in (estimate_tree(small, opt, seed=4),
                  estimate_tree(small, opt, seed=4, stirling=table)):
        np.testing.assert_array_equal(again.probabilities, fresh.probabilities)
        np.testing.assert_array_equal(again.trace.log_joint, fresh.trace.log_joint)


# ---------------------------------------------------------------------------- one path
def _result_arrays(r: HDPResult) -> dict:
    out = {name: getattr(r, name) for name in (
        "probabilities", "mcse", "chain_probabilities", "groups", "concentration_mean",
        "table_counts", "node_counts")}
    out.update({f"trace.{name}": getattr(r.trace, name) for name in (
        "iterations", "concentrations", "log_joint", "node_ids", "node_probabilities",
        "rows_probability")})
    return out


PRESET_TREES = [_tree(seed=s, n_leaves=n, K=k, cards=c) for s, (n, k, c) in enumerate([
    (30, 3, (3, 4, 3)), (200, 2, (5, 6, 4, 3)), (5, 4, (2,)), (400, 6, (7, 7, 5)),
    (1, 2, (3,)), (60, 3, (2, 2, 2, 2, 2))])] + [
    ContextTree.from_leaf_counts(np.zeros((1, 0), np.int64), np.array([[40, 2, 0]]), []),
    # counts beyond the ratio tables: the band caches
    ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[3000, 5], [2, 2500]]), [2])]


@pytest.mark.parametrize("options", [
    HDPOptions.preset("adaptive"),
    HDPOptions.preset("ensemble"),
    HDPOptions.preset("ensemble", mcse_tolerance=1e-4, max_iter=300),  # most trees go on
    HDPOptions.preset("adaptive", min_iter=40, max_iter=40, burn_in=10),  # stop at max_iter
    HDPOptions.preset("ensemble", concentration_init=(0.7,)),
    HDPOptions.preset("paper", n_iter=120, n_chains=2, trace_nodes=(0,), record_draws=(0,)),
], ids=["adaptive", "ensemble", "goes-on", "max-iter", "init-tuple", "fixed-two-chains"])
def test_one_path_gives_every_tree_the_same_result_whatever_the_threads(options):
    # the scheduler runs a tree's chains and blocks in the calling thread or on a pool; each
    # (tree, chain) owns its streams, so the results are the same array for array, read-only
    one = estimate_trees(PRESET_TREES, options, seed=11, n_threads=1)
    two = estimate_trees(PRESET_TREES, options, seed=11, n_threads=2)
    for a, b in zip(one, two, strict=True):
        for name, value in _result_arrays(a).items():
            np.testing.assert_array_equal(value, _result_arrays(b)[name], err_msg=name)
            assert value.dtype == _result_arrays(b)[name].dtype, name
            assert not value.flags.writeable, name
        for name in ("n_iterations", "stop_reason", "group_names", "tree_index",
                     "seed_entropy"):
            assert getattr(a, name) == getattr(b, name), name
        if options.n_chains == 1:  # one chain's mean is its estimate, kept once
            assert np.shares_memory(a.probabilities, a.chain_probabilities)
        if options.adaptive:
            assert a.stop_check.stop == b.stop_check.stop
            assert a.stop_check.unmet == b.stop_check.unmet
            np.testing.assert_array_equal(
                [a.stop_check.max_mcse, a.stop_check.max_rhat, a.stop_check.min_ess,
                 a.rows_mcse],
                [b.stop_check.max_mcse, b.stop_check.max_rhat, b.stop_check.min_ess,
                 b.rows_mcse])
        else:
            np.testing.assert_array_equal(a.draws, b.draws)
    if options.mcse_tolerance == 1e-4:
        assert any(r.n_iterations > options.min_iter for r in one)


@pytest.mark.parametrize("n_chains", [1, 2])
def test_adaptive_progress_counts_the_iterations_really_run(n_chains):
    """The bar's total shrinks by what a tree that stops early leaves unrun, so it ends at the
    iterations run (not max_iter per tree, added at once)."""
    seen = []
    opt = HDPOptions.preset("paper", n_iter="auto", n_chains=n_chains)
    results = estimate_trees([TREE] * 3, opt, seed=0, n_threads=2,
                             progress=lambda d, t: seen.append((d, t)))
    run = sum(r.n_iterations for r in results) * n_chains
    assert run < 3 * n_chains * opt.max_iter  # they stopped early
    assert seen[0] == (0, 3 * n_chains * opt.max_iter) and seen[-1] == (run, run)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert [t for _, t in seen] == sorted((t for _, t in seen), reverse=True)


def test_progress_can_count_trees():
    seen = []
    estimate_trees([TREE] * 3, HDPOptions.preset("paper", n_iter="auto"), seed=0, n_threads=2,
                   progress=lambda d, t: seen.append((d, t)), progress_unit="trees")
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    with pytest.raises(ValueError, match="progress_unit"):
        estimate_trees([TREE], HDPOptions.preset("paper", n_iter=10), progress_unit="rows")
