"""fastpath against NUTS (validation.agreement): the statistics, and the quick CI agreement run.

* ``expected_max_abs_z`` against closed forms (m = 1) and a Monte-Carlo simulation;
* ``z_scores`` at its edges;
* the quick agreement (``python -m validation agreement --quick``): on each CI tree fastpath's
  exact sampler and NUTS agree (max |z| <= 4, R-hat <= 1.01 on both sides, no divergences), and
  the comparison has power: fastpath with the reference code's root shortcut (a different
  model) is rejected against the same NUTS run;
* report, plot and JSON round trip of the results.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fastpath.estimate import effective_sample_size
from hdpbn_ppl import suite
from validation import agreement as ag

# the quick agreement runs NUTS (its shared fixture alone takes about 45 s): outside make test
# (10 minutes on 2 cores); make study and python -m validation run it
pytestmark = pytest.mark.study


def test_expected_max_abs_z_closed_forms_and_simulation():
    mean, q99 = ag.expected_max_abs_z(1)
    assert mean == pytest.approx(math.sqrt(2 / math.pi), rel=1e-6)  # E|z|
    assert q99 == pytest.approx(2.5758293, rel=1e-6)
    z = np.abs(np.random.default_rng(0).standard_normal((20_000, 50))).max(axis=1)
    mean, q99 = ag.expected_max_abs_z(50)
    assert mean == pytest.approx(z.mean(), abs=0.01)
    assert q99 == pytest.approx(np.quantile(z, 0.99), abs=0.05)
    assert ag.expected_max_abs_z(1000)[0] > ag.expected_max_abs_z(100)[0]


def test_z_scores_edges():
    z = ag.z_scores([1.0, 1.0, 2.0, 0.5], [0.0, 0.0, 0.0, 0.3], [1.0, 0.0, 1.0, 0.1],
                    [0.0, 0.0, 0.0, 0.4])
    assert z[0] == 0.0 and z[1] == np.inf and z[2] == np.inf
    assert z[3] == pytest.approx(0.4 / 0.5)


def test_bulk_ess_is_fastpath_ess_of_each_varying_quantity():
    x = np.random.default_rng(0).standard_normal((4, 300, 2, 2))
    x[:, :, 0, 1] = 0.5  # constant: left out
    flat = x.reshape(4, 300, 4)
    expected = [effective_sample_size(flat[:, :, i]) for i in (0, 2, 3)]
    np.testing.assert_array_equal(ag.bulk_ess(x), expected)
    assert ag.bulk_ess(np.ones((2, 50, 3))).shape == (0,)


def test_khat_sees_a_heavy_tail_beside_a_point_mass():
    rng = np.random.default_rng(0)
    heavy = np.where(rng.random((4, 1000)) < 0.3, rng.pareto(1.0, (4, 1000)), 0.0)  # k = 1
    discrete = rng.integers(0, 3, (4, 1000)).astype(float)  # three values: no tail at all
    smooth = rng.standard_normal((4, 1000))
    # 40 positive draws of 4,000, spread over 25 orders of magnitude: fewer than a tail holds
    rare = np.zeros((4, 1000))
    rare[rng.integers(0, 4, 40), rng.integers(0, 1000, 40)] = 10.0 ** -rng.uniform(3, 28, 40)
    k = ag._khat(np.stack([heavy, discrete, smooth, rare], axis=-1))
    assert k[0] > 0.7  # the right tail, although the left one is all zeros
    assert np.isnan(k[1]) or k[1] <= 0.7
    assert k[2] < 0.5
    assert k[3] == np.inf


def _summary(khat):
    khat = np.asarray(khat, float).reshape(1, -1)
    return ag.SamplerSummary(
        probabilities=np.full_like(khat, 0.5), mcse=np.full_like(khat, 0.01),
        concentration_mean=np.ones(1), concentration_mcse=np.full(1, 0.01), max_rhat=1.0,
        min_ess_conc=1000.0, median_ess_leaf=1000.0, seconds=1.0, khat_prob=khat,
        khat_conc=np.zeros(1))


def test_reliable_excludes_heavy_tails_on_either_side():
    fast = _summary([0.1, 0.9, 0.1, np.nan])
    nuts = _summary([0.2, 0.1, 0.8, np.nan])
    r = ag.TreeAgreement(name="t", source="model", tying="level", seed=0, config="quick",
                         shape={}, fast=fast, nuts=nuts, z_prob=np.array([[1.0, 9.0, 7.0, 0.5]]),
                         z_conc=np.zeros(1))
    assert r.reliable.tolist() == [True, False, False, True, True]
    assert r.n_unreliable == 2 and r.max_abs_z == 1.0 and r.max_abs_z_unreliable == 9.0


# ---------------------------------------------------------------------------- quick run (NUTS)
@pytest.fixture(scope="module")
def quick_results():
    pytest.importorskip("numpyro")
    return ag.run_agreement(suite.quick_names(), ag.QUICK, log=lambda *a: None)


@pytest.mark.slow
@pytest.mark.ppl
@pytest.mark.xdist_group("nuts-agreement")
def test_quick_agreement_passes(quick_results):
    assert [r.name for r in quick_results] == suite.quick_names()
    for r in quick_results:
        assert r.checks == {"max|z|<=4": True, "rhat_fast<=1.01": True,
                            "rhat_nuts<=1.01": True, "no_divergences": True}, r.name
        # every node probability and every concentration was compared
        assert r.z_prob.shape == (r.shape["nodes"], r.shape["K"])
        assert r.z_conc.size >= 1 and np.all(np.isfinite(r.z_prob))
        assert r.nuts.extra["trustworthy"]
        # Pareto k-hat computed for every comparison on both sides; these small trees have
        # well-behaved tails, so every comparison counts towards the pass rule
        for side in (r.fast, r.nuts):
            assert side.khat_prob.shape == r.z_prob.shape
            assert side.khat_conc.shape == r.z_conc.shape
        assert r.n_unreliable == 0


@pytest.mark.slow
@pytest.mark.ppl
@pytest.mark.xdist_group("nuts-agreement")
def test_quick_agreement_detects_the_reference_root(quick_results):
    # the reference code's root shortcut is a different model: the same comparison rejects it
    r = quick_results[0]
    entry = suite.get(r.name)
    ref = ag.run_fastpath(entry.build(), entry.tying, ag.QUICK, entry.seed, root="reference")
    z = ag.z_scores(ref.probabilities, ref.mcse, r.nuts.probabilities, r.nuts.mcse)
    assert np.max(np.abs(z)) > 4


@pytest.mark.slow
@pytest.mark.ppl
@pytest.mark.xdist_group("nuts-agreement")
def test_overrelaxed_fastpath_agrees_with_the_stored_nuts_runs(quick_results, tmp_path):
    # --nuts-from: the quick NUTS runs, stored, are the ground truth for the overrelaxed sampler
    for r in quick_results:
        (tmp_path / f"{r.name}.json").write_text(json.dumps(r.to_json()))
    cfg = ag.AgreementConfig(**{**ag.QUICK.__dict__, "overrelax": True})
    names = suite.quick_names()
    over = ag.run_agreement(names, cfg, tmp_path / "over", nuts_from=tmp_path,
                            log=lambda *a: None)
    for r, plain in zip(over, quick_results, strict=True):
        assert r.fast.extra["overrelax"] is True
        assert np.array_equal(r.nuts.probabilities, plain.nuts.probabilities)
        assert not np.array_equal(r.fast.probabilities, plain.fast.probabilities)
        assert r.checks == {"max|z|<=4": True, "rhat_fast<=1.01": True,
                            "rhat_nuts<=1.01": True, "no_divergences": True}, r.name
    with pytest.raises(ValueError, match="configuration 'quick', not 'full'"):
        ag.stored_nuts(tmp_path, names[0], ag.FULL)
    with pytest.raises(FileNotFoundError, match="no stored result"):
        ag.stored_nuts(tmp_path, "m_d5_k6_mixed", ag.QUICK)


@pytest.mark.slow
@pytest.mark.ppl
@pytest.mark.xdist_group("nuts-agreement")
def test_report_plot_and_json(quick_results, tmp_path):
    text = ag.report_markdown(quick_results)
    assert f"**{len(quick_results)} of {len(quick_results)} trees pass**" in text
    for r in quick_results:
        assert f"| {r.name} |" in text
    assert "Median ratio over trees" in text
    ag.plot_z(quick_results, tmp_path / "z.png")
    assert (tmp_path / "z.png").stat().st_size > 1000
    back = ag.TreeAgreement.from_json(json.loads(json.dumps(quick_results[0].to_json())))
    assert back.max_abs_z == quick_results[0].max_abs_z
    assert back.checks == quick_results[0].checks
    assert np.array_equal(back.fast.probabilities, quick_results[0].fast.probabilities)


def test_nuts_from_checks_the_stored_runs_first(tmp_path, capsys):
    from validation.__main__ import main

    assert main(["agreement", "--quick", "--trees", "m_d1_k2_n10", "--nuts-from",
                 str(tmp_path)]) == 2
    assert "no stored result for tree 'm_d1_k2_n10'" in capsys.readouterr().err
    assert main(["agreement", "--quick", "--nuts-from", str(tmp_path / "missing")]) == 2
    assert "--nuts-from" in capsys.readouterr().err
