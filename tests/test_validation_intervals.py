"""The credible intervals' coverage study (validation/intervals.py): the quick study covers
the true P(y | x) at its nominal rate within Monte-Carlo error, a wrong prior in the fit
(concentrations fixed far too high) makes it fail, and the drawn networks are what the module
says (tables normalised, exact posteriors)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from validation import intervals as iv


def test_quick_study_covers_at_the_nominal_rate():
    rows = iv.run_study(iv.QUICK)
    summary = iv.summarise(rows, iv.QUICK.nominal)
    assert len(rows) == iv.QUICK.networks
    assert iv.QUICK.nominal == pytest.approx(0.9)
    assert abs(summary["z"].iloc[0]) <= 3, summary
    assert "| nb | 40 | given |" in iv.report_markdown(summary, iv.QUICK.nominal)


def test_a_wrong_prior_fails_the_coverage():
    wrong = dataclasses.replace(iv.QUICK, fit_options=(("fix_concentrations", True),
                                                       ("concentration_init", 2000.0)))
    summary = iv.summarise(iv.run_study(wrong), wrong.nominal)
    assert summary["z"].iloc[0] < -3, summary


def test_networks_and_their_exact_posterior():
    rng = np.random.default_rng(0)
    net = iv.draw_network("kdb1", 5, rng)
    assert all(len(p) <= 1 and all(q < j for q in p) for j, p in enumerate(net.parents))
    for table, card in zip(net.tables, net.cards, strict=True):
        assert table.shape[-1] == card and table.shape[0] == 2
        np.testing.assert_allclose(table.sum(axis=-1), 1.0)
    codes, y = iv.sample_rows(net, 20000, rng)
    # the exact posterior by enumeration of the joint, for a few rows
    for row in codes[:5]:
        joint = net.class_prior.copy()
        for j, table in enumerate(net.tables):
            pa = row[net.parents[j][0]] if net.parents[j] else 0
            joint *= table[:, pa, row[j]]
        assert iv.true_posterior(net, row[None])[0] == pytest.approx(joint[1] / joint.sum())
    # the rows follow the network: the class frequency is its prior's
    assert y.mean() == pytest.approx(net.class_prior[1], abs=4 * 0.5 / np.sqrt(len(y)))
    with pytest.raises(ValueError, match="kind"):
        iv.draw_network("tan", 3, rng)
