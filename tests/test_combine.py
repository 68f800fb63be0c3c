"""fastpath.predict._combine: the members' joint log likelihoods -> the classifier's posterior.

With ``E`` members, ``P(y | x) = (1/E) sum_e softmax_y(log P_e(y, x) + log w_y)``; its log is
taken from the joints, so it stays finite where a posterior underflows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import softmax

from fastpath import BayesNetClassifier
from fastpath.encode._encoder import code_members, members_layout
from fastpath.predict._combine import log_mean_posterior, members_log_posterior, members_posterior
from fastpath.predict._inference import (
    members_posterior_mean,
    pack_members,
    packed_joint_log_likelihood,
    posterior_from_joint,
)

joints = hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(2, 4)),
                    elements=st.floats(-60, 0))


@settings(max_examples=40, deadline=None)
@given(joints, st.booleans())
def test_log_posterior_is_the_log_of_the_members_mean(joint, shifted):
    shift = np.linspace(-1.0, 0.5, joint.shape[2]) if shifted else None
    moved = joint if shift is None else joint + shift
    mean = softmax(moved, axis=2).mean(axis=0)
    np.testing.assert_allclose(members_log_posterior(joint, shift), np.log(mean), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(log_mean_posterior(np.log(softmax(moved, axis=2))), np.log(mean),
                               rtol=1e-10, atol=1e-12)


def test_log_posterior_stays_finite_where_a_posterior_underflows():
    joint = np.array([[[0.0, -900.0]], [[-900.0, 0.0]]])
    assert softmax(joint[0], axis=1)[0, 1] == 0.0  # exp(-900) underflows float64
    np.testing.assert_allclose(members_log_posterior(joint), [[np.log(0.5)] * 2], rtol=1e-12)
    np.testing.assert_allclose(members_log_posterior(joint[:1])[0], [0.0, -900.0], atol=1e-12)


def test_members_posterior_is_the_mean_of_the_packed_members_posteriors():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"a{j}": rng.choice(list("xyz"), 300) for j in range(4)})
    y = np.where((X["a0"] == "x") ^ (X["a1"] == "y"), "p", "n")
    fits = [BayesNetClassifier(structure, k=1, m=1.0).fit(X, y) for structure in ("nb", "kdb")]
    encoders = [f.encoder_ for f in fits]
    codes, columns = code_members(encoders, X, members_layout(encoders))
    shift = np.log([0.25, 0.75])
    for models in ([fits[0]], fits):
        members = [f.members_[0] for f in models]
        packed = pack_members([m.probability_tables[0][0] for m in members],
                              [m.tree_specs[1:] for m in members],
                              [m.trees[1:] for m in members],
                              [m.probability_tables[1:] for m in members])
        joint = packed_joint_log_likelihood(packed, codes, columns[:len(models)])
        for s in (None, shift):
            got = members_posterior(packed, codes, columns[:len(models)], s)
            moved = joint if s is None else joint + s
            # one member: its own posterior; several: their mean, as the fused kernel adds it
            want = (posterior_from_joint(moved[0]) if len(models) == 1
                    else members_posterior_mean(moved))
            np.testing.assert_array_equal(got, want)  # the same numbers, bit for bit
