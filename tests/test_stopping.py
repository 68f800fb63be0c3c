"""The adaptive length of the HDP sampler: fastpath.estimate.hdp._stopping and n_iter="auto"."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath import BayesNetClassifier
from fastpath.estimate import UnconvergedWarning, summarise_fit
from fastpath.estimate.hdp import HDPOptions, estimate_trees
from fastpath.estimate.hdp._options import AUTO_BATCH
from fastpath.estimate.hdp._stopping import StopCheck, batch_means_mcse, check_stop, next_length
from fastpath.io import load_dataset


def _batch_sums(trace: np.ndarray, batch: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Sums of the batch means of a (draws, ...) trace and of their squares."""
    m = trace.shape[0] // batch
    means = trace[: m * batch].reshape(m, batch, *trace.shape[1:]).mean(axis=1)
    return means.sum(axis=0), (means * means).sum(axis=0), m


def _stationary(rng, chains=2, draws=2000, groups=2):
    conc = 2.0 + rng.normal(size=(chains, draws, groups))
    lj = -100.0 + rng.normal(size=(chains, draws))
    return conc, lj


# ------------------------------------------------------------------ the rule on constructed traces
def test_batch_means_mcse_is_the_standard_error_of_the_batch_means():
    rng = np.random.default_rng(0)
    trace = rng.normal(size=(5000, 3))
    s1, s2, m = _batch_sums(trace, 50)
    means = trace.reshape(100, 50, 3).mean(axis=1)
    np.testing.assert_allclose(batch_means_mcse(s1, s2, m),
                               means.std(axis=0, ddof=1) / np.sqrt(m), rtol=1e-10)
    assert np.isinf(batch_means_mcse(s1, s2, 1)).all()  # one batch: no estimate


def test_stops_a_chain_whose_mcse_is_below_tolerance_and_continues_one_above():
    rng = np.random.default_rng(1)
    conc, lj = _stationary(rng)
    # white noise of sd 0.1 over 4,000 draws: MCSE ~ 0.1 / sqrt(4000) = 0.0016
    precise = 0.5 + 0.1 * rng.normal(size=(4000, 4))
    s1, s2, m = _batch_sums(precise, AUTO_BATCH)
    mcse = batch_means_mcse(s1, s2, m)
    assert 0.001 < mcse.max() < 0.0025
    ok = check_stop(mcse, conc, lj, tolerance=0.003)
    assert ok.stop and ok.unmet == ""
    # sd 0.5: MCSE ~ 0.008, above the same tolerance
    noisy = 0.5 + 0.5 * rng.normal(size=(4000, 4))
    s1, s2, m = _batch_sums(noisy, AUTO_BATCH)
    more = check_stop(batch_means_mcse(s1, s2, m), conc, lj, tolerance=0.003)
    assert not more.stop and more.unmet.startswith("MCSE")


def test_an_autocorrelated_trace_has_a_larger_mcse_than_white_noise():
    # AR(1) with phi = 0.9 (integrated autocorrelation time 19): batches of 25 see most of it
    rng = np.random.default_rng(2)
    e = rng.normal(size=20000)
    x = np.empty_like(e)
    x[0] = e[0]
    for i in range(1, e.size):
        x[i] = 0.9 * x[i - 1] + e[i]
    s1, s2, m = _batch_sums(x[:, None], AUTO_BATCH)
    mcse = float(batch_means_mcse(s1, s2, m)[0])
    naive = x.std() / np.sqrt(x.size)
    assert 3.0 < mcse / naive < np.sqrt(19) * 1.2


def test_unmixed_concentrations_or_log_joint_keep_the_chain_running():
    rng = np.random.default_rng(3)
    conc, lj = _stationary(rng)
    small = np.full((4, 2), 1e-4)
    assert check_stop(small, conc, lj, tolerance=0.01).stop
    drift = conc.copy()
    drift[1] += 3.0  # the second chain sits elsewhere: R-hat far above 1.01
    bad = check_stop(small, drift, lj, tolerance=0.01)
    assert not bad.stop and "R-hat" in bad.unmet
    walk = np.cumsum(rng.normal(size=(2, 2000)), axis=1)  # a random walk: ESS far below 200
    bad = check_stop(small, conc, walk, tolerance=0.01)
    assert not bad.stop and "ESS" in bad.unmet
    # a trace that never moves needs no check (NaN statistics)
    assert check_stop(small, np.zeros((2, 50, 1)), np.zeros((2, 50)), tolerance=0.01).stop


