"""Simulation-based calibration of fastpath (validation.sbc): the quick CI run and its pieces.

* the quick SBC (>= 200 replications of a tiny tree): ranks of the concentration, root and leaf
  probabilities are uniform for the exact update (chi-square, Bonferroni), and a negative
  control -- fitting with a wrong concentration prior -- is rejected, so the test has power;
* the chi-square statistic against a direct computation; cases are reproducible from their seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from validation import sbc

# one worker runs the quick SBC (the module fixture) for all the tests that read it
pytestmark = pytest.mark.xdist_group("sbc-quick")


@pytest.fixture(scope="module")
def quick():
    return {c.name: sbc.run_sbc(c) for c in sbc.QUICK_CASES}


@pytest.mark.parametrize("name", ["tiny_exact", "tiny_overrelaxed"])
def test_quick_sbc_exact_is_uniform(quick, name):
    res = quick[name]
    assert res.case.replications >= 200
    assert res.n_tests == 6  # alpha, two root values, three leaves
    assert res.passed, res.summary_line()
    for ranks in res.ranks.values():
        assert ranks.shape == (res.case.replications,)
        assert ranks.min() >= 0 and ranks.max() <= res.case.n_draws
    # draws are thinned to near independence, else the histograms would be U-shaped
    assert res.ess_ratio > 0.6


def test_quick_sbc_negative_control_fails(quick):
    res = quick["tiny_wrong_prior"]
    assert res.case.expect_fail
    assert not res.passed
    assert res.pvalues["alpha[0]"] < 1e-6


def test_rank_pvalue_is_the_chi_square():
    rng = np.random.default_rng(0)
    ranks = rng.integers(0, 100, size=400)
    counts = np.bincount(ranks // 10, minlength=10)
    expected = stats.chi2.sf(((counts - 40.0) ** 2 / 40.0).sum(), df=9)
    assert sbc.rank_pvalue(ranks, 99, 10) == pytest.approx(expected, rel=1e-9)
    assert sbc.rank_pvalue(np.zeros(400, dtype=int), 99, 10) < 1e-100
    with pytest.raises(ValueError, match="must divide"):
        sbc.rank_pvalue(ranks, 99, 7)


def test_cases_reproduce_and_validate():
    case = sbc.QUICK_CASES[0].replace(replications=20)
    a, b = sbc.run_sbc(case), sbc.run_sbc(case, n_threads=1)
    for k in a.ranks:
        assert np.array_equal(a.ranks[k], b.ranks[k])
    with pytest.raises(ValueError, match="leaf_rows needs"):
        sbc.skeleton(case.replace(leaf_rows=(1, 2)))
    with pytest.raises(ValueError, match="at least one row"):
        sbc.skeleton(case.replace(leaf_rows=(0, 2, 3)))
    assert {c.name for c in sbc.FULL_CASES} >= {"tiny_exact", "tiny_window", "wide_exact",
                                                "wide_window", "wide_overrelaxed"}
    assert sbc.QUICK_CASES[1].fit_options == {"overrelax": True}
