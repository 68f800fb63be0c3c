"""The estimator (:class:`BayesNetClassifier`) and its model files (:mod:`.model_io`)."""

from .estimator import STRUCTURES, BayesNetClassifier, NotFittedError

__all__ = ["STRUCTURES", "BayesNetClassifier", "NotFittedError"]