def test_check_stop_rejects_mismatched_traces():
    with pytest.raises(ValueError, match="concentrations must be"):
        check_stop(np.zeros(3), np.zeros((2, 10)), np.zeros((2, 10)), tolerance=0.01)


# ------------------------------------------------------------------ n_iter="auto" on real trees
@pytest.fixture(scope="module")
def trees():
    X, y = load_dataset("credit-a")
    clf = BayesNetClassifier(structure="kdb", k=2, estimation="m").fit(X, y)
    return clf.trees_[:6]


def test_options_validate_the_adaptive_length():
    with pytest.raises(ValueError, match="n_iter must be"):
        HDPOptions(n_iter="forever")
    with pytest.raises(ValueError, match="max_iter"):
        HDPOptions(n_iter="auto", min_iter=1000, max_iter=500)
    with pytest.raises(ValueError, match="burn_in must be < min_iter"):
        HDPOptions(n_iter="auto", min_iter=500, burn_in=500)
    with pytest.raises(ValueError, match="mcse_tolerance"):
        HDPOptions(n_iter="auto", mcse_tolerance=0)
    with pytest.raises(ValueError, match="sampler must be one of"):
        HDPOptions.preset("slow")
    opt = HDPOptions.preset("strict", max_iter=3000)
    assert opt.adaptive and opt.overrelax and opt.concentration_every == 1
    assert opt.iterations_max == 3000 and opt.burn_in_iterations == opt.min_iter // 2
    assert HDPOptions.preset("adaptive") == HDPOptions()  # the classifiers' default


def test_adaptive_runs_stop_at_block_boundaries_and_reproduce_for_any_thread_count(trees):
    opt = HDPOptions.preset("strict", max_iter=3000, n_chains=2)
    one = estimate_trees(trees, opt, seed=5, n_threads=1)
    two = estimate_trees(trees, opt, seed=5, n_threads=2)
    for a, b in zip(one, two, strict=True):
        assert a.n_iterations == b.n_iterations and a.stop_reason == b.stop_reason
        np.testing.assert_array_equal(a.probabilities, b.probabilities)
        np.testing.assert_array_equal(a.trace.concentrations, b.trace.concentrations)
        assert a.n_iterations >= opt.min_iter
        assert (a.n_iterations - opt.min_iter) % opt.check_every == 0 or a.n_iterations == 3000
        assert a.stop_reason in ("tolerance", "max_iter")
        assert a.trace.iterations[-1] == a.n_iterations  # traces end where the chains stopped
        if a.stop_reason == "tolerance":
            assert a.stop_check.stop and np.nanmax(a.mcse) <= opt.mcse_tolerance
    assert len({r.n_iterations for r in one}) > 1  # trees stop at different lengths


def test_a_loose_tolerance_stops_at_min_iter_a_strict_one_at_max_iter(trees):
    # the class prior's tree has no concentration and a constant log joint: only the MCSE
    # decides, and a loose tolerance is met at the first check
    loose = estimate_trees(trees[:1], HDPOptions.preset("strict", mcse_tolerance=1.0, min_iter=400,
                                                        check_every=100), seed=1, n_threads=1)
    assert loose[0].n_iterations == 400 and loose[0].stop_reason == "tolerance"
    strict = estimate_trees(trees[1:3], HDPOptions.preset(
        "strict", mcse_tolerance=1e-6, min_iter=300, max_iter=600), seed=1, n_threads=1)
    assert all(r.n_iterations == 600 and r.stop_reason == "max_iter" for r in strict)
    diag = summarise_fit(strict)
    assert all(t.stop_reason == "max_iter" and t.iterations == 600 for t in diag.trees)
    assert any("> 1e-06 after 600 iterations" in p for t in diag.trees
               for p in t.problems(diag.rhat_max, diag.ess_min))
    with pytest.warns(UnconvergedWarning, match="max_iter"):
        diag.warn_if_unconverged()
    assert "stopped at max_iter" in diag.summary()


