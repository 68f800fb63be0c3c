"""The members' joint log likelihoods -> the classifier's posterior: how members combine.

A classifier of ``E`` members predicts the mean of their posteriors,

    P(y | x) = (1/E) sum_e P_e(y | x),    P_e(y | x) = P_e(y, x) / sum_c P_e(c, x),

each member's joint ``log P_e(y, x)`` first shifted by ``log w_y`` when classes are weighted
(``class_weight``: the class prior times ``w``, renormalised). One member's is its own
posterior. The log of the mean is taken from the joints (log-sum-exp), so that it stays finite
where a posterior underflows. The joints come from :mod:`fastpath.predict._inference`; the
prediction plan that holds the packed members is the pipeline's
(:func:`fastpath.pipeline._members.prediction_plan`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ._inference import (
    PackedMembers,
    members_proba_of_codes,
    packed_joint_log_likelihood,
    posterior_from_joint,
)


def members_posterior(packed: PackedMembers, codes: np.ndarray, columns: np.ndarray,
                      class_shift: np.ndarray | None = None) -> np.ndarray:
    """The mean of the packed members' posteriors ``P(y | x)`` of the coded rows (one
    member: its posterior), shape (n_rows, n_classes); ``codes`` and ``columns`` as
    :func:`~fastpath.encode._encoder.code_members` returns them, ``class_shift`` ``log w`` of
    each class (``None``: no weights)."""
    if packed.tree_ptr.size - 1 == 1:
        joint = packed_joint_log_likelihood(packed, codes, columns)[0]
        return posterior_from_joint(joint if class_shift is None else joint + class_shift)
    # normalised and added in the members' order row by row, as the mean always was, a block
    # of rows at a time (members_posterior_mean of the whole joint, without it in memory)
    return members_proba_of_codes(packed, codes, columns, class_shift)


def members_log_posterior(joint: np.ndarray, class_shift: np.ndarray | None = None
                          ) -> np.ndarray:
    """log of :func:`members_posterior` from the members' joint log likelihoods ``joint``
    (n_members, n_rows, n_classes), finite where a posterior underflows."""
    if class_shift is not None:
        joint = joint + class_shift
    with np.errstate(invalid="ignore"):
        logs = joint - logsumexp(joint, axis=2, keepdims=True)
    if len(logs) == 1:
        return logs[0]
    return log_mean_posterior(logs)


def log_mean_posterior(log_posteriors: np.ndarray) -> np.ndarray:
    """``log((1/E) sum_e P_e(y | x))`` from the members' log posteriors, shape
    (E, n_rows, n_classes) -> (n_rows, n_classes)."""
    return logsumexp(log_posteriors, axis=0) - np.log(len(log_posteriors))
