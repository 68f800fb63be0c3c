"""Probability tables -> class posteriors: tables packed for look-up, joint log likelihoods."""

from ._inference import PackedMembers, joint_log_likelihood, pack_model, posterior_from_joint

__all__ = ["PackedMembers", "joint_log_likelihood", "pack_model", "posterior_from_joint"]