def test_the_stopped_estimate_is_the_mean_of_the_iterations_run(trees):
    """An adaptive run stopped at n iterations equals a fixed run of n iterations with the same
    options (the kernel is the same; only where it stops differs)."""
    opt = HDPOptions.preset("strict", max_iter=4000)
    auto = estimate_trees(trees[:3], opt, seed=2, n_threads=1)
    for i, r in enumerate(auto):
        fixed = estimate_trees(trees[: i + 1], opt.replace(
            n_iter=r.n_iterations, burn_in=opt.burn_in_iterations), seed=2, n_threads=1)[i]
        np.testing.assert_allclose(r.probabilities, fixed.probabilities, rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ presets on the classifier
def test_paper_sampler_reproduces_the_estimates_before_presets_bit_for_bit():
    """Values printed by commit 83b6ee6 (before presets) for kDB-2 HDP, 300 iterations, seed 0."""
    X, y = load_dataset("credit-a")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnconvergedWarning)
        clf = BayesNetClassifier(structure="kdb", k=2, estimation="hdp",
                                 sampler=HDPOptions.preset("paper", n_iter=300),
                                 random_state=0, n_jobs=1).fit(X, y)
    expected = [3.0469192570183951e-01, 1.4832597969436981e-04, 5.4118834453430235e-02,
                6.3338030522105807e-02, 1.8236590932103075e-01]
    np.testing.assert_array_equal(clf.predict_proba(X.iloc[:5])[:, 1], expected)


def test_the_classifier_takes_a_preset_and_options_override_it():
    X, y = load_dataset("credit-a")
    X, y = X.iloc[:200], y.iloc[:200]
    # the default: the adaptive preset, HDPOptions()'s defaults; passed changed, it stays
    # adaptive (only the field changed changes)
    assert BayesNetClassifier().hdp_options() == HDPOptions.preset("adaptive") == HDPOptions()
    two = BayesNetClassifier(sampler=HDPOptions(n_chains=2)).hdp_options()
    assert two == HDPOptions.preset("adaptive", n_chains=2) and two.adaptive
    assert BayesNetClassifier(sampler="paper").hdp_options().n_iter == 5000
    clf = BayesNetClassifier(structure="nb", estimation="hdp", sampler="strict", random_state=0)
    assert clf.hdp_options() == HDPOptions.preset("strict")
    assert HDPOptions.preset("strict").n_iter == "auto"
    over = BayesNetClassifier(estimation="hdp",
                              sampler=HDPOptions.preset("strict", n_iter=700, overrelax=False))
    assert over.hdp_options().n_iter == 700 and not over.hdp_options().overrelax
    assert over.hdp_options().concentration_every == 1  # the rest from the preset
    with pytest.raises(ValueError, match="sampler must be one of"):
        BayesNetClassifier(estimation="hdp", sampler="slow").fit(X, y)
    clf.fit(X, y)
    assert all(r.stop_reason in ("tolerance", "max_iter") for r in clf.hdp_results_)
    assert all(t.iterations == r.n_iterations
               for t, r in zip(clf.diagnostics_.trees, clf.hdp_results_, strict=True))


def test_next_length_runs_to_what_the_unmet_conditions_need():
    def check(mcse, ess, unmet="x", rhat=1.0):
        return StopCheck(False, mcse, rhat, ess, unmet)

    kw = dict(tolerance=0.01, ess_min=100.0, step=250, max_iter=5000)
    # MCSE twice the tolerance: 4x the kept iterations (+10 %), rounded up to the 250 grid
    assert next_length(check(0.02, 500.0), 500, 250, **kw) == 1500  # 250 + 1100 -> 1500
    # ESS of 50 for 100: twice the kept iterations
    assert next_length(check(0.001, 50.0), 1250, 250, **kw) == 2500  # 250 + 2200 -> 2500
    # nearly there: at least one step; never beyond max_iter
    assert next_length(check(0.0101, 99.0), 1000, 250, **kw) == 1250
    assert next_length(check(0.1, 1.0), 1000, 250, **kw) == 5000
    # an R-hat alone, or no MCSE yet: double
    assert next_length(check(0.001, math.nan, "R-hat 1.02 > 1.01", 1.02), 500, 250, **kw) == 1000
    assert next_length(check(math.inf, math.nan), 500, 250, **kw) == 1000


def test_without_convergence_checks_the_mcse_alone_decides(trees):
    opt = HDPOptions.preset("strict", convergence_checks=False, max_iter=3000)
    with_checks = estimate_trees(trees[1:4], HDPOptions.preset("strict", max_iter=3000), seed=4,
                                 n_threads=1)
    mcse_only = estimate_trees(trees[1:4], opt, seed=4, n_threads=1)
    for a, b in zip(mcse_only, with_checks, strict=True):
        assert a.stop_reason == "tolerance" and np.nanmax(a.mcse) <= opt.mcse_tolerance
        assert a.n_iterations <= b.n_iterations
        assert math.isnan(a.stop_check.max_rhat) and math.isnan(a.stop_check.min_ess)
    # on these trees the ESS floor is what keeps the checked chains running
    assert sum(r.n_iterations for r in mcse_only) < sum(r.n_iterations for r in with_checks)
    with pytest.raises(ValueError, match="convergence_checks"):
        HDPOptions(convergence_checks="yes")


