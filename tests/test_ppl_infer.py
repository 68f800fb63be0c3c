"""NUTS on the model: the worked example against exact integration, layout, diagnostics, CLI.

No test here switches double precision on: fit must run in it by itself.
"""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("numpyro")
pytest.importorskip("arviz")
# one worker computes the module's NUTS fit (ds1_fit) for all its tests (tests/test_xdist_groups.py)
pytestmark = [pytest.mark.ppl, pytest.mark.xdist_group("ppl-infer")]

import jax  # noqa: E402

from hdpbn_ppl import suite  # noqa: E402
from hdpbn_ppl.infer import NUTSDiagnostics, PPLResult, fit  # noqa: E402
from hdpbn_ppl.worked_example import (  # noqa: E402
    DATASETS,
    exact_posterior,
    table_posterior,
    worked_example_tree,
)


# ----------------------------------------------------------------------------- exact values
@pytest.mark.parametrize("name, p_y0, p_y1", [("DS1", 0.856583, 0.793035),
                                               ("DS2", 0.794207, 0.341216)])
def test_worked_example_exact_values_by_two_independent_integrations(name, p_y0, p_y1):
    quad = exact_posterior(DATASETS[name])
    tables = table_posterior(DATASETS[name])
    np.testing.assert_allclose(quad.theta, tables.theta, atol=1e-9)
    np.testing.assert_allclose(quad.phi, tables.phi, atol=1e-9)
    assert quad.alpha == pytest.approx(tables.alpha, abs=1e-8)
    assert quad.theta[:, 0] == pytest.approx([p_y0, p_y1], abs=1e-6)
    assert quad.error < 1e-8


def test_reference_root_shortcut_explains_the_java_numbers():
    """The Java code fixes the root's table counts at min(1, n); the exact posterior of that
    shortcut is 0.8756 / 0.8359, the values the code reports (0.8753 / 0.8357 over 20 seeds)."""
    ds1 = table_posterior(DATASETS["DS1"], root="reference")
    ds2 = table_posterior(DATASETS["DS2"], root="reference")
    assert ds1.theta[0, 0] == pytest.approx(0.875592, abs=1e-6)
    assert ds2.theta[0, 0] == pytest.approx(0.835913, abs=1e-6)


# ----------------------------------------------------------------------------- NUTS
@pytest.fixture(scope="module")
def ds1_fit() -> PPLResult:
    before = jax.config.jax_enable_x64
    res = fit(worked_example_tree("DS1"), n_chains=4, burn_in=500, samples=1000, seed=2)
    assert jax.config.jax_enable_x64 == before  # the run's double precision was scoped
    return res


def test_fit_runs_in_double_precision(ds1_fit):
    post = ds1_fit.datatree["posterior"].to_dataset()
    assert post["p"].dtype == post["alpha"].dtype == np.float64
    assert ds1_fit.probabilities.dtype == ds1_fit.mcse.dtype == np.float64
    assert isinstance(ds1_fit.diagnostics, NUTSDiagnostics)


def test_nuts_matches_quadrature_within_3_mcse(ds1_fit):
    exact = exact_posterior(DATASETS["DS1"])
    res = ds1_fit
    assert res.diagnostics.trustworthy, res.diagnostics.summary()
    z_theta = (res.probabilities[1:] - exact.theta) / res.mcse[1:]
    z_phi = (res.probabilities[0] - exact.phi) / res.mcse[0]
    z_alpha = (res.concentration_mean[0] - exact.alpha) / res.concentration_mcse[0]
    assert np.all(np.abs(z_theta) < 3), z_theta
    assert np.all(np.abs(z_phi) < 3), z_phi
    assert abs(z_alpha) < 3, z_alpha


def test_result_layout_matches_fastpath(ds1_fit):
    res = ds1_fit
    tree = res.tree
    assert res.probabilities.shape == (tree.n_nodes, tree.n_values) == res.mcse.shape
    np.testing.assert_allclose(res.probabilities.sum(axis=1), 1.0)
    assert res.groups.tolist() == [-1, 0, 0]
    assert res.concentration_mean.shape == (1,) == res.concentration_mcse.shape
    assert np.all(res.mcse > 0)
    np.testing.assert_array_equal(res.query([[1]]), res.probabilities[[2]])


def test_datatree_has_posterior_and_sample_stats(ds1_fit):
    dt = ds1_fit.datatree
    post = dt["posterior"].to_dataset()
    stats = dt["sample_stats"].to_dataset()
    assert post["p"].shape == (4, 1000, 3, 2)
    assert post["alpha"].shape == (4, 1000, 1)
    for name in ("diverging", "energy", "lp", "tree_depth", "n_steps", "acceptance_rate",
                 "step_size"):
        assert stats[name].shape == (4, 1000)
    d = ds1_fit.diagnostics
    assert d.n_draws == 4000 and d.divergences == int(stats["diverging"].sum())
    assert set(d.as_dict()) >= {"divergences", "max_rhat", "min_ess_bulk", "min_ess_tail",
                                "min_bfmi", "seconds", "trustworthy"}


def test_untrustworthy_run_is_flagged_loudly():
    from hdpbn_ppl.infer import UntrustworthyRunWarning

    # a single chain cannot be checked by R-hat: the run must say so
    with pytest.warns(UntrustworthyRunWarning):
        res = fit(worked_example_tree("DS2"), n_chains=1, burn_in=50, samples=50, seed=0)
    assert not res.diagnostics.trustworthy
    assert any("R-hat" in p for p in res.diagnostics.problems)


# a NUTS run through the command line (about 15 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
# ----------------------------------------------------------------------------- command line
def test_cli_estimate_writes_fastpath_columns_and_json(tmp_path, capsys):
    from hdpbn_ppl.cli import main

    # a depth-2 table in the child-first convention, drawn from the model
    tree = suite.model_tree((2, 3), 3, 300, seed=5, alpha=(2.0, 1.5), alpha0=3.0)
    rows = []
    for path, counts in zip(tree.paths()[tree.leaves], tree.counts[tree.leaves], strict=True):
        for k, c in enumerate(counts):
            rows += [(k, int(path[0]), int(path[1]))] * int(c)
    data = tmp_path / "table.csv"
    pd.DataFrame(rows, columns=["child", "y", "x1"]).to_csv(data, index=False)
    out = tmp_path / "nodes.csv"
    status = main(["estimate", str(data), "--chains", "2", "--burn-in", "300", "--samples",
                   "300", "--seed", "1", "--out", str(out), "--json",
                   "--chain-method", "sequential"])
    report = json.loads(capsys.readouterr().out)
    assert {"divergences", "max_rhat", "min_ess_bulk", "min_ess_tail", "seconds"} <= set(report)
    assert status in (0, 3)
    table = pd.read_csv(out)
    values = sorted(set(k for k, *_ in rows))
    expected = ["depth", "y", "x1", "n"] + [f"p_{v}" for v in values] + [
        f"mcse_{v}" for v in values]
    assert list(table.columns) == expected
    assert len(table) == tree.n_nodes
    np.testing.assert_allclose(table[[f"p_{v}" for v in values]].sum(axis=1), 1.0)