def test_rows_weighting_checks_the_mcse_the_training_rows_read(trees):
    tree = trees[2]
    base = dict(convergence_checks=False, max_iter=3000)
    by_max = estimate_trees([tree], HDPOptions.preset("strict", **base), seed=6, n_threads=1)[0]
    by_rows = estimate_trees([tree], HDPOptions.preset("strict", mcse_weighting="rows", **base),
                             seed=6, n_threads=1)[0]
    assert by_rows.n_iterations <= by_max.n_iterations
    # the criterion at the stop: the RMS over rows of the leaves' MCSE, by the leaves' counts
    leaf = int(tree.level_offsets[-2])
    counts = tree.counts[leaf:]
    rms = np.sqrt(np.sum(counts / counts.sum() * by_rows.mcse[leaf:] ** 2))
    assert by_rows.stop_check.max_mcse == pytest.approx(rms, rel=1e-12)
    assert rms <= 0.01 and rms <= np.nanmax(by_rows.mcse)
    with pytest.raises(ValueError, match="mcse_weighting"):
        HDPOptions(mcse_weighting="mean")


def test_hdpbn_diagnose_lists_iterations_and_stop_reasons(tmp_path, capsys):
    from fastpath.cli import main
    X, y = load_dataset("credit-a")
    clf = BayesNetClassifier(structure="nb", estimation="hdp", sampler="strict", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnconvergedWarning)
        clf.fit(X.iloc[:300], y.iloc[:300])
    clf.save(tmp_path / "strict.npz")
    main(["diagnose", str(tmp_path / "strict.npz"), "--all"])
    out = capsys.readouterr().out
    assert "iterations per chain (adaptive)" in out and "stop_reason" in out
    frame = clf.diagnostics_.to_frame()
    assert set(frame["stop_reason"]) <= {"tolerance", "max_iter"}
    assert (frame.groupby("tree")["iterations"].first().to_numpy()
            == [r.n_iterations for r in clf.hdp_results_]).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 0.1), min_size=1, max_size=30), st.floats(1e-4, 0.1),
       st.integers(0, 5000), st.integers(100, 2000))
def test_the_rule_and_the_next_length_are_consistent(mcse, tolerance, n_run, burn_in):
    """With traces that never move (no R-hat/ESS to check) the rule stops exactly when the
    largest MCSE is within tolerance, and an unmet rule always runs on, on the step grid."""
    n_run += burn_in + 1
    flat = np.zeros((1, 20, 1)), np.zeros((1, 20))
    check = check_stop(np.array(mcse), *flat, tolerance=tolerance)
    assert check.stop == (max(mcse) <= tolerance)
    if not check.stop:
        cap = 10**7
        nxt = next_length(check, n_run, burn_in, tolerance=tolerance, ess_min=100.0, step=250,
                          max_iter=cap)
        assert n_run < nxt <= cap
        if nxt < cap:  # on the step grid, at a length that meets the tolerance if the MCSE
            assert (nxt - n_run) % 250 == 0  # falls as 1 / sqrt(kept iterations)
            assert max(mcse) * np.sqrt((n_run - burn_in) / (nxt - burn_in)) <= tolerance


# ------------------------------------------------------------------ the default rule (adaptive)
def test_the_presets_and_the_former_name():
    adaptive = HDPOptions.preset("adaptive")
    # overrelaxed moves, the rows rule, no R-hat/ESS condition
    assert adaptive.adaptive and adaptive.overrelax and adaptive.concentration_every == 1
    assert adaptive.mcse_weighting == "rows" and not adaptive.convergence_checks
    plain = HDPOptions.preset("adaptive-plain")
    assert not plain.overrelax and plain.concentration_every == 5 and plain.mcse_weighting == "rows"
    strict = HDPOptions.preset("strict")
    assert strict.mcse_weighting == "max" and strict.convergence_checks and strict.overrelax
    with pytest.raises(ValueError, match=r"sampler must be one of .*got 'fast'"):
        BayesNetClassifier(sampler="fast").hdp_options()
    # the ensemble's: plain moves, the concentrations every iteration, drawn from uniforms where
    # they can be, chains of at least 60 iterations after a burn-in of 10
    ensemble = HDPOptions.preset("ensemble")
    assert not ensemble.overrelax and ensemble.concentration_every == 1
    assert ensemble.concentration_draws == "uniforms"
    assert (ensemble.min_iter, ensemble.burn_in_iterations) == (60, 10)
    # every other preset keeps the reference's Gamma draws (the same numbers for its seeds)
    assert all(HDPOptions.preset(name).concentration_draws == "gamma"
               for name in ("adaptive", "adaptive-plain", "strict", "paper"))
    with pytest.raises(ValueError, match="concentration_draws must be one of"):
        HDPOptions(concentration_draws="beta")


def test_rows_mcse_is_the_row_weighted_rms_and_counts_disagreeing_chains():
    from fastpath.estimate.hdp import rows_mcse

    X, y = load_dataset("car")
    tree = BayesNetClassifier(structure="nb", estimation="m").fit(X, y).trees_[1]
    leaf = int(tree.level_offsets[-2])
    w = tree.counts[leaf:] / tree.counts[leaf:].sum()
    rng = np.random.default_rng(0)
    mcse = rng.uniform(0, 0.01, size=tree.counts.shape)
    assert rows_mcse(tree, mcse) == pytest.approx(np.sqrt(np.sum(w * mcse[leaf:] ** 2)))
    # two chains d apart at every leaf: sd = d / sqrt(2), standard error of the mean d / 2
    p = rng.dirichlet(np.ones(tree.n_values), size=tree.n_nodes)
    d = 0.05
    chains = np.stack([p, p + d])
    assert rows_mcse(tree, np.zeros_like(mcse), chains) == pytest.approx(d / 2)
    # agreeing chains leave the batch-means MCSE as it is
    assert rows_mcse(tree, mcse, np.stack([p, p])) == pytest.approx(rows_mcse(tree, mcse))


def test_the_rows_probability_trace_is_what_the_rows_read_at_every_kept_iteration(trees):
    tree = trees[2]
    leaf = int(tree.level_offsets[-2])
    leaves = tuple(range(leaf, tree.n_nodes))
    res = estimate_trees([tree], HDPOptions.preset("paper", n_iter=300, burn_in=100, thin=1,
                                                   trace_nodes=leaves),
                         seed=3, n_threads=1)[0]
    counts = tree.counts[leaf:]
    kept = res.trace.node_probabilities[:, res.trace.kept]  # (chains, kept, leaves, K)
    expected = np.sum(counts * kept, axis=(2, 3)) / counts.sum()
    np.testing.assert_allclose(res.trace.rows_probability, expected, rtol=1e-12)
    assert res.trace.rows_probability.shape == (1, 200)


def test_the_default_fit_stops_by_the_rows_rule_and_does_not_warn():
    """The README's example: kDB-2 on credit-a with the defaults (HDP, adaptive sampler)."""
    X, y = load_dataset("credit-a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnconvergedWarning)
        clf = BayesNetClassifier(structure="kdb", k=2, random_state=0).fit(X, y)
    assert clf.estimation == "hdp" and clf.sampler == "adaptive"
    for r in clf.hdp_results_:
        assert r.stop_reason == "tolerance" and r.rows_mcse <= 0.01
    assert clf.diagnostics_.converged


def test_the_warning_names_the_trees_and_an_option_that_fixes_them():
    X, y = load_dataset("credit-a")
    options = HDPOptions.preset("adaptive", mcse_tolerance=0.0003, min_iter=200, max_iter=200)
    with pytest.warns(UnconvergedWarning) as caught:
        clf = BayesNetClassifier(structure="nb", random_state=0, sampler=options).fit(X, y)
    message = str(caught[0].message)
    assert "P(" in message and "(now 200)" in message
    assert "sampler=clf.hdp_options().replace(max_iter=" in message
    assert caught[0].filename == __file__  # pointed at the caller, not at fastpath
    # the advice, followed, certifies the fit
    import re

    suggested = int(re.search(r"max_iter=(\d+)", message).group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnconvergedWarning)
        clf.set_params(sampler=clf.hdp_options().replace(max_iter=suggested)).fit(X, y)
    assert clf.diagnostics_.converged


def test_unconverged_warning_is_public_and_a_scikit_learn_convergence_warning():
    from sklearn.exceptions import ConvergenceWarning

    import fastpath

    assert fastpath.UnconvergedWarning is UnconvergedWarning
    assert issubclass(UnconvergedWarning, ConvergenceWarning)
